import ModelCore

extension PendingChanges {
    /// Checks what a save would write against the schema: required attributes have values,
    /// required to-one relationships are set, and to-many counts (not counting objects this save
    /// deletes) are within bounds. Throws `validationFailed` listing the problems (the first ten).
    func validate(_ changes: ChangeSet) throws(ModelError) {
        var problems: [String] = []
        let ids = changes.inserts.map(\.id) + changes.updates.map(\.id)
        for id in ids {
            guard let state = view(of: id), let entity = entity(of: id) else { continue }
            Self.appendProblems(of: id, entity: entity, attributes: state.attributes, to: &problems) { relationship in
                state.targets(of: relationship).subtracting(deletedSet).count
            }
        }
        try Self.refuse(problems)
    }

    /// Appends what is wrong with object `id` of `entity` holding `attributes` and, per
    /// relationship, `targetCount` objects that the save keeps.
    static func appendProblems(
        of id: PersistentIdentifier, entity: ResolvedEntity, attributes: [String: Value],
        to problems: inout [String], targetCount: (ResolvedRelationship) -> Int
    ) {
        for attribute in entity.attributes where !attribute.isOptional && (attributes[attribute.name] ?? .null).isNull {
            problems.append("\(id) has no value for required attribute '\(attribute.name)'")
        }
        for relationship in entity.relationships {
            let count = targetCount(relationship)
            if relationship.isToMany {
                if let min = relationship.minCount, count < min {
                    problems.append("\(id) has \(count) \(relationship.name), fewer than the minimum of \(min)")
                }
                if let max = relationship.maxCount, count > max {
                    problems.append("\(id) has \(count) \(relationship.name), more than the maximum of \(max)")
                }
            } else if !relationship.isOptional, count == 0 {
                problems.append("\(id) needs a value for required relationship '\(relationship.name)'")
            }
        }
    }

    /// Throws `validationFailed` listing `problems` (the first ten), if there are any.
    static func refuse(_ problems: [String]) throws(ModelError) {
        guard !problems.isEmpty else { return }
        let shown = problems.prefix(10).joined(separator: "; ")
        let more = problems.count > 10 ? " (and \(problems.count - 10) more)" : ""
        throw ModelError(
            .validationFailed, "the save was refused: \(shown)\(more)",
            context: ["problems": String(problems.count)])
    }
}
