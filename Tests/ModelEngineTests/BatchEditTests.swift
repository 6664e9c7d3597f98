import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import Testing

/// `ModelContext.apply(_:)`: several edits as one operation, all or none, with identifiers the
/// caller chose for new objects.
@Suite struct BatchEditTests {
    @Test(arguments: BackendKind.allCases)
    func editsReferToObjectsInsertedEarlierInTheBatch(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let author = PersistentIdentifier(
                storeIdentifier: store.container.storeIdentifier, entityName: "Author", key: .temporary(UUID()))
            let ids = try await context.apply([
                .insert(entity: "Author", attributes: ["name": .string("Ann")], relationships: [:], id: author),
                .insert(
                    entity: "Book", attributes: ["title": .string("Notes")],
                    relationships: ["authors": .toMany([author])], id: nil),
            ])
            #expect(ids.count == 2 && ids[0] == author && ids[1].isTemporary && ids[1].entityName == "Book")
            let saved = try await context.save().remappedIdentifiers
            let book = try #require(saved[ids[1]])
            #expect(try await store.context().object(for: book)?.toMany("authors") == [try #require(saved[author])])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func aFailingEditUndoesTheWholeBatch(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let kept = try await context.insert("Item", attributes: ["title": .string("kept")])
            let error = await modelError {
                _ = try await context.apply([
                    .insert(entity: "Item", attributes: ["title": .string("dropped")], relationships: [:], id: nil),
                    .update(kept, attributes: ["rank": .int(7)], relationships: [:]),
                    .insert(
                        entity: "Item", attributes: ["title": .string("bad"), "rank": .string("seven")],
                        relationships: [:], id: nil),
                ])
            }
            #expect(error?.code == .typeMismatch)
            let pending = await context.pendingObjects
            #expect(pending.inserted == [kept])
            #expect(try await context.object(for: kept)?["rank"] == .int(0))
            #expect(try await context.count(FetchDescriptor(entityName: "Item")) == 1)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func chosenIdentifiersMustBeTemporaryOfThisStoreAndEntityAndUnused(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let uuid = store.container.storeIdentifier
            let used = PersistentIdentifier(storeIdentifier: uuid, entityName: "Item", key: .temporary(UUID()))
            _ = try await context.apply([
                .insert(entity: "Item", attributes: ["title": .string("a")], relationships: [:], id: used)
            ])
            let bad = [
                PersistentIdentifier(storeIdentifier: uuid, entityName: "Item", key: .permanent(1)),
                PersistentIdentifier(storeIdentifier: UUID(), entityName: "Item", key: .temporary(UUID())),
                PersistentIdentifier(storeIdentifier: uuid, entityName: "Shelf", key: .temporary(UUID())),
                used,
            ]
            for id in bad {
                let error = await modelError {
                    _ = try await context.apply([
                        .insert(entity: "Item", attributes: ["title": .string("b")], relationships: [:], id: id)
                    ])
                }
                #expect(error?.code == .invalidIdentifier, "\(id)")
                #expect(error?.context["uri"] == id.uriRepresentation)
            }
            #expect(await context.pendingObjects.inserted == [used])
        }
    }
}
