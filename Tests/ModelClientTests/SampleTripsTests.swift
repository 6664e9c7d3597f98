import Foundation
import ModelClient
import Testing

/// Apple's SampleTrips, on the daemon and on an embedded SQLite file, with the same test bodies.
@Suite struct SampleTripsTests {
    @Test(arguments: Backend.allCases)
    func insertSaveAndFetchSorted(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            let paris = Trip(name: "Paris", destination: "France", startDate: day("2026-03-01"), endDate: day("2026-03-10"))
            let kyoto = PersonalTrip(name: "Kyoto", destination: "Japan", startDate: day("2026-04-01"), endDate: day("2026-04-09"), reason: .family)
            let berlin = BusinessTrip(name: "Berlin", destination: "Germany", startDate: day("2026-02-01"), endDate: day("2026-02-03"), perdiem: 120)
            context.insert(paris)
            context.insert(kyoto)
            context.insert(berlin)
            #expect(context.hasChanges)
            #expect(paris.persistentModelID.isTemporary)
            try await context.save()
            #expect(!context.hasChanges)
            #expect(!paris.persistentModelID.isTemporary)
            #expect(paris.persistentModelID.storeIdentifier == container.storeIdentifier)

            // Another context reads them back from the store, with their classes.
            let reader = ModelContext(container)
            let trips = try await reader.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.startDate, order: .forward)]))
            #expect(trips.map(\.name) == ["Berlin", "Paris", "Kyoto"])
            #expect(trips.map { String(describing: type(of: $0)) } == ["BusinessTrip", "Trip", "PersonalTrip"])
            #expect((trips[0] as? BusinessTrip)?.perdiem == 120)
            #expect((trips[2] as? PersonalTrip)?.reason == .family)
            #expect(trips[1].endDate == day("2026-03-10"))
            #expect(trips.map(\.persistentModelID) == [berlin, paris, kyoto].map(\.persistentModelID))
        }
    }

    @Test(arguments: Backend.allCases)
    func relationshipsAndInverses(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            let trip = Trip(name: "Lisbon", destination: "Portugal", startDate: day("2026-05-01"), endDate: day("2026-05-05"))
            context.insert(trip)
            let tram = BucketListItem(title: "Tram 28", details: "", hasReservation: false, isInPlan: true)
            let fado = BucketListItem(title: "Fado", details: "Alfama", hasReservation: true, isInPlan: true)
            trip.bucketList.append(tram)
            fado.trip = trip
            #expect(trip.bucketList.map(\.title).sorted() == ["Fado", "Tram 28"])
            #expect(tram.trip === trip)
            let stay = LivingAccommodation(address: "Rua Augusta 1", placeName: "Hotel", isConfirmed: false)
            trip.livingAccommodation = stay
            #expect(stay.trip === trip)
            try await context.save()

            let reader = ModelContext(container)
            let fetched = try #require(try await reader.fetch(FetchDescriptor<Trip>()).first)
            #expect(Set(fetched.bucketList.map(\.title)) == ["Fado", "Tram 28"])
            #expect(fetched.livingAccommodation?.placeName == "Hotel")
            #expect(fetched.bucketList.allSatisfy { $0.trip === fetched })
        }
    }
}
