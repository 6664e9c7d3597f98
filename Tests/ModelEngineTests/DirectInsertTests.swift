import Foundation
import ModelCore
@testable import ModelEngine
import ModelFixtures
import Testing

/// A batch of inserts goes straight to a change set, from the container (`saveInserts`, what the
/// daemon's `Apply` does) or from a context made for one save (`saveInsertsDirectly`); what it
/// stores, and every error it gives, must be what recording the same edits and saving them gives.
@Suite struct DirectInsertTests {
    /// The catalog, with an abstract entity whose subentity needs an owner.
    static let schema = Schema(
        entities: Catalog.schema.entities + [
            EntityDescription(
                name: "Base", isAbstract: true,
                attributes: [AttributeDescription(name: "s", type: .string, defaultValue: .string("default"))],
                relationships: [
                    RelationshipDescription(name: "owner", destination: "Owner", inverse: "things", isOptional: false)
                ]),
            EntityDescription(name: "Thing", superentity: "Base"),
            EntityDescription(
                name: "Owner", attributes: [AttributeDescription(name: "name", type: .string, isOptional: true)],
                relationships: [RelationshipDescription(name: "things", destination: "Base", isToMany: true)]),
            // The catalog's Item (every type) without its unique constraint: SQLite writes its
            // runs straight. The catalog has an Item, hence the `!`.
            EntityDescription(
                name: "Entry", attributes: Catalog.schema.entities.first { $0.name == "Item" }!.attributes,
                relationships: [RelationshipDescription(name: "owner", destination: "Owner")]),
        ])

    /// What a save left: the stored objects described, or the error.
    enum Outcome: Equatable, CustomStringConvertible {
        case saved([String])
        case failed(ModelError.Code, String)

        var description: String {
            switch self {
            case .saved(let objects): "saved \(objects)"
            case .failed(let code, let message): "\(code): \(message)"
            }
        }
    }

