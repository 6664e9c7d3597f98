import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import Testing

/// Optimistic concurrency: two contexts read the same object, one saves, then the other saves
/// under each merge policy.
@Suite struct MergePolicyTests {
    struct Scene {
        let store: TestStore
        let id: PersistentIdentifier
        let other: PersistentIdentifier
        let late: ModelContext
    }

    /// Saves an item (title "original", rank 1, label "L"), lets a late context read it, then
    /// has an early context change its title to "early" and save.
    func scene(_ kind: BackendKind, policy: MergePolicy, _ body: (Scene) async throws -> Void) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let setup = store.context()
            let item = try await setup.insert(
                "Item", attributes: ["title": .string("original"), "rank": .int(1), "label": .string("L")])
            let bystander = try await setup.insert("Item", attributes: ["title": .string("bystander")])
            let ids = try await setup.save().remappedIdentifiers
            let id = try #require(ids[item]), other = try #require(ids[bystander])

            let late = store.context(mergePolicy: policy)
            _ = try await late.object(for: id)
            let early = store.context()
            try await early.update(id, attributes: ["title": .string("early")])
            try await early.save()
            try await body(Scene(store: store, id: id, other: other, late: late))
        }
    }

    func stored(_ scene: Scene) async throws -> ObjectSnapshot {
        try #require(try await scene.store.context().object(for: scene.id))
    }

    /// An object removed from a to-many relationship need not exist any more: when another save
    /// deleted it, a save under any policy but error removes it (there is nothing left to
    /// remove), and error names it.
    @Test(arguments: BackendKind.allCases, [MergePolicy.error, .objectTrump, .overwrite, .storeTrump, .rollback])
    func aRemovalOfAnObjectAnotherSaveDeletedIsDone(_ kind: BackendKind, policy: MergePolicy) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let setup = store.context()
            let first = try await setup.insert("Author", attributes: ["name": .string("first")])
            let second = try await setup.insert("Author", attributes: ["name": .string("second")])
            let book = try await setup.insert(
                "Book", attributes: ["title": .string("b")], relationships: ["authors": .toMany([first, second])])
            let ids = try await setup.save().remappedIdentifiers
            let (author, written) = (try #require(ids[first]), try #require(ids[book]))

            let late = store.context(mergePolicy: policy)
            try await late.remove([written], from: "books", of: author)
            let early = store.context()
            try await early.delete(written)
            try await early.save()
            if policy == .error {
                let error = await modelError { try await late.save() }
                #expect(error?.code == .conflict, "\(String(describing: error))")
            } else {
                try await late.save()
                let now = try #require(try await store.context().object(for: author))
                #expect(now.relationships["books"] == .toMany([]), "\(now)")
            }
        }
    }

    @Test(arguments: BackendKind.allCases)
    func errorPolicyRefusesAndWritesNothing(_ kind: BackendKind) async throws {
        try await scene(kind, policy: .error) { scene in
            try await scene.late.update(scene.id, attributes: ["rank": .int(9)])
            try await scene.late.update(scene.other, attributes: ["rank": .int(5)])
            let error = await modelError { try await scene.late.save() }
            #expect(error?.code == .conflict)
            #expect(error?.message.contains(scene.id.uriRepresentation) == true)
            #expect(try await stored(scene)["rank"] == .int(1))
            #expect(try await scene.store.context().object(for: scene.other)?["rank"] == .int(0))
        }
    }

    @Test(arguments: BackendKind.allCases)
    func objectTrumpKeepsBothSidesChangesPropertyByProperty(_ kind: BackendKind) async throws {
        try await scene(kind, policy: .objectTrump) { scene in
            try await scene.late.update(scene.id, attributes: ["rank": .int(9)])
            try await scene.late.save()
            let now = try await stored(scene)
            #expect(now["title"] == .string("early"))
            #expect(now["rank"] == .int(9))
            #expect(now.version == 3)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func objectTrumpLetsTheContextWinOnTheSameProperty(_ kind: BackendKind) async throws {
        try await scene(kind, policy: .objectTrump) { scene in
            try await scene.late.update(scene.id, attributes: ["title": .string("late")])
            try await scene.late.save()
            #expect(try await stored(scene)["title"] == .string("late"))
        }
    }

    @Test(arguments: BackendKind.allCases)
    func storeTrumpLetsTheStoreWinOnTheSameProperty(_ kind: BackendKind) async throws {
        try await scene(kind, policy: .storeTrump) { scene in
            try await scene.late.update(scene.id, attributes: ["title": .string("late"), "rank": .int(9)])
            try await scene.late.save()
            let now = try await stored(scene)
            #expect(now["title"] == .string("early"))
            #expect(now["rank"] == .int(9))
        }
    }

    @Test(arguments: BackendKind.allCases)
    func overwriteWritesTheContextsWholeView(_ kind: BackendKind) async throws {
        try await scene(kind, policy: .overwrite) { scene in
            try await scene.late.update(scene.id, attributes: ["rank": .int(9)])
            try await scene.late.save()
            let now = try await stored(scene)
            // The late context never saw "early": its view of the title wins too.
            #expect(now["title"] == .string("original"))
            #expect(now["rank"] == .int(9))
        }
    }

    @Test(arguments: BackendKind.allCases)
    func rollbackDiscardsChangesToConflictingObjectsOnly(_ kind: BackendKind) async throws {
        try await scene(kind, policy: .rollback) { scene in
            try await scene.late.update(scene.id, attributes: ["rank": .int(9)])
            try await scene.late.update(scene.other, attributes: ["rank": .int(5)])
            try await scene.late.save()
            let now = try await stored(scene)
            #expect(now["title"] == .string("early"))
            #expect(now["rank"] == .int(1))
            #expect(try await scene.store.context().object(for: scene.other)?["rank"] == .int(5))
        }
    }

    @Test(arguments: BackendKind.allCases)
    func deletesConflictToo(_ kind: BackendKind) async throws {
        try await scene(kind, policy: .error) { scene in
            try await scene.late.delete(scene.id)
            #expect(await modelError { try await scene.late.save() }?.code == .conflict)
            await scene.late.setMergePolicy(.objectTrump)
            try await scene.late.save()
            #expect(try await scene.store.context().object(for: scene.id) == nil)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func updatingAnObjectAnotherSaveDeletedFails(_ kind: BackendKind) async throws {
        try await scene(kind, policy: .objectTrump) { scene in
            let deleter = scene.store.context()
            try await deleter.delete(scene.id)
            try await deleter.save()
            try await scene.late.update(scene.id, attributes: ["rank": .int(9)])
            let error = await modelError { try await scene.late.save() }
            #expect(error?.code == .conflict)
            #expect(error?.message.contains("deleted") == true)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func manyWritersLoseNoUpdateUnderObjectTrump(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let setup = store.context()
            var temps: [PersistentIdentifier] = []
            for n in 0..<8 { temps.append(try await setup.insert("Item", attributes: ["title": .string("w\(n)")])) }
            let ids = try await setup.save().remappedIdentifiers
            let items = temps.compactMap { ids[$0] }
            // Each writer owns one attribute of every item; all read first, then all save.
            let writers = (0..<4).map { _ in store.context(mergePolicy: .objectTrump) }
            for writer in writers { _ = try await writer.objects(for: items) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, writer) in writers.enumerated() {
                    group.addTask {
                        for item in items {
                            switch n {
                            case 0: try await writer.update(item, attributes: ["rank": .int(7)])
                            case 1: try await writer.update(item, attributes: ["label": .string("seven")])
                            case 2: try await writer.update(item, attributes: ["count": .int(7)])
                            default: try await writer.update(item, attributes: ["price": .double(7)])
                            }
                        }
                        try await writer.save()
                    }
                }
                try await group.waitForAll()
            }
            for object in try await store.context().objects(for: items) {
                #expect(
                    object["rank"] == .int(7) && object["label"] == .string("seven")
                        && object["count"] == .int(7) && object["price"] == .double(7), "\(object.id)")
                #expect(object.version == 5)
            }
        }
    }
}
