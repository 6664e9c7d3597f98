import Foundation
import ModelClient
import Testing

/// `FetchDescriptor.propertiesToFetch`: objects come with those attributes only; `load(_:)`
/// brings the rest, and reading one left out before that stops with a message naming it.
@Suite struct PropertiesToFetchTests {
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
}
