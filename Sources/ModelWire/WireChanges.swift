import Foundation
import ModelCore

extension ObjectEdit {
    /// Reads a change from the wire; URIs must belong to `storeIdentifier` when given.
    public init(wire change: Modeld_V1_Change, in storeIdentifier: UUID?) throws(ModelError) {
        func id(_ uri: String) throws(ModelError) -> PersistentIdentifier {
            try PersistentIdentifier(wire: uri, in: storeIdentifier)
        }
        func ids(_ uris: [String]) throws(ModelError) -> [PersistentIdentifier] {
            var ids: [PersistentIdentifier] = []
            for uri in uris { ids.append(try id(uri)) }
            return ids
        }
        func relationships(_ wire: [String: Modeld_V1_RelationshipValue]) throws(ModelError) -> [String:
            RelationshipValue]
        {
            var values: [String: RelationshipValue] = [:]
            for (name, value) in wire {
                do {
                    values[name] = try RelationshipValue(wire: value, in: storeIdentifier)
                } catch {
                    throw ModelError(error.code, "relationship '\(name)': \(error.message)", context: error.context)
                }
            }
            return values
        }
        switch change.kind {
        case .insert(let insert):
            self = .insert(
                entity: insert.entity, attributes: try [String: Value](wire: insert.attributes),
                relationships: try relationships(insert.relationships),
                id: insert.temporaryUri.isEmpty ? nil : try id(insert.temporaryUri))
        case .update(let update):
            self = .update(
                try id(update.uri), attributes: try [String: Value](wire: update.attributes),
                relationships: try relationships(update.relationships))
        case .delete(let delete):
            self = .delete(try id(delete.uri))
        case .add(let edit):
            self = .add(try ids(edit.targets), relationship: edit.relationship, of: try id(edit.uri))
        case .remove(let edit):
            self = .remove(try ids(edit.targets), relationship: edit.relationship, of: try id(edit.uri))
        case .expectVersion(let expectation):
            guard expectation.version > 0 else {
                throw ModelError(
                    .invalidArgument,
                    "expect_version of \(expectation.uri) is \(expectation.version); versions start at 1 (ObjectSnapshot.version)"
                )
            }
            self = .expectVersion(expectation.version, of: try id(expectation.uri))
        case nil:
            throw ModelError(
                .invalidArgument,
                "the change has nothing set; set insert, update, delete, add, remove or expect_version")
        }
    }

    /// Reads the changes of a request; an error names the change (by position) it is about.
    public static func edits(wire changes: [Modeld_V1_Change], in storeIdentifier: UUID?) throws(ModelError)
        -> [ObjectEdit]
    {
        var edits: [ObjectEdit] = []
        edits.reserveCapacity(changes.count)
        for (index, change) in changes.enumerated() {
            do {
                edits.append(try ObjectEdit(wire: change, in: storeIdentifier))
            } catch {
                throw error.locating(change: index, of: changes.count)
            }
        }
        return edits
    }

    /// The wire form of this edit.
    public var wire: Modeld_V1_Change {
        var change = Modeld_V1_Change()
        switch self {
        case .insert(let entity, let attributes, let relationships, let id):
            change.insert = Modeld_V1_Insert.with {
                $0.entity = entity
                $0.attributes = attributes.wire
                $0.relationships = relationships.mapValues(\.wire)
                $0.temporaryUri = id?.uriRepresentation ?? ""
            }
        case .update(let id, let attributes, let relationships):
            change.update = Modeld_V1_Update.with {
                $0.uri = id.uriRepresentation
                $0.attributes = attributes.wire
                $0.relationships = relationships.mapValues(\.wire)
            }
        case .delete(let id):
            change.delete = Modeld_V1_Delete.with { $0.uri = id.uriRepresentation }
        case .add(let targets, let relationship, let id):
            change.add = Self.edit(id, relationship, targets)
        case .remove(let targets, let relationship, let id):
            change.remove = Self.edit(id, relationship, targets)
        case .expectVersion(let version, let id):
            change.expectVersion = Modeld_V1_ExpectVersion.with {
                $0.uri = id.uriRepresentation
                $0.version = version
            }
        }
        return change
    }

    private static func edit(_ id: PersistentIdentifier, _ relationship: String, _ targets: [PersistentIdentifier])
        -> Modeld_V1_RelationshipEdit
    {
        Modeld_V1_RelationshipEdit.with {
            $0.uri = id.uriRepresentation
            $0.relationship = relationship
            $0.targets = targets.map(\.uriRepresentation)
        }
    }
}
