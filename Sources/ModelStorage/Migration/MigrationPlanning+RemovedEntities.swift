import ModelCore

/// What removing an entity does to the objects that stay: the references they hold to its
/// objects are cleared (as a nullify rule would clear them), which the plan says, and which it
/// refuses where the new schema requires the relationship (a required to-one, a to-many with a
/// minimum) and objects would be left breaking it.
extension MigrationPlanning {
    /// A relationship the store keeps, declared by an entity it keeps, whose destination's
    /// hierarchy holds removed entities.
    struct ReferenceIntoRemoved {
        /// The declaring entity's old name, and its new one.
        let entity: String
        let keptAs: String
        /// The relationship in the old schema, and in the new one.
        let relationship: ResolvedRelationship
        let after: ResolvedRelationship
        /// The removed entities its objects may be of.
        let lost: [String]
    }

    /// How many of the removed objects' identifiers a to-one's referrers are looked up by at once.
    static var referencePage: Int { 500 }

    /// Every relationship of a kept entity that may point at objects of a removed one.
    func referencesIntoRemoved(_ changes: SchemaChanges) -> [ReferenceIntoRemoved] {
        let removed = Set(changes.removedEntities)
        guard !removed.isEmpty else { return [] }
        var found: [ReferenceIntoRemoved] = []
        for kept in changes.entities {
            guard let entity = old[kept.oldName] else { continue }
            for relationship in entity.relationships where relationship.declaringEntity == entity.name {
                let lost = old[relationship.destination]?.descendants.filter(removed.contains) ?? []
                guard !lost.isEmpty, let after = new[kept.name]?.relationship(relationship.name) else { continue }
                found.append(
                    .init(entity: entity.name, keptAs: kept.name, relationship: relationship, after: after, lost: lost))
            }
        }
        return found
    }

    /// The step removing `name`, saying which references to its objects are cleared.
    mutating func planRemoval(of name: String, references: [ReferenceIntoRemoved]) throws {
        let objects = try count(name, exactly: true)
        var detail = "remove entity \(name)" + (objects > 0 ? ": its objects are deleted" : "")
        if objects > 0 {
            var cleared: [String] = []
            for reference in references where reference.lost.contains(name) {
                let holding = try referrers(reference, pointingAt: [name], where: nil).count
                if holding > 0 {
                    cleared.append("\(reference.keptAs).\(reference.relationship.name) (\(holding) object(s))")
                }
            }
            if !cleared.isEmpty { detail += ", and references to them cleared in " + cleared.joined(separator: ", ") }
        }
        add(.removeEntity, name, detail, objects: objects, losesData: objects > 0)
    }

    /// Refuses the removals that would leave objects without what the new schema requires of
    /// a relationship.
    mutating func checkRequiredReferences(_ references: [ReferenceIntoRemoved]) throws {
        for reference in references {
            let name = reference.relationship.name, after = reference.after
            var remaining: Predicate?
            if after.isToMany {
                guard let minimum = after.minCount, minimum > 0 else { continue }
                remaining = .comparison(
                    Comparison(
                        .subqueryCount(
                            collection: PropertyPath([name]), variable: "t",
                            predicate: .not(Self.entity(in: reference.lost, variable: "t"))),
                        .less, .literal(.int(Int64(minimum)))))
            } else if after.isOptional {
                continue
            }
            let (count, named) = try referrers(reference, pointingAt: reference.lost, where: remaining)
            guard count > 0 else { continue }
            let requirement = after.isToMany ? "needs at least \(after.minCount ?? 0) related object(s)" : "is required"
            refuse(
                "\(reference.keptAs).\(name) \(requirement), and \(count) object(s) would lose what they hold there with the objects of \(reference.lost.joined(separator: ", ")) (\(named.joined(separator: ", "))): point them elsewhere or delete them first"
            )
        }
    }

    /// The objects of the reference's entity that point at objects of `lost` and match
    /// `condition`: how many, and a few by URI.
    func referrers(_ reference: ReferenceIntoRemoved, pointingAt lost: [String], where condition: Predicate?) throws
        -> (count: Int, named: [String])
    {
        let name = reference.relationship.name
        if reference.relationship.isToMany {
            let pointing = Predicate.comparison(
                Comparison(
                    .subqueryCount(
                        collection: PropertyPath([name]), variable: "t",
                        predicate: Self.entity(in: lost, variable: "t")),
                    .greater, .literal(.int(0))))
            return try countAndName(reference.entity, .all([pointing] + (condition.map { [$0] } ?? [])))
        }
        // A to-one's object cannot be asked its entity in a predicate: the removed objects are
        // looked up a page at a time, and their referrers counted by identifier.
        var total = 0, named: [String] = [], offset = 0
        while true {
            let page = FetchDescriptor(
                entityName: reference.relationship.destination, predicate: Self.entity(in: lost, variable: nil),
                offset: offset, limit: Self.referencePage, resultType: .identifiers)
            let ids = try reads.fetch(try page.validated(in: old)).identifiers
            guard !ids.isEmpty else { break }
            let pointing = Predicate.comparison(
                Comparison(.keyPath(PropertyPath([name])), .in, .list(ids.map(Expression.object))))
            let found = try countAndName(reference.entity, .all([pointing] + (condition.map { [$0] } ?? [])))
            total += found.count
            named += found.named.prefix(max(0, MigrationPlanner.namedObjects - named.count))
            guard ids.count == Self.referencePage else { break }
            offset += ids.count
        }
        return (total, named)
    }

    private func countAndName(_ entity: String, _ predicate: Predicate) throws -> (count: Int, named: [String]) {
        let count = try reads.count(entity, matching: predicate, in: old)
        guard count > 0 else { return (0, []) }
        return (count, try reads.uris(entity, matching: predicate, limit: MigrationPlanner.namedObjects, in: old))
    }

    /// `@entity IN {…}` (or `$variable.@entity IN {…}`).
    static func entity(in names: [String], variable: String?) -> Predicate {
        .comparison(
            Comparison(.entityName(variable: variable), .in, .list(names.map { .literal(.string($0)) })))
    }
}
