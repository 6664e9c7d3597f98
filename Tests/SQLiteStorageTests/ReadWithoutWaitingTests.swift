import Dispatch
import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// A point read the daemon answers where it read the request (`snapshotsWithoutWaiting`): the
/// same objects as `snapshots(for:)` while a reader is free, and nothing read (nil) when every
/// reader has work, so that the event loop never waits for one.
@Suite struct ReadWithoutWaitingTests {

    @Test func answersAsSnapshotsDoWhileAReaderIsFreeAndNilWhenNoneIs() async throws {
        try await withStore(Catalog.schema) { store, _ in
            let shelf = store.temporary("Shelf"), item = store.temporary("Item")
            let saved = try await store.save(
                ChangeSet(
                    inserts: [
                        InsertedObject(id: shelf, attributes: ["name": .string("top")]),
                        InsertedObject(
                            id: item, attributes: ["title": .string("lamp"), "rank": .int(3)],
                            relationships: ["shelf": .toOne(shelf)]),
                    ]))
            let shelfID = try #require(saved.remappedIdentifiers[shelf])
            let itemID = try #require(saved.remappedIdentifiers[item])
            let missing = PersistentIdentifier(
                storeIdentifier: store.storeIdentifier, entityName: "Item", key: .permanent(999))
            // An item (its row holds its one relationship: one statement), a shelf (its to-many
            // items are read by a second statement, in the same transaction), and one missing.
            for ids in [[itemID], [shelfID], [itemID, shelfID, missing]] {
                let atOnce = try #require(try store.snapshotsWithoutWaiting(for: ids))
                #expect(atOnce == (try await store.snapshots(for: ids)))
                #expect(atOnce.map(\.id) == ids.filter { $0 != missing })
            }
            let shelfRead = try #require(try store.snapshotsWithoutWaiting(for: [shelfID])?.first)
            #expect(shelfRead.toMany("items") == [itemID])
            #expect(try store.snapshotsWithoutWaiting(for: [itemID])?.first?["title"] == .string("lamp"))

            // More than a short read's worth of objects is left to snapshots(for:).
            #expect(try store.snapshotsWithoutWaiting(for: Array(repeating: itemID, count: 9)) == nil)

            // Every reader held: nothing is read.
            let readers = store.readers.readerCount
            let gate = DispatchSemaphore(value: 0)
            let (holding, reached) = AsyncStream<Void>.makeStream()
            let pool = store.readers
            let held = (0..<readers).map { _ in
                Task {
                    try await pool.run(.queue) { _ in
                        reached.yield()
                        gate.wait()
                    }
                }
            }
            // Each held read says when its reader has it.
            var holdingReaders = 0
            for await _ in holding {
                holdingReaders += 1
                if holdingReaders == readers { break }
            }
            #expect(holdingReaders == readers)
            #expect(try store.snapshotsWithoutWaiting(for: [itemID]) == nil)
            #expect(try store.fetchWithoutWaiting(FetchDescriptor(entityName: "Item")) == nil)
            var rows = ReadRowsWithoutWaitingTests.Collected()
            #expect(try store.fetchWithoutWaiting(FetchDescriptor(entityName: "Item"), into: &rows) == nil)
            #expect(try !store.objectsWithoutWaiting(for: [itemID], into: &rows))
            #expect(rows.all.isEmpty)
            for _ in 0..<readers { gate.signal() }
            for task in held { try await task.value }
            #expect(try store.snapshotsWithoutWaiting(for: [itemID])?.map(\.id) == [itemID])
        }
    }

    /// A fetch tried at once gives what `fetch(_:)` gives (objects, identifiers, counts, and the
    /// same error for an unknown entity); one that runs past its short budget is dropped (nil),
    /// and `fetch(_:)` still answers it in full.
    @Test func fetchesWithoutWaitingAnswerAsFetchesDoOrGiveWayWhenLong() async throws {
        try await withStore(Catalog.schema) { store, _ in
            let items = (0..<20_000).map { n in
                InsertedObject(
                    id: store.temporary("Item"),
                    attributes: ["title": .string("item \(n)"), "rank": .int(Int64(n % 97))])
            }
            _ = try await store.save(ChangeSet(inserts: items))
            let sorted = [SortDescriptor(PropertyPath(["rank"])), SortDescriptor(PropertyPath(["title"]))]
            let small = [
                FetchDescriptor(entityName: "Item", sortBy: sorted, limit: 5),
                FetchDescriptor(entityName: "Item", sortBy: sorted, limit: 5, resultType: .identifiers),
                FetchDescriptor(
                    entityName: "Item", predicate: try PredicateParser.parse("rank == 3"), resultType: .count),
            ]
            for descriptor in small {
                let atOnce = try #require(try store.fetchWithoutWaiting(descriptor), "\(descriptor)")
                #expect(atOnce == (try await store.fetch(descriptor)), "\(descriptor)")
            }
            #expect(try store.fetchWithoutWaiting(small[2])?.count == (0..<20_000).filter { $0 % 97 == 3 }.count)
            let unknown = FetchDescriptor(entityName: "Nobody")
            let error = #expect(throws: ModelError.self) { _ = try store.fetchWithoutWaiting(unknown) }
            #expect(error?.code == .unknownEntity)

            // Every title compared with a pattern: more steps than the first try's budget.
            let long = FetchDescriptor(
                entityName: "Item", predicate: try PredicateParser.parse("title LIKE \"*zz*\""), resultType: .count)
            #expect(try store.fetchWithoutWaiting(long) == nil)
            #expect(try await store.fetch(long) == .count(0))
        }
    }
}
