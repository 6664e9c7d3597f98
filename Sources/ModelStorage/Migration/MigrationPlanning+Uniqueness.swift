import ModelCore

/// Whether the stored objects would break a unique constraint of the new schema: one added by
/// the migration, or one whose attribute the migration makes required with a default (the
/// objects holding nil get the default, and may then hold the same values). Worked out in the
/// old schema, from what each of the constraint's attributes will hold.
extension MigrationPlanning {
    /// What one attribute of a unique constraint holds, after the migration, in the objects
    /// stored before it.
    enum ConstraintMember: Equatable {
        /// Its stored values, under this name in the old schema.
        case stored(String)
        /// Its stored values (this old name), those holding nil getting `default`.
        case filled(String, default: Value)
        /// The same value in every object: an attribute added with a default.
        case constant(Value)
        /// Nil in every object (an attribute added without a default, or a relationship added),
        /// and nil never collides, as in a save.
        case absent
    }

    /// How many colliding groups a refusal asks for, and names.
    static var groupsAsked: Int { 50 }
    static var groupsNamed: Int { 3 }

    mutating func checkUniqueness(of entity: SchemaChanges.EntityChanges) throws {
        guard let after = new[entity.name] else { return }
        let filled = Set(entity.requiredAttributes.filter { $0.defaultValue != nil }.map(\.name))
        for constraint in after.uniqueConstraints {
            let added = entity.addedUniqueConstraints.contains(constraint)
            guard added || constraint.contains(where: filled.contains) else { continue }
            guard let collisions = try collisions(of: constraint.map { member($0, of: entity) }, in: entity.oldName)
            else { continue }
            let names = constraint.joined(separator: ", ")
            if added {
                refuse(
                    "\(entity.name): existing objects violate the new unique constraint (\(names)): \(collisions); change or delete them first"
                )
            } else {
                let becoming = constraint.filter(filled.contains).joined(separator: ", ")
                refuse(
                    "\(entity.name): objects holding nil in \(becoming) would get its default and then break the unique constraint (\(names)): \(collisions); set their values first"
                )
            }
        }
    }

    /// What `name` (a property of `entity` in the new schema) holds after the migration.
    func member(_ name: String, of entity: SchemaChanges.EntityChanges) -> ConstraintMember {
        if let added = entity.addedAttributes.first(where: { $0.name == name }) {
            return added.defaultValue.map(ConstraintMember.constant) ?? .absent
        }
        if entity.addedRelationships.contains(name) { return .absent }
        let stored = entity.renamedAttributes.first(where: { $0.new == name })?.old ?? name
        if let required = entity.requiredAttributes.first(where: { $0.name == name }),
            let value = required.defaultValue
        {
            return .filled(stored, default: value)
        }
        return .stored(stored)
    }

    /// The objects of `entity` (old name) that would hold the same values of `members`, named by
    /// URI (a few groups), or nil when none would. Each way the filled attributes can come to
    /// their values (their own, or nil or the default becoming the default) is asked apart:
    /// objects whose filled attribute holds nil or the default are grouped by the others.
    func collisions(of members: [ConstraintMember], in entity: String) throws -> String? {
        guard !members.contains(.absent) else { return nil }
        let filled = members.indices.filter { if case .filled = members[$0] { true } else { false } }
        var groups: [(size: Int, predicate: Predicate)] = []
        var more = false
        for defaulted in 0..<(1 << filled.count) {
            var grouped: [String] = [], conditions: [Predicate] = []
            for (index, member) in members.enumerated() {
                switch member {
                case .stored(let name): grouped.append(name)
                case .constant, .absent: break
                case .filled(let name, let value):
                    let bit = 1 << filled.firstIndex(of: index)! // ! filled holds the indices of .filled members.
                    if defaulted & bit != 0 {
                        conditions.append(
                            .or([.equal(PropertyPath([name]), .null), .equal(PropertyPath([name]), value)]))
                    } else {
                        grouped.append(name)
                    }
                }
            }
            let (found, cut) = try colliding(groupedBy: grouped, where: conditions, in: entity)
            groups += found
            more = more || cut
        }
        guard !groups.isEmpty else { return nil }
        var named: [String] = []
        for group in groups.prefix(Self.groupsNamed) {
            let uris = try reads.uris(entity, matching: group.predicate, limit: MigrationPlanner.namedObjects, in: old)
            let unnamed = group.size - uris.count
            named.append("(" + uris.joined(separator: ", ") + (unnamed > 0 ? " and \(unnamed) more" : "") + ")")
        }
        let rest = groups.count - named.count
        return named.joined(separator: "; ")
            + (rest > 0 ? " and \(more ? "at least " : "")\(rest) more group(s)" : "")
    }

    /// The groups of objects of `entity` matching all of `conditions` that hold the same
    /// non-nil values of `attributes` (all of them, when there are none), each with its size and a predicate naming its objects;
    /// and whether there may be more than were asked for.
    private func colliding(groupedBy attributes: [String], where conditions: [Predicate], in entity: String) throws
        -> (groups: [(size: Int, predicate: Predicate)], cut: Bool)
    {
        // Nil never collides: groups holding one are left out before they are counted.
        let held = attributes.map {
            Predicate.comparison(Comparison(.keyPath(PropertyPath([$0])), .notEqual, .literal(.null)))
        }
        let descriptor = AggregateDescriptor(
            entityName: entity, predicate: .all(conditions + held),
            groupBy: attributes.map { PropertyPath([$0]) }, aggregations: [Aggregation("n", .count)],
            sortBy: [AggregateSort("n", ascending: false)], limit: Self.groupsAsked)
        let rows = try reads.aggregate(try descriptor.validated(in: old))
        let groups = rows.compactMap { row -> (size: Int, predicate: Predicate)? in
            guard case .int(let n)? = row["n"], n > 1 else { return nil }
            let equal = attributes.map { Predicate.equal(PropertyPath([$0]), row[$0] ?? .null) }
            return (Int(n), .all(conditions + equal))
        }
        return (groups, rows.count == Self.groupsAsked && groups.count == rows.count)
    }
}
