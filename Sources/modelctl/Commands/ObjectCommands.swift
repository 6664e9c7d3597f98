import ArgumentParser
import Foundation
import ModelRemote
import ModelCore

/// The store's schema, resolved, and one of its entities.
func resolvedEntity(_ name: String, client: DaemonClient, store: String) async throws -> ResolvedEntity {
    try ResolvedSchema(try await client.schema(of: store)).entity(name)
}

/// `modelctl insert ENTITY name=value…`: inserts objects, as one save.
struct Insert: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Insert an object (or several, with --json), as one save; print the new URIs.",
        discussion: "Example: modelctl insert Trip name=Kyoto destination=Japan startDate=2026-04-01 endDate=2026-04-09"
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The entity.") var entity: String
    @Argument(help: "name=value or name:=json assignments.") var values: [String] = []
    @Option(
        help: ArgumentHelp("The object as JSON, or an array of objects ('-' reads standard input).", valueName: "json"))
    var json: String?
    @Option(help: "Stamped on the save's history.") var author: String?
    @Flag(help: "Update the existing object when an insert collides with a unique constraint (SwiftData's #Unique).")
    var upsert = false

    func run() async throws {
        let ids = try await global.withClient { client in
            let entity = try await resolvedEntity(self.entity, client: client, store: global.storeName)
            var objects: [(attributes: [String: Value], relationships: [String: RelationshipValue])] = []
            if let json {
                guard values.isEmpty else { throw InputError("give the values as name=value or with --json, not both") }
                let text =
                    json == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : json
                switch try JSONValue.parse(text) {
                case .array(let items): objects = try items.map { try ObjectInput.json($0, entity: entity) }
                case let object: objects = [try ObjectInput.json(object, entity: entity)]
                }
            } else {
                objects = [try Assignments.parse(values, entity: entity)]
            }
            let store = try await client.store(global.storeName).storeIdentifier
            let edits: [ObjectEdit] = objects.map { object in
                .insert(
                    entity: entity.name, attributes: object.attributes, relationships: object.relationships,
                    id: PersistentIdentifier(
                        storeIdentifier: store, entityName: entity.name, key: .temporary(UUID.random())))
            }
            let saved = try await client.apply(
                edits, in: global.storeName, author: author, uniquenessPolicy: upsert ? .upsert : .error)
            return edits.compactMap { edit -> PersistentIdentifier? in
                guard case .insert(_, _, _, let id?) = edit else { return nil }
                return saved.remappedIdentifiers[id] ?? id
            }
        }
        let writer = RecordWriter(format: global.outputFormat)
        writer.write(ids.map { [("uri", .text($0.uriRepresentation))] })
        writer.finish()
    }
}

/// `modelctl get URI…`.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print objects by URI.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "Object URIs: modeld://<store-uuid>/<Entity>/p<key>.") var uris: [String]

    func run() async throws {
        let ids = try await CLI.reportingErrors(socket: global.socketPath) { try uris.map(ValueInput.uri) }
        let objects = try await global.withClient { try await $0.objects(ids, in: global.storeName) }
        let writer = RecordWriter(format: global.outputFormat, single: ids.count == 1 && objects.count == 1)
        writer.write(objects.map { $0.record(fields: nil) })
        writer.finish()
        let found = Set(objects.map(\.id))
        let missing = ids.filter { !found.contains($0) }
        if !missing.isEmpty {
            Terminal.error(
                "modelctl: no object \(missing.map(\.uriRepresentation).joined(separator: ", ")) in store '\(global.storeName)'\n"
            )
            throw ExitCode(CLI.notFound)
        }
    }
}

/// `modelctl update URI name=value…`.
struct Update: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Change attributes and relationships of an object, as one save.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The object's URI.") var uri: String
    @Argument(help: "name=value or name:=json assignments.") var values: [String]
    @Option(help: "Stamped on the save's history.") var author: String?

    func run() async throws {
        let token = try await global.withClient { client in
            let id = try ValueInput.uri(uri)
            let entity = try await resolvedEntity(id.entityName, client: client, store: global.storeName)
            let (attributes, relationships) = try Assignments.parse(values, entity: entity)
            return try await client.apply(
                [.update(id, attributes: attributes, relationships: relationships)], in: global.storeName,
                author: author
            ).token
        }
        Terminal.error("updated \(uri)\(token.map { " (history token \($0))" } ?? "")\n")
    }
}

/// `modelctl delete URI…`: one save; reports what the delete rules cascaded.
struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete objects, as one save; print every object deleted, cascades included.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "Object URIs.") var uris: [String]
    @Option(help: "Stamped on the save's history.") var author: String?

    func run() async throws {
        let (requested, transaction) = try await global.withClient { client in
            let ids = try uris.map(ValueInput.uri)
            let saved = try await client.apply(
                ids.map { .delete($0) }, in: global.storeName, author: author, returnTransaction: true)
            return (Set(ids), saved.transaction)
        }
        let deleted = transaction?.changes.filter { $0.kind == .delete } ?? []
        let writer = RecordWriter(format: global.outputFormat)
        writer.write(
            deleted.map { change in
                [
                    ("uri", .text(change.id.uriRepresentation)),
                    ("deleted", .text(requested.contains(change.id) ? "as asked" : "by cascade")),
                ]
            })
        writer.finish()
    }
}

/// Objects from JSON.
enum ObjectInput {
    /// Attributes and relationships from a JSON object; `uri` and `version` members (what
    /// export writes) are ignored.
    static func json(_ json: JSONValue, entity: ResolvedEntity) throws -> (
        attributes: [String: Value], relationships: [String: RelationshipValue]
    ) {
        guard case .object(let members) = json else {
            throw InputError("expected a JSON object, got \(json.text.prefix(40))")
        }
        var attributes: [String: Value] = [:], relationships: [String: RelationshipValue] = [:]
        for (name, value) in members where name != "uri" && name != "version" {
            if let attribute = entity.attribute(name) {
                attributes[name] = try ValueInput.json(value, as: attribute.type, name: name)
            } else if let relationship = entity.relationship(name) {
                relationships[name] = try ValueInput.relationship(json: value, relationship)
            } else {
                throw InputError("entity '\(entity.name)' has no attribute or relationship '\(name)'")
            }
        }
        return (attributes, relationships)
    }
}
