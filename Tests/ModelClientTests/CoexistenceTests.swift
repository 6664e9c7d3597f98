import Foundation
import ModelClient
import ModelTesting
import Testing

/// Apple's coexistence sample, on Linux: the app's stack talks to the daemon, the widget's stack
/// opens the daemon's store file in-process; they exchange objects by URI and learn of each
/// other's changes from the store's history.
@Suite struct CoexistenceTests {
    @Test func twoStacksShareOneStoreFile() async throws {
        try await withTestStore { store in
            let appContainer = try await ModelContainer(
                for: sampleTripsModels, configuration: ModelConfiguration(url: store.url))
            let app = ModelContext(appContainer)
            app.author = "app"
            let trip = Trip(
                name: "Kyoto", destination: "Japan", startDate: day("2026-04-01"), endDate: day("2026-04-09"))
            app.insert(trip)
            trip.livingAccommodation = LivingAccommodation(address: "Gion 1", placeName: "Ryokan", isConfirmed: false)
            try await app.save()
            let token = try await appContainer.currentHistoryToken()
            // What the app hands the widget: a URI.
            let uri = try #require(trip.livingAccommodation).persistentModelID.uriRepresentation

            // The widget: the same models, on the daemon's store file, in this process.
            let path = try #require(store.info.path)
            let widgetContainer = try await ModelContainer(
                for: sampleTripsModels, configuration: ModelConfiguration(url: URL(string: "sqlite://" + path)!))
            #expect(widgetContainer.storeIdentifier == appContainer.storeIdentifier)
            let widget = ModelContext(widgetContainer)
            widget.author = "widget"
            let accommodation = try #require(
                try await widget.model(for: PersistentIdentifier(uri: uri), as: LivingAccommodation.self))
            #expect(accommodation.placeName == "Ryokan" && accommodation.trip?.name == "Kyoto")
            accommodation.isConfirmed = true
            // The widget also adds to the trip: identifiers it allocates don't collide with the daemon's.
            accommodation.trip?.bucketList.append(
                BucketListItem(title: "Fushimi Inari", details: "", hasReservation: false, isInPlan: true))
            try await widget.save()

            // The app finds the trips whose accommodation the widget changed, from history (the
            // sample's findTransactions and findTrips).
            let transactions = try await app.fetchHistory(HistoryDescriptor(after: token, author: "widget"))
            #expect(transactions.count == 1 && transactions[0].author == "widget")
            var changedTrips: [Trip] = []
            for transaction in transactions {
                for change in transaction.changes {
                    guard case .update(let update as DefaultHistoryUpdate<LivingAccommodation>) = change,
                        update.updatedAttributes.contains(\.isConfirmed),
                        let changed = try await app.model(
                            for: update.changedPersistentIdentifier, as: LivingAccommodation.self),
                        let owner = changed.trip
                    else { continue }
                    changedTrips.append(owner)
                }
            }
            #expect(changedTrips.count == 1 && changedTrips.first === trip)
            // The app's objects take the widget's values when it fetches.
            _ = try await app.fetch(FetchDescriptor<Trip>())
            #expect(trip.livingAccommodation?.isConfirmed == true)
            #expect(trip.bucketList.map(\.title) == ["Fushimi Inari"])

            // And back: what the app saves through the daemon, the widget reads from the file.
            app.insert(
                Trip(name: "Osaka", destination: "Japan", startDate: day("2026-04-10"), endDate: day("2026-04-12")))
            try await app.save()
            let names = try await ModelContext(widgetContainer).fetch(
                FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)])
            ).map(\.name)
            #expect(names == ["Kyoto", "Osaka"])
            let widgetTransactions = try await ModelContext(widgetContainer).fetchHistory(
                HistoryDescriptor(after: token))
            #expect(widgetTransactions.map(\.author) == ["widget", "app"])

            await widgetContainer.close()
            await appContainer.close()
        }
    }

    @Test func aURIOfAnotherStoreIsRefused() async throws {
        try await Backend.embedded.withContainer(for: sampleTripsModels) { first in
            try await Backend.embedded.withContainer(for: sampleTripsModels) { second in
                let context = ModelContext(first)
                let trip = Trip(name: "Here", destination: "X")
                context.insert(trip)
                try await context.save()
                let error = await modelError { _ = try await ModelContext(second).model(for: trip.persistentModelID) }
                #expect(error?.code == .invalidIdentifier)
                #expect(error?.message.contains("belongs to the store \(first.storeIdentifier)") == true)
            }
        }
    }
}
