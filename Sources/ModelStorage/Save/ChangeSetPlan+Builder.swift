import ModelCore

extension ChangeSetPlan {
    /// Checks the values and relationship changes of one change set.
    struct Builder<Reads: SaveReads> {
        let schema: ResolvedSchema
        let reads: Reads
        let isOverlay: Bool
        var insertIndex: [PersistentIdentifier: Int] = [:]
        var insertEntities: [PersistentIdentifier: ResolvedEntity] = [:]

        /// The given values, converted to their attributes' types (nil kept).
        func attributes(_ given: [String: Value], of entity: ResolvedEntity, id: PersistentIdentifier)
            throws(ModelError) -> [String: Value]
        {
            // Usually every value is of its attribute's type already: the table is then kept as
            // it is, not built again.
            var converted = given
            for (name, value) in given {
                guard let attribute = entity.attribute(name),
                    let convertedValue = try? value.converted(to: attribute.type)
                else {
                    // Names the first problem in name order, whatever order the values came in.
                    return try checkedAttributes(given, of: entity, id: id)
                }
                if convertedValue.isChanged(from: value) { converted[name] = convertedValue }
            }
            return converted
        }

        /// ``attributes(_:of:id:)`` one name at a time, in order, throwing at the first problem.
        private func checkedAttributes(_ given: [String: Value], of entity: ResolvedEntity, id: PersistentIdentifier)
            throws(ModelError) -> [String: Value]
        {
            var converted: [String: Value] = [:]
            for (name, value) in given.sorted(by: { $0.key < $1.key }) {
                guard let attribute = entity.attribute(name) else {
                    if entity.relationship(name) != nil {
                        throw ModelError(
                            .invalidArgument,
                            "'\(name)' of '\(entity.name)' is a relationship: send it as a relationship change, not as an attribute value",
                            context: ["entity": entity.name, "property": name, "uri": id.uriRepresentation])
                    }
                    throw ModelError.unknownProperty(name, entity: entity.name)
                }
                do {
                    converted[name] = try value.converted(to: attribute.type)
                } catch {
                    throw ModelError(
                        .typeMismatch,
                        "\(entity.name).\(name) holds \(attribute.type.rawValue) values, but \(id) gives it \(value.debugText)",
                        context: [
                            "entity": entity.name, "attribute": name, "expected": attribute.type.rawValue,
                            "uri": id.uriRepresentation,
                        ])
                }
            }
            return converted
        }

        /// The relationship changes, each checked against its relationship, targets resolved.
        func links(_ given: [String: RelationshipChange], of entity: ResolvedEntity, id: PersistentIdentifier) throws
            -> [Link]
        {
            var links: [Link] = []
            for (name, change) in given.sorted(by: { $0.key < $1.key }) {
                guard let relationship = entity.relationship(name) else {
                    throw ModelError.unknownProperty(name, entity: entity.name)
                }
                switch (change, relationship.isToMany) {
                case (.toOne(let target), false):
                    var resolved: Participant?
                    if let target {
                        // An overlay skips a target that is gone.
                        guard let found = try self.target(target, of: relationship, owner: id) else { continue }
                        resolved = found
                    }
                    links.append(Link(relationship: relationship, kind: .toOne(resolved)))
                case (.toMany(let added, let removed), true):
                    var addedTargets: [Participant] = []
                    for target in added {
                        if let resolved = try self.target(target, of: relationship, owner: id) {
                            addedTargets.append(resolved)
                        }
                    }
                    links.append(
                        Link(
                            relationship: relationship,
                            kind: .toMany(added: addedTargets, removed: removed.compactMap(removedTarget))))
                default:
                    let kind =
                        relationship.isToMany
                        ? "to-many: send the identifiers added and removed" : "to-one: send the one target, or nil"
                    throw ModelError(
                        .invalidArgument, "relationship '\(entity.name).\(name)' is \(kind)",
                        context: ["entity": entity.name, "relationship": name, "uri": id.uriRepresentation])
                }
            }
            return links
        }

        /// A relationship's target: saved, or inserted by this change set, and of the
        /// relationship's destination entity or a subentity. Nil for a target that is gone
        /// (overlays only; a save fails with `notFound`).
        private func target(
            _ id: PersistentIdentifier, of relationship: ResolvedRelationship, owner: PersistentIdentifier
        ) throws -> Participant? {
            let participant: Participant
            let entity: String
            if let index = insertIndex[id], let inserted = insertEntities[id] {
                participant = .inserted(index)
                entity = inserted.name
            } else if let (ref, object) = try reads.existing(id) {
                participant = .stored(ref)
                entity = object.entity
            } else {
                if isOverlay { return nil }
                let why =
                    id.isTemporary
                    ? "it is neither saved nor inserted by this change set"
                    : "no such object in this store; it may have been deleted"
                throw ModelError(
                    .notFound, "cannot set '\(relationship.name)' of \(owner) to \(id): \(why)",
                    context: ["uri": id.uriRepresentation, "relationship": relationship.name])
            }
            guard schema[entity]?.isKind(of: relationship.destination) == true else {
                throw ModelError(
                    .typeMismatch,
                    "cannot set '\(relationship.name)' of \(owner) to \(id): it is a \(entity), and '\(relationship.name)' holds \(relationship.destination) objects",
                    context: [
                        "uri": id.uriRepresentation, "relationship": relationship.name,
                        "expected": relationship.destination,
                    ])
            }
            return participant
        }

        /// An object removed from a to-many relationship: it need not exist any more.
        private func removedTarget(_ id: PersistentIdentifier) -> Participant? {
            if let index = insertIndex[id] { return .inserted(index) }
            guard let key = id.primaryKey, let root = schema[id.entityName]?.root else { return nil }
            return .stored(ObjectRef(root: root, key: key))
        }
    }
}
