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
            for attribute in entity.attributes where !attribute.isOptional {
                if (state.attributes[attribute.name] ?? .null).isNull {
                    problems.append("\(id) has no value for required attribute '\(attribute.name)'")
                }
            }
            for relationship in entity.relationships {
                let targets = state.targets(of: relationship).subtracting(deletedSet)
                if relationship.isToMany {
                    if let min = relationship.minCount, targets.count < min {
                        problems.append("\(id) has \(targets.count) \(relationship.name), fewer than the minimum of \(min)")
                    }
                    if let max = relationship.maxCount, targets.count > max {
                        problems.append("\(id) has \(targets.count) \(relationship.name), more than the maximum of \(max)")
                    }
                } else if !relationship.isOptional, targets.isEmpty {
                    problems.append("\(id) needs a value for required relationship '\(relationship.name)'")
                }
            }
        }
        guard !problems.isEmpty else { return }
        let shown = problems.prefix(10).joined(separator: "; ")
        let more = problems.count > 10 ? " (and \(problems.count - 10) more)" : ""
        throw ModelError(.validationFailed, "the save was refused: \(shown)\(more)",
                         context: ["problems": String(problems.count)])
    }
}
