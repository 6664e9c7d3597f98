import ModelCore

/// Evaluates typed predicates (``FetchDescriptor/validated(in:storeIdentifier:)`` types them)
/// over the objects of a ``StoreReader``, with the two-valued logic of docs/storage-semantics.md:
/// every comparison is true or false, a comparison with nil is false except `==`/`!=`, and
/// `NOT p` is true exactly when `p` is false. Every comparison goes through `Value.compare` and
/// ``TextComparison``, the order SQLite uses too.
///
/// Not Sendable: it caches resolved key paths for the duration of one request.
struct PredicateEvaluator {
    let reader: StoreReader
    /// The entity that key paths without a variable start at (the fetched entity).
    let entity: ResolvedEntity
    private let cache = PathCache()

    init(reader: StoreReader, entity: ResolvedEntity) {
        self.reader = reader
        self.entity = entity
    }

    /// Where key paths are evaluated: the object, and the objects SUBQUERY variables are bound to.
    struct Scope {
        var object: ObjectRef
        var variables: [String: (object: ObjectRef, entity: ResolvedEntity)] = [:]
    }

    /// Whether `predicate` holds for the object `ref`.
    func matches(_ predicate: ModelCore.Predicate?, _ ref: ObjectRef) throws(ModelError) -> Bool {
        guard let predicate else { return true }
        return try holds(predicate, in: Scope(object: ref))
    }

    func holds(_ predicate: ModelCore.Predicate, in scope: Scope) throws(ModelError) -> Bool {
        switch predicate {
        case .constant(let value):
            return value
        case .and(let parts):
            for part in parts {
                if try !holds(part, in: scope) { return false }
            }
            return true
        case .or(let parts):
            for part in parts {
                if try holds(part, in: scope) { return true }
            }
            return false
        case .not(let inner):
            return try !holds(inner, in: scope)
        case .comparison(let comparison):
            return try holds(comparison, in: scope)
        }
    }

    private func holds(_ c: Comparison, in scope: Scope) throws(ModelError) -> Bool {
        let lhs = try evaluate(c.lhs, in: scope)
        let rhs = try evaluate(c.rhs, in: scope)
        let elements: [Operand]
        if case .many(let items) = lhs { elements = items } else { elements = [lhs] }
        switch c.modifier {
        case .direct:
            return elements.count == 1 && Self.compare(elements[0], c.op, rhs, options: c.options)
        case .any:
            return elements.contains { Self.compare($0, c.op, rhs, options: c.options) }
        case .all:
            return elements.allSatisfy { Self.compare($0, c.op, rhs, options: c.options) }
        case .none:
            return !elements.contains { Self.compare($0, c.op, rhs, options: c.options) }
        }
    }

    /// Resolves `path` in `scope`, once per request.
    func resolve(_ path: PropertyPath, in scope: Scope) throws(ModelError) -> (path: ResolvedPath, start: ObjectRef) {
        let start: (object: ObjectRef, entity: ResolvedEntity)
        if let variable = path.variable {
            guard let bound = scope.variables[variable] else {
                throw ModelError(.invalidPredicate, "variable $\(variable) is not defined here",
                                 context: ["keyPath": path.description])
            }
            start = bound
        } else {
            start = (scope.object, entity)
        }
        let key = "\(start.entity.name)|\(path.components.joined(separator: "."))"
        if let cached = cache.paths[key] { return (cached, start.object) }
        let resolved = try reader.schema.resolve(PropertyPath(path.components), from: start.entity)
        cache.paths[key] = resolved
        return (resolved, start.object)
    }
}

/// Resolved key paths of one request, by start entity and path text.
final class PathCache {
    var paths: [String: ResolvedPath] = [:]
}
