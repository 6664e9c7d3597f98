import Foundation
import ModelClient
import Testing

/// Fetches of part of each object, and of many objects a batch at a time.
/// `FetchDescriptor.propertiesToFetch`: objects come with those attributes only; `load(_:)`
/// brings the rest, and reading one left out before that stops with a message naming it.
@Suite struct FetchOptionsTests {
    @Test(arguments: Backend.everyKind)
    func aFetchReadsTheNamedAttributesAndLoadBringsTheRest(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let writer = ModelContext(container)
            writer.insert(
                Trip(name: "Oslo", destination: "Norway", startDate: day("2026-05-01"), endDate: day("2026-05-02")))
            try await writer.save()

            let context = ModelContext(container)
            var descriptor = FetchDescriptor<Trip>()
            descriptor.propertiesToFetch = [\.name, \.startDate]
            let trip = try #require(try await context.fetch(descriptor).first)
            #expect(trip.name == "Oslo" && trip.startDate == day("2026-05-01"))
            try await context.load([trip])
            #expect(trip.destination == "Norway" && trip.endDate == day("2026-05-02"))

            var relationship = FetchDescriptor<Trip>()
            relationship.propertiesToFetch = [\.bucketList]
            let refused = await modelError { _ = try await context.fetch(relationship) }
            #expect(refused?.code == .invalidArgument)
        }
    }

    /// An object the context knew only by reference (from a relationship it did not prefetch),
    /// then fetched in part, knows which attributes it lacks, and `load(_:)` brings them.
    @Test(arguments: Backend.everyKind)
    func loadBringsTheRestOfAnObjectFirstKnownByReference(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let writer = ModelContext(container)
            let trip = Trip(name: "Oslo", destination: "Norway", startDate: day("2026-05-01"))
            let item = BucketListItem(title: "Fjords", details: "a boat", hasReservation: true, isInPlan: false)
            writer.insert(trip)
            trip.bucketList.append(item)
            try await writer.save()

            let context = ModelContext(container)
            var trips = FetchDescriptor<Trip>()
            trips.relationshipKeyPathsForPrefetching = [\.livingAccommodation]
            let fetchedTrip = try #require(try await context.fetch(trips).first)
            #expect(fetchedTrip.bucketList.count == 1)
            var items = FetchDescriptor<BucketListItem>()
            items.propertiesToFetch = [\.title]
            let fetchedItem = try #require(try await context.fetch(items).first)
            #expect(fetchedItem.title == "Fjords")
            try await context.load([fetchedItem])
            #expect(fetchedItem.details == "a boat" && fetchedItem.hasReservation && !fetchedItem.isInPlan)
        }
    }

    /// A limit of 0 is no limit, as Core Data's, for objects, aggregates and history alike, on
    /// every kind of store (a fetch gave nothing, and history all of it from the daemon and
    /// none from a file).
    @Test(arguments: Backend.everyKind)
    func aLimitOfZeroIsNoLimit(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let context = ModelContext(container)
            for name in ["a", "b", "c"] {
                context.insert(Item(name: name))
                try await context.save()
            }
            var fetch = FetchDescriptor<Item>()
            fetch.fetchLimit = 0
            #expect(try await context.fetch(fetch).count == 3)
            #expect(try await context.fetchHistory(HistoryDescriptor(fetchLimit: 0)).count == 3)
            var limited = FetchDescriptor<Item>()
            limited.fetchLimit = 2
            #expect(try await context.fetch(limited).count == 2)
        }
    }

    @Test func readingAnAttributeLeftOutStopsTheProgramNamingIt() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let container = try await ModelContainer(
                for: Trip.self, PersonalTrip.self, BusinessTrip.self, BucketListItem.self, LivingAccommodation.self,
                configurations: ModelConfiguration(isStoredInMemoryOnly: true))
            let writer = ModelContext(container)
            writer.insert(
                Trip(
                    name: "Oslo", destination: "Norway", startDate: Date(timeIntervalSince1970: 0),
                    endDate: Date(timeIntervalSince1970: 0)))
            try await writer.save()
            var descriptor = FetchDescriptor<Trip>()
            descriptor.propertiesToFetch = [\.name]
            let trip = try await ModelContext(container).fetch(descriptor)[0]
            print(trip.destination)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("Trip.destination of"), "\(message)")
        #expect(message.contains("was not fetched"), "\(message)")
    }

    /// SwiftData's `enumerate(_:batchSize:)`: every object, in order, a batch at a time, the
    /// context keeping none of them afterwards; changes left unsaved only when allowed.
    @Test(arguments: Backend.everyKind)
    func enumerateWalksEveryObjectABatchAtATime(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let writer = ModelContext(container)
            for n in 0..<25 {
                writer.insert(
                    Trip(
                        name: String(format: "trip %02d", n), destination: "X", startDate: day("2026-05-01"),
                        endDate: day("2026-05-02")))
            }
            try await writer.save()

            let context = ModelContext(container)
            var names: [String] = [], ids: [PersistentIdentifier] = []
            try await context.enumerate(
                FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name, order: .reverse)]), batchSize: 10
            ) { trip in
                names.append(trip.name)
                ids.append(trip.persistentModelID)
            }
            #expect(names == (0..<25).reversed().map { String(format: "trip %02d", $0) })
            // Nothing of the walk is kept.
            #expect(ids.allSatisfy { (context.registeredModel(for: $0) as Trip?) == nil })

            let refused = await modelError {
                try await context.enumerate(FetchDescriptor<Trip>(), batchSize: 10) { $0.destination = "Z" }
            }
            #expect(refused?.code == .invalidArgument)
            await context.rollback()
            try await context.enumerate(FetchDescriptor<Trip>(), batchSize: 10, allowEscapingMutations: true) {
                $0.destination = "Z"
            }
            #expect(context.changedModelsArray.count == 25)
            try await context.save()
            #expect(
                try await ModelContext(container).fetchCount(
                    FetchDescriptor<Trip>(predicate: #Predicate { $0.destination == "Z" })) == 25)
        }
    }
}
