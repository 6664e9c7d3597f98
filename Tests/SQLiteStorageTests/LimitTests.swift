import Foundation
import ModelCore
import ModelFixtures
import SQLiteStorage
import Testing

/// What the SQLite backend does at its limits: a caller that gives up, a full store, a check of
/// the file's soundness.
@Suite struct LimitTests {
    /// 2,000 people with 20 friends each: a three-level SUBQUERY over them is millions of steps.
    static func friends(_ store: SQLiteStore) async throws {
        var changes = ChangeSet()
        let people = (0..<2_000).map { _ in store.temporary("Person") }
        for (index, person) in people.enumerated() {
            let friends = (1...20).map { people[(index * 7 + $0 * 13) % people.count] }
            changes.inserts.append(
                InsertedObject(
                    id: person, attributes: ["name": .string("p\(index)")],
                    relationships: ["friends": .toMany(added: friends, removed: [])]))
        }
        _ = try await store.save(changes)
    }

    static let slow =
        "SUBQUERY(friends, $f, SUBQUERY($f.friends, $g, SUBQUERY($g.friends, $h, $h.name LIKE \"*zz*\").@count > 0).@count > 0).@count > 0"

    /// Cancelling the caller interrupts the statement under way: the call ends with `cancelled`
    /// long before the query would, and the connection serves the next call.
    @Test func cancellingACallInterruptsItsQuery() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await Self.friends(store)
            let query = Task {
                try await store.fetch(
                    FetchDescriptor(
                        entityName: "Person", predicate: try PredicateParser.parse(Self.slow),
                        resultType: .count))
            }
            try await Task.sleep(for: .milliseconds(200))
            query.cancel()
            let error = await modelError { _ = try await query.value }
            #expect(
                error?.code == .cancelled,
                "the query finished before it was cancelled, or failed otherwise: \(String(describing: error))")
            // The readers are free again.
            for _ in 0..<4 {
                #expect(try await store.fetch(FetchDescriptor(entityName: "Person", resultType: .count)).count == 2_000)
            }
        }
    }

    /// Work cancelled before it reaches its connection is dropped, not run.
    @Test func cancelledBeforeStartingIsDropped() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await Self.friends(store)
            let tasks = (0..<6).map { _ in
                Task {
                    try await store.fetch(
                        FetchDescriptor(
                            entityName: "Person", predicate: try PredicateParser.parse(Self.slow), resultType: .count))
                }
            }
            try await Task.sleep(for: .milliseconds(100))
            for task in tasks { task.cancel() }
            for task in tasks {
                let error = await modelError { _ = try await task.value }
                #expect(error?.code == .cancelled)
            }
        }
    }

    /// Reads of a few objects by key run on the caller's thread when a reader is idle and queue
    /// otherwise; either way they answer correctly while slow queries hold the readers, and
    /// cancelling those queries interrupts them, never a read by key.
    @Test func readsByKeyAnswerWhileSlowQueriesAreCancelled() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await Self.friends(store)
            let people = try await store.objects("Person", sort: ["name"])
            let wanted = Array(people.prefix(40))
            for round in 0..<3 {
                let slow = (0..<(round + 1)).map { _ in
                    Task {
                        try await store.fetch(
                            FetchDescriptor(
                                entityName: "Person", predicate: try PredicateParser.parse(Self.slow),
                                resultType: .count))
                    }
                }
                let reads = Task {
                    var answered = 0
                    for person in wanted {
                        let found = try await store.snapshots(for: [person.id])
                        if found == [person] { answered += 1 }
                    }
                    return answered
                }
                try await Task.sleep(for: .milliseconds(50))
                for task in slow { task.cancel() }
                #expect(try await reads.value == wanted.count)
                for task in slow {
                    let error = await modelError { _ = try await task.value }
                    #expect(error?.code == .cancelled, "\(String(describing: error))")
                }
            }
        }
    }

    /// Queries are tried on the caller's thread: a quick one answers there, one that runs past
    /// the budget moves to a reader's queue and gives the same answer as if it had started
    /// there, whatever its result type, and a grouped aggregate does the same.
    @Test func longQueriesMoveToAReaderAndAnswerTheSame() async throws {
        try await withStore(Catalog.schema) { store, _ in
            try await Self.friends(store)
            // Person i's friends are people (7i + 13k) mod 2000, k = 1...20, named "p<index>".
            let expected = (0..<2_000).filter { index in
                (1...20).contains { String((index * 7 + $0 * 13) % 2_000).hasPrefix("1") }
            }.count
            #expect(expected > 100 && expected < 2_000)

            let quick = try await store.fetch(FetchDescriptor(entityName: "Person", resultType: .count)).count
            #expect(quick == 2_000)
            #expect(store.readsMovedToReaderQueues == 0)

            // About a million SQLite steps: over the budget, well under a second.
            let predicate = try PredicateParser.parse("SUBQUERY(friends, $f, $f.name BEGINSWITH \"p1\").@count > 0")
            let counted = try await store.fetch(
                FetchDescriptor(entityName: "Person", predicate: predicate, resultType: .count)
            ).count
            #expect(counted == expected)
            #expect(store.readsMovedToReaderQueues == 1)
            let identified = try await store.fetch(
                FetchDescriptor(entityName: "Person", predicate: predicate, resultType: .identifiers))
            #expect(identified.identifiers.count == expected)
            let objects = try await store.fetch(FetchDescriptor(entityName: "Person", predicate: predicate))
            #expect(objects.count == expected)
            let rows = try await store.aggregate(
                AggregateDescriptor(
                    entityName: "Person", predicate: predicate,
                    aggregations: [Aggregation("n", .count)]), overlay: nil)
            #expect(rows == [["n": .int(Int64(expected))]])
            #expect(store.readsMovedToReaderQueues == 4)
        }
    }

    /// A store at its size limit refuses saves with resourceExhausted, keeps serving reads and
    /// keeps what it has; with room again, it takes saves.
    @Test func aFullStoreRefusesSavesAndRecovers() async throws {
        try await withStore(Catalog.schema) { store, _ in
            let kept = try await store.insert("Library", [["name": .string("kept")]])
            try await store.setMaximumFileSize(200 * 1024)
            let big = String(repeating: "x", count: 100_000)
            var failure: ModelError?
            for index in 0..<20 where failure == nil {
                failure = await modelError { try await store.insert("Library", [["name": .string("\(index) \(big)")]]) }
            }
            #expect(failure?.code == .resourceExhausted, "\(String(describing: failure))")
            #expect(failure?.message.contains("is full") == true, "\(String(describing: failure))")
            let stored = try await store.fetch(FetchDescriptor(entityName: "Library", resultType: .count)).count
            #expect(try await store.snapshots(for: kept).first?["name"] == .string("kept"))
            #expect(try await store.integrityCheck() == ["ok"])

            try await store.setMaximumFileSize(nil)
            try await store.insert("Library", [["name": .string(big)]])
            #expect(
                try await store.fetch(FetchDescriptor(entityName: "Library", resultType: .count)).count == stored + 1)
        }
    }
}
