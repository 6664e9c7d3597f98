/// An error from any layer of modeld: a code saying what class of failure it is, a message a
/// person can act on, and the context that locates it (entity, attribute, URI, column…).
///
/// The mapping from ``Code`` to gRPC status codes lives in one place, in the server.
public struct ModelError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The class of failure. Each maps to exactly one gRPC status code.
    public enum Code: String, Hashable, Sendable, Codable, CaseIterable {
        /// The request is malformed (bad name, bad value, bad descriptor). INVALID_ARGUMENT.
        case invalidArgument
        /// The request names an entity the schema does not have. INVALID_ARGUMENT.
        case unknownEntity
        /// The request names an attribute or relationship the entity does not have. INVALID_ARGUMENT.
        case unknownProperty
        /// A value has the wrong type for its attribute. INVALID_ARGUMENT.
        case typeMismatch
        /// Predicate text or a predicate tree that cannot be parsed or typed. INVALID_ARGUMENT.
        case invalidPredicate
        /// A malformed URI, or a URI of another store. INVALID_ARGUMENT.
        case invalidIdentifier
        /// The schema itself is invalid. INVALID_ARGUMENT.
        case invalidSchema
        /// Saving would break a rule of the schema: a required value missing, a relationship
        /// count out of bounds. INVALID_ARGUMENT.
        case validationFailed
        /// An object, store or session does not exist. NOT_FOUND.
        case notFound
        /// A unique constraint would be violated. ALREADY_EXISTS.
        case uniqueConstraint
        /// A deny delete rule blocks a delete. FAILED_PRECONDITION.
        case deleteDenied
        /// The store's schema differs from the one requested. FAILED_PRECONDITION.
        case schemaMismatch
        /// The store, context or session is closed. FAILED_PRECONDITION.
        case closed
        /// The store has open sessions that the request would pull the rug from under (dropping
        /// it, changing its schema). FAILED_PRECONDITION.
        case inUse
        /// History after the token asked for was deleted (SwiftData's expired history token):
        /// fetch what is needed again, then read history from the store's current token.
        /// FAILED_PRECONDITION.
        case historyTokenExpired
        /// An optimistic-concurrency conflict: what was read changed before the save. ABORTED.
        case conflict
        /// A limit was hit: disk full, too many sessions, too large a request. RESOURCE_EXHAUSTED.
        case resourceExhausted
        /// The storage engine failed in a way the client did not cause. INTERNAL.
        case storageFailure
        /// The daemon cannot be reached (not running, wrong socket) or is shutting down. UNAVAILABLE.
        case unavailable
        /// The call was cancelled before it finished. CANCELLED.
        case cancelled
        /// The call's deadline passed before it finished. DEADLINE_EXCEEDED.
        case deadlineExceeded
        /// The caller (its Unix user, as the kernel vouches for it) may not do this to the store:
        /// its owner or an administrator grants access. PERMISSION_DENIED.
        case permissionDenied
    }

    /// What class of failure this is.
    public var code: Code
    /// What went wrong and, where it helps, what to do about it.
    public var message: String
    /// Where it happened: keys such as `entity`, `attribute`, `uri`, `column`.
    public var context: [String: String]

    public init(_ code: Code, _ message: String, context: [String: String] = [:]) {
        self.code = code
        self.message = message
        self.context = context
    }

    public var description: String {
        guard !context.isEmpty else { return "\(code.rawValue): \(message)" }
        let details = context.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return "\(code.rawValue): \(message) [\(details.joined(separator: ", "))]"
    }
}

extension ModelError {
    /// An entity name that the schema does not define.
    public static func unknownEntity(_ name: String) -> ModelError {
        ModelError(
            .unknownEntity, "unknown entity '\(name)'; check the name against the store's schema",
            context: ["entity": name])
    }

    /// A property name that an entity does not define.
    public static func unknownProperty(_ name: String, entity: String) -> ModelError {
        ModelError(
            .unknownProperty, "entity '\(entity)' has no attribute or relationship named '\(name)'",
            context: ["entity": entity, "property": name])
    }

    /// An object that does not exist (any more).
    public static func objectNotFound(_ id: PersistentIdentifier) -> ModelError {
        ModelError(
            .notFound, "no object \(id.uriRepresentation) in this store; it may have been deleted",
            context: ["uri": id.uriRepresentation])
    }
}

extension ModelError {
    /// This error, said of change `index` (from 0) of a request of `count` changes: the message
    /// starts with "change N: " when there are several, and the context names the change.
    public func locating(change index: Int, of count: Int) -> ModelError {
        guard context["change"] == nil else { return self }
        let number = String(index + 1)
        return ModelError(
            code, count > 1 ? "change \(number): \(message)" : message,
            context: context.merging(["change": number]) { mine, _ in mine })
    }
}
