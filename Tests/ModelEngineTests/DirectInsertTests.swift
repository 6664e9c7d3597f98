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
                }
                #expect(result.remappedIdentifiers.count == batch.count)
                #expect(Set(result.versions.values) == [1])
                #expect(Set(result.versions.keys) == Set(result.remappedIdentifiers.values))
            } catch let error as ModelError {
                outcome = .failed(
                    error.code,
                    error.message.replacingOccurrences(
                        of: store.container.storeIdentifier.uuidString.lowercased(), with: "<store>"))
                return
            }
            var objects: [String] = []
            for entity in ["Item", "Book", "Thing", "Owner"] {
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

    /// Batches of inserts, each with what it must come to.
    static let batches: [(name: String, expected: String, edits: @Sendable (UUID) -> [ObjectEdit])] = [
        (
            "defaults and conversions", "saved",
            { _ in
                [
                    .insert(entity: "Item", attributes: ["title": .string("a")], relationships: [:], id: nil),
                    .insert(
                        entity: "Item",
                        attributes: [
                            "title": .string("b"), "price": .int(3), "added": .string("2026-04-01T10:00:00Z"),
                        ], relationships: [:], id: nil),
                    .insert(entity: "Owner", attributes: [:], relationships: [:], id: nil),
                    .insert(
                        entity: "Item", attributes: ["title": .string("c"), "rank": .int(7), "sku": .string("S-1")],
                        relationships: [:], id: nil),
                ]
            }
        ),
        (
            "identifiers given", "saved",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a")], relationships: [:],
                        id: given("Item", 1, store: store)),
                    .insert(entity: "Item", attributes: ["title": .string("b")], relationships: [:], id: nil),
                ]
            }
        ),
        (
            "a value of the wrong type", "typeMismatch",
            { _ in
                [
                    .insert(entity: "Item", attributes: ["title": .string("a")], relationships: [:], id: nil),
                    .insert(
                        entity: "Item", attributes: ["title": .string("b"), "rank": .string("seven")],
                        relationships: [:], id: nil),
                ]
            }
        ),
        (
            "an unknown attribute", "unknownProperty",
            { _ in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a"), "colour": .string("red")],
                        relationships: [:], id: nil),
                    .insert(entity: "Item", attributes: ["title": .string("b")], relationships: [:], id: nil),
                ]
            }
        ),
        (
            "a relationship given as an attribute", "invalidArgument",
            { _ in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a"), "shelf": .string("x")], relationships: [:],
                        id: nil)
                ]
            }
        ),
        (
            "an unknown entity", "unknownEntity",
            { _ in
                [
                    .insert(entity: "Item", attributes: ["title": .string("a")], relationships: [:], id: nil),
                    .insert(entity: "Nope", attributes: [:], relationships: [:], id: nil),
                ]
            }
        ),
        (
            "an abstract entity", "invalidArgument",
            { _ in
                [
                    .insert(entity: "Base", attributes: [:], relationships: [:], id: nil)
                ]
            }
        ),
        (
            "required values and relationships missing", "validationFailed",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["rank": .int(1)], relationships: [:],
                        id: given("Item", 1, store: store)),
                    .insert(
                        entity: "Book", attributes: ["title": .string("t")], relationships: [:],
                        id: given("Book", 2, store: store)),
                    .insert(entity: "Thing", attributes: [:], relationships: [:], id: given("Thing", 3, store: store)),
                    .insert(
                        entity: "Item", attributes: ["title": .null], relationships: [:],
                        id: given("Item", 4, store: store)),
                ]
            }
        ),
        (
            "an identifier given twice", "invalidIdentifier",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a")], relationships: [:],
                        id: given("Item", 1, store: store)),
                    .insert(
                        entity: "Item", attributes: ["title": .string("b")], relationships: [:],
                        id: given("Item", 1, store: store)),
                ]
            }
        ),
        (
            "an identifier of another entity", "invalidIdentifier",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a")], relationships: [:],
                        id: given("Book", 1, store: store))
                ]
            }
        ),
        (
            "a permanent identifier", "invalidIdentifier",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a")], relationships: [:],
                        id: PersistentIdentifier(storeIdentifier: store, entityName: "Item", key: .permanent(5)))
                ]
            }
        ),
        (
            "a unique value twice", "uniqueConstraint",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a"), "sku": .string("S")], relationships: [:],
                        id: given("Item", 1, store: store)),
                    .insert(
                        entity: "Item", attributes: ["title": .string("b"), "sku": .string("S")], relationships: [:],
                        id: given("Item", 2, store: store)),
                ]
            }
        ),
    ]

    @Test(arguments: BackendKind.allCases, batches.indices)
    func theDirectWayEndsAsRecordingDoes(_ kind: BackendKind, _ index: Int) async throws {
        let batch = Self.batches[index]
        let recorded = try await Self.outcome(kind, .recorded, batch.edits)
        let direct = try await Self.outcome(kind, .context, batch.edits)
        #expect(direct == recorded, "\(batch.name)")
        #expect(try await Self.outcome(kind, .container, batch.edits) == recorded, "\(batch.name)")
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
