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
        let descriptor = FetchDescriptor(
            entityName: entity, predicate: try predicate.map(PredicateParser.parse), includesSubentities: !exactly,
            resultType: .count)
        guard case .count(let count) = try fetch(try descriptor.validated(in: schema)) else { return 0 }
        return count
    }

    /// Up to `limit` objects of `entity` that match `predicate`, by URI.
    func uris(_ entity: String, where predicate: String, limit: Int = 5, in schema: ResolvedSchema) throws -> [String] {
        let descriptor = FetchDescriptor(
            entityName: entity, predicate: try PredicateParser.parse(predicate),
            sortBy: [], limit: limit, resultType: .identifiers)
        return try fetch(try descriptor.validated(in: schema)).identifiers.map(\.uriRepresentation)
    }
}
