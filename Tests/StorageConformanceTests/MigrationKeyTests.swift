import Foundation
import ModelCore
import ModelStorage
import Testing

/// A URI never comes to name another object (storage-semantics.md), across inferred migrations
/// on every backend: a name the store stops using, by a rename or a removal, keeps the keys it
/// drew, so an entity that takes the name up again draws past them, in whichever hierarchy.
@Suite struct MigrationKeyTests {
    static func entity(_ name: String, superentity: String? = nil, originalName: String? = nil) -> EntityDescription {
        EntityDescription(
            name: name, superentity: superentity,
            attributes: superentity == nil ? [AttributeDescription(name: "name", type: .string)] : [],
            originalName: originalName)
    }

    /// Migrates `store` to `entities`, allowing data loss; the store opened with them.
    static func migrate(_ store: TestStore, _ entities: [EntityDescription]) async throws -> TestStore {
        let schema = Schema(entities: entities)
        _ = try await store.backend.migrate(to: schema, options: MigrationOptions(allowDataLoss: true))
        return try MigrationTests.migrated(store, schema)
    }

    /// Saves a new object of `entity`; its identifier and key.
    static func insert(_ store: TestStore, _ entity: String, _ name: String) async throws -> (
        id: PersistentIdentifier, key: Int64
    ) {
        var c = store.changes()
        let temporary = c.insert(entity, ["name": .string(name)])
        let id = try await store.save(c)[temporary]
        return (id, try #require(id.primaryKey))
    }

    @Test(arguments: BackendKind.allCases)
    func aRenamedEntitysOldNameComingBackDrawsNewKeys(_ kind: BackendKind) async throws {
        try await withStore(kind, Schema(entities: [Self.entity("Trip")])) { store in
            let kyoto = try await Self.insert(store, "Trip", "Kyoto")
            let renamed = try await Self.migrate(store, [Self.entity("Journey", originalName: "Trip")])
            #expect(try await renamed.snapshot(renamed.id("Journey", kyoto.key))["name"] == .string("Kyoto"))
            let again = try await Self.migrate(renamed, [Self.entity("Journey"), Self.entity("Trip")])
            let oslo = try await Self.insert(again, "Trip", "Oslo")
            #expect(oslo.key > kyoto.key, "\(oslo.id) reuses the key of \(kyoto.id), now a Journey")
            #expect(try await again.backend.snapshots(for: [kyoto.id]).isEmpty)
            // The renamed hierarchy goes on drawing its own keys past Kyoto's.
            let nara = try await Self.insert(again, "Journey", "Nara")
            #expect(nara.key > kyoto.key)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func aRemovedSubentitysNameComingBackAsARootDrawsNewKeys(_ kind: BackendKind) async throws {
        let item = Self.entity("Item"), gadget = Self.entity("Gadget", superentity: "Item")
        try await withStore(kind, Schema(entities: [item, gadget])) { store in
            _ = try await Self.insert(store, "Item", "a")
            let old = try await Self.insert(store, "Gadget", "g")
            let removed = try await Self.migrate(store, [item])
            let back = try await Self.migrate(removed, [item, Self.entity("Gadget")])
            let new = try await Self.insert(back, "Gadget", "new")
            #expect(new.key > old.key, "\(new.id) reuses the key of the removed \(old.id)")
        }
    }

    @Test(arguments: BackendKind.allCases)
    func aRemovedRootsNameComingBackInAnotherHierarchyDrawsNewKeys(_ kind: BackendKind) async throws {
        let note = Self.entity("Note")
        try await withStore(kind, Schema(entities: [note, Self.entity("Trip")])) { store in
            var last = try await Self.insert(store, "Trip", "first")
            for name in ["second", "third"] { last = try await Self.insert(store, "Trip", name) }
            let removed = try await Self.migrate(store, [note])
            let back = try await Self.migrate(removed, [note, Self.entity("Trip", superentity: "Note")])
            let new = try await Self.insert(back, "Trip", "new")
            #expect(new.key > last.key, "\(new.id) reuses the key of the removed \(last.id)")
        }
    }

    /// An `originalName` the new schema still uses cannot say which is which: refused, with
    /// what to do instead, rather than taken as no rename at all (a swap then moved nothing).
    @Test(arguments: BackendKind.allCases)
    func aRenameFromANameTheNewSchemaKeepsIsRefused(_ kind: BackendKind) async throws {
        let a = AttributeDescription(name: "a", type: .string), b = AttributeDescription(name: "b", type: .string)
        try await withStore(kind, Schema(entities: [EntityDescription(name: "Trip", attributes: [a, b])])) { store in
            var c = store.changes()
            c.insert("Trip", ["a": .string("first"), "b": .string("second")])
            try await store.save(c)
            var swappedA = a, swappedB = b
            swappedA.originalName = "b"
            swappedB.originalName = "a"
            try await MigrationTests.expectRefusal(
                store, to: Schema(entities: [EntityDescription(name: "Trip", attributes: [swappedA, swappedB])]),
                mentioning:
                    "Trip.a names b as its original name, but Trip keeps an attribute b, so it cannot continue it: rename in two steps"
            )
            try await MigrationTests.expectRefusal(
                store,
                to: Schema(entities: [
                    EntityDescription(name: "Journey", attributes: [a, b], originalName: "Trip"),
                    EntityDescription(name: "Trip", attributes: [a]),
                ]),
                mentioning: "entity Journey names Trip as its original name, but the new schema has an entity Trip too")
        }
    }
}
