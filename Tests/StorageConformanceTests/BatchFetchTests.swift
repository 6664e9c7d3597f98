import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import Synchronization
import Testing

/// Fetching objects batch by batch (`fetchObjects`), as the daemon streams big fetches: the
/// batches are the fetch, in order, and a consumer that stops early frees what it held.
@Suite struct BatchFetchTests {
    /// 300 books by 150 authors, each book by one or two of them (a join table to read).
    static func library(_ store: TestStore) async throws {
        var c = store.changes()
        let authors = (0..<150).map { c.insert("Author", ["name": .string("A\(String(format: "%03d", $0))")]) }
        for index in 0..<300 {
            let book = c.insert("Book", ["title": .string("B\(String(format: "%03d", (index * 7) % 300))")])
            c.link(book, "authors", authors[index % 150])
            if index % 3 == 0 { c.link(book, "authors", authors[(index + 1) % 150]) }
        }
        try await store.save(c)
    }

    /// Every batch, with whether it was prefetched.
    static func batches(_ store: TestStore, _ descriptor: FetchDescriptor, size: Int) async throws -> (
        batches: [([ObjectSnapshot], Bool)], count: Int
    ) {
        let collected = Mutex<[([ObjectSnapshot], Bool)]>([])
        let count = try await store.backend.fetchObjects(descriptor, batchSize: size) { batch, prefetched in
            collected.withLock { $0.append((batch, prefetched)) }
        }
        return (collected.withLock { $0 }, count)
    }

    @Test(arguments: BackendKind.allCases)
    func batchesAreTheFetchInOrder(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Self.library(store)
            let descriptors = [
                FetchDescriptor(entityName: "Book", sortBy: [try SortDescriptor(parsing: "title")]),
                FetchDescriptor(
                    entityName: "Book",
                    predicate: try PredicateParser.parse("title BEGINSWITH 'B1' OR ANY authors.name == 'A007'"),
                    sortBy: [try SortDescriptor(parsing: "-title")], offset: 5, limit: 70),
                FetchDescriptor(
                    entityName: "Author", sortBy: [try SortDescriptor(parsing: "name")], propertiesToFetch: ["books"]),
            ]
            for descriptor in descriptors {
                let whole = try await store.backend.fetch(descriptor).objects
                #expect(whole.count > 40, "\(descriptor)")
                let (batches, count) = try await Self.batches(store, descriptor, size: 32)
                #expect(count == whole.count)
                #expect(batches.flatMap(\.0) == whole, "\(descriptor)")
                #expect(batches.allSatisfy { !$0.1 })
                // Full batches until the last.
                #expect(
                    batches.dropLast().allSatisfy { $0.0.count == 32 } && (1...32).contains(batches.last?.0.count ?? 0))
            }
            // Relationships come with each batch: the join table was read for it.
            let authors = try await Self.batches(
                store, FetchDescriptor(entityName: "Author", sortBy: [try SortDescriptor(parsing: "name")]), size: 10)
            #expect(
                authors.batches.flatMap(\.0).allSatisfy { author in
                    if case .toMany(let books) = author.relationships["books"] { return !books.isEmpty }
                    return false
                })
        }
    }

    @Test(arguments: BackendKind.allCases)
    func prefetchedObjectsFollowTheResults(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Self.library(store)
            let descriptor = FetchDescriptor(
                entityName: "Book", predicate: try PredicateParser.parse("title < 'B050'"),
                sortBy: [try SortDescriptor(parsing: "title")], relationshipKeyPathsForPrefetching: ["authors"])
            guard case .objects(let results, let prefetched) = try await store.backend.fetch(descriptor) else {
                Issue.record("not objects")
                return
            }
            #expect(!prefetched.isEmpty)
            let (batches, count) = try await Self.batches(store, descriptor, size: 16)
            #expect(count == results.count)
            #expect(batches.filter { !$0.1 }.flatMap(\.0) == results)
            #expect(batches.filter(\.1).flatMap(\.0) == prefetched)
            // No prefetched batch comes before the last result batch.
            #expect(batches.map(\.1) == batches.map(\.1).sorted { !$0 && $1 })
        }
    }

    /// A consumer that throws, or whose task is cancelled, ends the read: the store's readers are
    /// free afterwards (more abandoned fetches than any pool has readers, then a fetch and a save).
    /// The time limit catches a read that is never freed; it is generous because, at the start of
    /// the whole suite on two cores, this test's two cases take 45-70 s between them (a second
    /// alone).
    @Test(.timeLimit(.minutes(3)), arguments: BackendKind.allCases)
    func aConsumerThatStopsFreesTheStore(_ kind: BackendKind) async throws {
        struct Enough: Error {}
        try await withStore(kind, Catalog.schema) { store in
            try await Self.library(store)
            let descriptor = FetchDescriptor(entityName: "Book", sortBy: [try SortDescriptor(parsing: "title")])
            for _ in 0..<12 {
                await #expect(throws: Enough.self) {
                    try await store.backend.fetchObjects(descriptor, batchSize: 8) { _, _ in throw Enough() }
                }
            }
            for _ in 0..<12 {
                // The consumer waits on a stream that never yields until its task is cancelled
                // (not on Task.sleep: a sleep cancelled at the wrong moment was seen to hang
                // for good on Linux, its task never resumed and its timer gone).
                let (firstBatch, reached) = AsyncStream<Void>.makeStream()
                let task = Task {
                    try await store.backend.fetchObjects(descriptor, batchSize: 8) { _, _ in
                        reached.yield()
                        let (never, keptOpen) = AsyncStream<Void>.makeStream()
                        for await _ in never {}
                        keptOpen.finish()
                        throw CancellationError()
                    }
                }
                for await _ in firstBatch { break }
                task.cancel()
                let outcome = await task.result
                #expect(throws: (any Error).self) { try outcome.get() }
            }
            #expect(try await store.backend.fetch(descriptor).objects.count == 300)
            var c = store.changes()
            _ = c.insert("Author", ["name": .string("Late")])
            try await store.save(c)
            #expect(
                try await store.backend.fetch(FetchDescriptor(entityName: "Author", resultType: .count)).count == 151)
        }
    }
}