    /// A temporary identifier of `entity`, the same text in every store (so that messages naming
    /// it compare equal).
    static func given(_ entity: String, _ n: Int, store: UUID) -> PersistentIdentifier {
        PersistentIdentifier(
            storeIdentifier: store, entityName: entity,
            key: .temporary(UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", n))!))
    }

    /// The ways a batch of inserts is saved.
    enum Way {
        /// Recorded in a context, then saved.
        case recorded
        /// `saveInsertsDirectly` of a context made for one save.
        case context
        /// The container's `saveInserts`, without a context.
        case container
        /// The container's `saveInsertRuns` of the edits made runs (``runs(_:)``), and when it
        /// declines them, `saveInserts`: what the daemon's `Apply` does with plain inserts.
        case runs
    }

    /// Plain inserts (no identifier, no relationship) as runs, a run for each stretch of one
    /// entity naming the same attributes; nil for any other edit.
    static func runs(_ edits: [ObjectEdit]) -> [InsertRun]? {
        var runs: [InsertRun] = []
        for edit in edits {
            guard case .insert(let entity, let attributes, let relationships, nil) = edit, relationships.isEmpty else {
                return nil
            }
            let columns = attributes.keys.sorted()
            let row = columns.map { attributes[$0]! } // The names are the table's own.
            if let last = runs.last, last.entityName == entity, last.columns == columns {
                runs[runs.count - 1].append(row: row)
            } else {
                var run = InsertRun(entityName: entity, columns: columns)
                run.append(row: row)
                runs.append(run)
            }
        }
        return runs
    }

    /// Saves `edits(store)` into a fresh store of `kind` one way, and describes what came of it.
    static func outcome(_ kind: BackendKind, _ way: Way, _ edits: (UUID) -> [ObjectEdit]) async throws -> Outcome {
        var outcome = Outcome.saved([])
        try await withStore(kind, schema: schema) { store in
            let batch = edits(store.container.storeIdentifier)
            do {
                let result: SaveResult
                switch way {
                case .context:
                    let context = store.container.makeContext(retainsSavedObjects: false)
                    result = try #require(try await context.saveInsertsDirectly(batch), "the direct way was not taken")
                    #expect(await !context.hasChanges)
                case .container:
                    result = try #require(
                        try await store.container.saveInserts(batch, author: nil, uniquenessPolicy: .error),
                        "the direct way was not taken")
                case .recorded:
                    let context = store.context()
                    _ = try await context.apply(batch)
                    result = try await context.save()
                case .runs:
                    if let runs = runs(batch),
                        let saved = try await store.container.saveInsertRuns(
                            runs, author: nil, uniquenessPolicy: .error)
                    {
                        result = saved
                    } else {
                        result = try #require(
                            try await store.container.saveInserts(batch, author: nil, uniquenessPolicy: .error),
                            "the direct way was not taken")
                    }
                }
                let fromRuns = result.insertedRuns.reduce(0) { $0 + $1.count }
                #expect(result.remappedIdentifiers.count + fromRuns == batch.count)
                #expect(result.versions.isEmpty || Set(result.versions.values) == [1])
                #expect(result.versions.isEmpty || Set(result.versions.keys) == Set(result.remappedIdentifiers.values))
            } catch let error as ModelError {
                // Temporary identifiers made by the save differ from one save to the next.
                let made = /\/t[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/
                outcome = .failed(
                    error.code,
                    error.message.replacingOccurrences(
                        of: store.container.storeIdentifier.uuidString.lowercased(), with: "<store>"
                    ).replacing(made) { match in
                        match.output.hasPrefix("/t00000000-0000-0000-0000-") ? String(match.output) : "/t<made>"
                    })
                return
            }
            var objects: [String] = []
            for entity in ["Item", "Book", "Thing", "Owner", "Entry"] {
                for object in try await store.context().fetch(FetchDescriptor(entityName: entity)).objects {
                    let values = object.attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(
                        separator: " ")
                    objects.append("\(entity)/\(object.id.primaryKey ?? -1) v\(object.version) \(values)")
                }
            }
            outcome = .saved(objects.sorted())
        }
        return outcome
    }

    @Test(arguments: BackendKind.allCases, batches.indices)
    func theDirectWayEndsAsRecordingDoes(_ kind: BackendKind, _ index: Int) async throws {
        let batch = Self.batches[index]
        let recorded = try await Self.outcome(kind, .recorded, batch.edits)
        let direct = try await Self.outcome(kind, .context, batch.edits)
        #expect(direct == recorded, "\(batch.name)")
        #expect(try await Self.outcome(kind, .container, batch.edits) == recorded, "\(batch.name)")
        #expect(try await Self.outcome(kind, .runs, batch.edits) == recorded, "\(batch.name)")
        switch direct {
        case .saved(let objects):
            #expect(batch.expected == "saved" && objects.count == batch.edits(UUID()).count, "\(batch.name): \(direct)")
        case .failed(let code, _): #expect(code.rawValue == batch.expected, "\(batch.name): \(direct)")
        }
    }

    /// Edits and contexts the direct way does not take: it returns nil and leaves them be.
    @Test func otherEditsAndContextsAreLeftToTheGeneralWay() async throws {
        try await withStore(.sqlite, schema: Self.schema) { store in
            let plain = ObjectEdit.insert(
                entity: "Item", attributes: ["title": .string("a")], relationships: [:], id: nil)
            let owner = Self.given("Owner", 1, store: store.container.storeIdentifier)
            let linked: [ObjectEdit] = [
                .insert(entity: "Owner", attributes: [:], relationships: [:], id: owner),
                .insert(entity: "Thing", attributes: [:], relationships: ["owner": .toOne(owner)], id: nil),
            ]
            let once = store.container.makeContext(retainsSavedObjects: false)
            #expect(try await once.saveInsertsDirectly(linked) == nil)
            #expect(try await store.container.saveInserts(linked, author: nil, uniquenessPolicy: .error) == nil)
            // No edits: nothing to save, and no empty transaction in history.
            #expect(try await store.container.saveInserts([], author: nil, uniquenessPolicy: .error) == nil)
            #expect(try await store.container.history(after: nil).isEmpty)
            #expect(try await store.context().saveInsertsDirectly([plain]) == nil)
            _ = try await once.apply([plain])
            #expect(try await once.saveInsertsDirectly([plain]) == nil)
            #expect(await once.pendingObjects.inserted.count == 1)
            // Through save(applying:), both batches are saved all the same.
            try await once.save(applying: linked)
            #expect(
                try await store.context().fetch(FetchDescriptor(entityName: "Thing", resultType: .count)).count == 1)
            #expect(try await store.context().fetch(FetchDescriptor(entityName: "Item", resultType: .count)).count == 1)
        }
    }
}
