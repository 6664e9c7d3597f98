import Foundation
import ModelClient
import ModelTesting
import Testing

/// Live queries in ModelClient: `observe` and `observeCount` over the daemon, an embedded SQLite
/// file and memory, with the same bodies.
@Suite(.timeLimit(.minutes(2)))
struct ObservationTests {
    enum Store: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case daemon
        case embedded
        case memory

        var testDescription: String { rawValue }

        func withContainer(_ body: (ModelContainer) async throws -> Void) async throws {
            switch self {
            case .daemon: try await Backend.daemon.withContainer(for: [Trip.self], body)
            case .embedded: try await Backend.embedded.withContainer(for: [Trip.self], body)
            case .memory:
                let container = try await ModelContainer(
                    for: Trip.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
                try await body(container)
                await container.close()
            }
        }
    }

    @Test(arguments: Store.allCases)
    func anObservedFetchFollowsEverySave(_ store: Store) async throws {
        try await store.withContainer { container in
            let reader = ModelContext(container)
            let writer = ModelContext(container)
            let descriptor = FetchDescriptor<Trip>(
                predicate: #Predicate { $0.destination != "nowhere" }, sortBy: [SortDescriptor(\.name)])
            var results = try reader.observe(descriptor).makeAsyncIterator()
            let first = try #require(try await results.next())
            #expect(first.models.isEmpty)
            #expect(first.difference == nil)

            let paris = Trip(name: "Paris", destination: "France", startDate: day("2026-05-01"))
            let rome = Trip(name: "Rome", destination: "Italy", startDate: day("2026-06-01"))
            writer.insert(paris)
            writer.insert(rome)
            try await writer.save()
            let second = try #require(try await results.next())
            #expect(second.models.map(\.name) == ["Paris", "Rome"])
            #expect(second.difference?.insertions.count == 2)
            #expect(first.models.applying(try #require(second.difference))?.map(\.name) == ["Paris", "Rome"])

            // A save the predicate does not match brings nothing; renaming Paris moves it.
            writer.insert(Trip(name: "Limbo", destination: "nowhere", startDate: day("2026-07-01")))
            try await writer.save()
            paris.name = "Toulouse"
            try await writer.save()
            let third = try #require(try await results.next())
            #expect(third.models.map(\.name) == ["Rome", "Toulouse"])
            #expect(third.updated.map(\.name) == ["Toulouse"])
            let moved = try #require(third.difference)
            #expect(second.models.applying(moved)?.map(\.persistentModelID) == third.models.map(\.persistentModelID))
            #expect(
                moved.insertions.contains {
                    if case .insert(_, _, let associated) = $0 { associated != nil } else { false }
                })
            // The reader's models are its own, with the saved values.
            #expect(third.models.map(\.destination) == ["Italy", "France"])

            writer.delete(rome)
            try await writer.save()
            let fourth = try #require(try await results.next())
            #expect(fourth.models.map(\.name) == ["Toulouse"])
            #expect(fourth.difference?.removals.count == 1)
            #expect(fourth.token != nil && fourth.token != third.token)
        }
    }

    /// An observed fetch's models come with their relationships' objects loaded, as a fetch's
    /// do; `propertiesToFetch` leaves the other attributes for `load(_:)`.
    @Test(arguments: Store.allCases)
    func observedModelsComeWithTheirRelatedObjects(_ store: Store) async throws {
        try await store.withContainer { container in
            let writer = ModelContext(container)
            let trip = Trip(name: "Oslo", destination: "Norway", startDate: day("2026-05-01"))
            writer.insert(trip)
            trip.bucketList.append(
                BucketListItem(title: "Fjords", details: "a boat", hasReservation: true, isInPlan: false))
            try await writer.save()

            let reader = ModelContext(container)
            var results = try reader.observe(FetchDescriptor<Trip>()).makeAsyncIterator()
            let first = try #require(try await results.next())
            #expect(first.models.first?.bucketList.map(\.title) == ["Fjords"])
            #expect(first.models.first?.bucketList.first?.details == "a boat")

            trip.bucketList.append(
                BucketListItem(title: "Trolls", details: "a hike", hasReservation: false, isInPlan: true))
            try await writer.save()
            let second = try #require(try await results.next())
            #expect(Set(second.models.first?.bucketList.map(\.details) ?? []) == ["a boat", "a hike"])

            var part = FetchDescriptor<Trip>()
            part.propertiesToFetch = [\.name]
            let partial = ModelContext(container)
            var names = try partial.observe(part).makeAsyncIterator()
            let observed = try #require(try await names.next()?.models.first)
            #expect(observed.name == "Oslo")
            try await partial.load([observed])
            #expect(observed.destination == "Norway")
        }
    }

    @Test(arguments: Store.allCases)
    func countsAndAggregatesAreObservedToo(_ store: Store) async throws {
        try await store.withContainer { container in
            let reader = ModelContext(container)
            let writer = ModelContext(container)
            var counts = try reader.observeCount(
                FetchDescriptor<Trip>(predicate: #Predicate { $0.destination == "Italy" })
            )
            .makeAsyncIterator()
            var groups = try reader.observe(
                AggregateDescriptor<Trip>(groupBy: [\.destination], aggregates: [.count()])
            ).makeAsyncIterator()
            #expect(try await counts.next() == 0)
            #expect(try await groups.next()?.isEmpty == true)
            writer.insert(Trip(name: "Rome", destination: "Italy", startDate: day("2026-06-01")))
            writer.insert(Trip(name: "Milan", destination: "Italy", startDate: day("2026-06-02")))
            writer.insert(Trip(name: "Oslo", destination: "Norway", startDate: day("2026-06-03")))
            try await writer.save()
            #expect(try await counts.next() == 2)
            let rows = try #require(try await groups.next())
            #expect(rows.map { $0[\.destination] } == ["Italy", "Norway"])
            #expect(rows.map { $0.count() } == [2, 1])
        }
    }

    /// Another process's container on the same file: its saves reach an embedded observation
    /// (the container polls the file's history every 100 ms).
    @Test func anotherContainerOnTheFileIsHeard() async throws {
        let directory = try TemporaryDirectory.make(prefix: "observe")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = URL(string: "sqlite://" + directory.appendingPathComponent("store.sqlite").path)!
        let mine = try await ModelContainer(for: [Trip.self], configuration: ModelConfiguration(url: url))
        let theirs = try await ModelContainer(for: [Trip.self], configuration: ModelConfiguration(url: url))
        var counts = try ModelContext(mine).observeCount(FetchDescriptor<Trip>()).makeAsyncIterator()
        #expect(try await counts.next() == 0)
        let writer = ModelContext(theirs)
        writer.insert(Trip(name: "Rome", destination: "Italy"))
        try await writer.save()
        #expect(try await counts.next() == 1)
        await theirs.close()
        await mine.close()
    }
}
