import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Saves: versions, optimistic-concurrency conflicts, key allocation, temporary → permanent
/// remaps, skipped deletes.
@Suite struct SaveTests {
    @Test(arguments: BackendKind.allCases)
    func versionsStartAtOneAndGrowByOne(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let shelf = c.insert("Shelf", ["name": .string("S")])
            let item = c.insert("Item", ["title": .string("i")])
            let first = try await store.save(c)
            #expect(first.result.versions == [first[shelf]: 1, first[item]: 1])
            #expect(try await store.snapshot(first[item]).version == 1)

            var u = store.changes()
            u.update(first[item], ["title": .string("i2")], expectedVersion: 1)
            #expect(try await store.save(u).result.versions == [first[item]: 2])
            var v = store.changes()
            v.update(first[item], ["title": .string("i3")])
            v.link(first[item], "shelf", first[shelf])
            #expect(try await store.save(v).result.versions == [first[item]: 3, first[shelf]: 2])
            var w = store.changes()
            w.update(first[item])
            #expect(try await store.save(w).result.versions == [first[item]: 4])
            #expect(try await store.snapshot(first[item]).version == 4)
            #expect(try await store.snapshot(first[shelf]).version == 2)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func conflictsCarryCurrentSnapshotsAndWriteNothing(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            var u = store.changes()
            u.update(ids[0], ["count": .int(6)], expectedVersion: 1)
            try await store.save(u)
            var gone = store.changes()
            gone.delete(ids[5])
            try await store.save(gone)
            let before = try await store.dump()

            var c = store.changes()
            c.update(ids[0], ["count": .int(7)], expectedVersion: 1)
            c.update(ids[1], ["count": .int(7)], expectedVersion: 1)
            c.insert("Item", ["title": .string("new")])
            c.delete(ids[2], expectedVersion: 5)
            c.delete(ids[3])
            c.update(ids[5], ["count": .int(1)], expectedVersion: 1)
            do {
                try await store.save(c)
                Issue.record("the save should have conflicted")
            } catch let conflicts as SaveConflicts {
                let current0 = try await store.snapshot(ids[0])
                let current2 = try await store.snapshot(ids[2])
                #expect(
                    Set(conflicts.conflicts) == [
                        SaveConflicts.Conflict(id: ids[0], expectedVersion: 1, current: current0),
                        SaveConflicts.Conflict(id: ids[5], expectedVersion: 1, current: nil),
                        SaveConflicts.Conflict(id: ids[2], expectedVersion: 5, current: current2),
                    ])
                #expect(current0.version == 2 && current0["count"] == .int(6))
            }
            #expect(try await store.dump() == before)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func updatesOfMissingObjectsFailAndDeletesOfThemAreSkipped(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            var u = store.changes()
            u.update(store.id("Item", 99), ["title": .string("x")])
            #expect(await modelError { try await store.save(u) }?.code == .notFound)

            var d = store.changes()
            d.delete(store.id("Item", 99))
            d.delete(store.id("Shelf", 1))
            let skipped = try await store.save(d)
            #expect(skipped.result == SaveResult())
            #expect(try await store.backend.currentHistoryToken() == HistoryToken(1))

            var twice = store.changes()
            twice.delete(ids[0])
            twice.delete(ids[0])
            let result = try await store.save(twice)
            #expect(result.result.token == HistoryToken(2))
            #expect(try await store.backend.history(after: HistoryToken(1), limit: nil).first?.changes.count == 1)
            #expect(try await store.backend.snapshots(for: [ids[0]]).isEmpty)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func keysComeFromOneSequencePerHierarchyAndAreNeverReused(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            func insert(_ entities: [String]) async throws -> [Int64] {
                var c = store.changes()
                let ids = entities.map { entity in
                    entity == "BucketListItem"
                        ? c.insert(entity, ["title": .string("t")])
                        : c.insert(
                            entity,
                            [
                                "name": .string("\(entity) \(UUID())"), "destination": .string("d"),
                                "startDate": date("2026-01-01"), "endDate": date("2026-01-02"),
                            ])
                }
                let saved = try await store.save(c)
                return ids.map { saved[$0].primaryKey ?? 0 }
            }
            #expect(try await insert(["Trip", "PersonalTrip", "BusinessTrip"]) == [1, 2, 3])
            #expect(try await insert(["BucketListItem", "PersonalTrip"]) == [1, 4])
            var d = store.changes()
            d.delete(store.id("Trip", 4))
            d.delete(store.id("Trip", 2))
            try await store.save(d)
            #expect(try await insert(["PersonalTrip", "Trip"]) == [5, 6])
            var e = store.changes()
            e.delete(store.id("Trip", 6))
            e.delete(store.id("Trip", 5))
            try await store.save(e)
            #expect(try await insert(["Trip"]) == [7])
            #expect(try await store.fetch("Trip").compactMap(\.id.primaryKey) == [1, 3, 7])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func temporaryIdentifiersAreRemappedEverywhere(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let library = c.insert("Library", ["name": .string("L")])
            let shelf = c.insert("Shelf", ["name": .string("S")])
            let items = (0..<3).map { c.insert("Item", ["title": .string("i\($0)")]) }
            c.link(shelf, "library", library)
            for item in items.reversed() { c.link(item, "shelf", shelf) }
            let saved = try await store.save(c)
            #expect(Set(saved.result.remappedIdentifiers.keys) == Set([library, shelf] + items))
            for (temporary, permanent) in saved.result.remappedIdentifiers {
                #expect(!permanent.isTemporary && permanent.entityName == temporary.entityName)
                #expect(permanent.storeIdentifier == store.storeIdentifier)
                #expect(saved.result.versions[permanent] == 1)
            }
            #expect(items.map { saved[$0] } == [store.id("Item", 1), store.id("Item", 2), store.id("Item", 3)])
            #expect(
                try await store.snapshot(saved[shelf]).relationships == [
                    "items": .toMany(items.map { saved[$0] }), "library": .toOne(saved[library]),
                ])
            #expect(try await store.snapshot(saved[library]).toMany("shelves") == [saved[shelf]])
            #expect(try await store.snapshot(saved[items[2]]).toOne("shelf") == saved[shelf])
        }
    }
}
