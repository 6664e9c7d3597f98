import ModelCore

/// The data a migration plan is worked out from: queries against the store in its current
/// (old) schema, run by the backend inside the migration's transaction, so that what the plan
/// counted is what the migration changes.
public protocol MigrationReads {
    /// Runs a fetch validated against the old schema (objects, identifiers or a count).
    func fetch(_ descriptor: FetchDescriptor) throws -> FetchResult
    /// Runs an aggregate validated against the old schema.
    func aggregate(_ descriptor: AggregateDescriptor) throws -> [AggregateRow]
}

extension MigrationReads {
    /// How many objects of `entity` (with its subentities, unless `exactly`) match `predicate`.
    func count(_ entity: String, where predicate: String? = nil, exactly: Bool = false, in schema: ResolvedSchema)
        throws -> Int
    {
        try count(entity, matching: try predicate.map(PredicateParser.parse), exactly: exactly, in: schema)
    }

    /// ``count(_:where:exactly:in:)`` for a predicate already a tree.
    func count(_ entity: String, matching predicate: Predicate?, exactly: Bool = false, in schema: ResolvedSchema)
        throws -> Int
    {
        let descriptor = FetchDescriptor(
            entityName: entity, predicate: predicate, includesSubentities: !exactly, resultType: .count)
        guard case .count(let count) = try fetch(try descriptor.validated(in: schema)) else { return 0 }
        return count
    }

    /// Up to `limit` objects of `entity` that match `predicate`, by URI.
    func uris(_ entity: String, where predicate: String, limit: Int = 5, in schema: ResolvedSchema) throws -> [String] {
        try uris(entity, matching: try PredicateParser.parse(predicate), limit: limit, in: schema)
    }

    /// ``uris(_:where:limit:in:)`` for a predicate already a tree.
    func uris(_ entity: String, matching predicate: Predicate, limit: Int = 5, in schema: ResolvedSchema) throws
        -> [String]
    {
        let descriptor = FetchDescriptor(
            entityName: entity, predicate: predicate, sortBy: [], limit: limit, resultType: .identifiers)
        return try fetch(try descriptor.validated(in: schema)).identifiers.map(\.uriRepresentation)
    }
}
