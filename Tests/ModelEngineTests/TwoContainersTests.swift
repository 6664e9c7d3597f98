import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import StandardBackends
import Testing

/// Two stacks on one SQLite file — the coexistence scenario of Apple's sample: the same store
/// UUID, the same URIs naming the same objects, and each reading the other's saves from history.
@Suite struct TwoContainersTests {
    @Test func twoContainersOnOneFileShareIdentityAndHistory() async throws {
        try await withStore(.sqlite, schema: SampleTrips.schema) { store in
            let url = try #require(store.url)
            let widget = try await ModelContainer.open(url: url, schema: SampleTrips.schema, registry: .standard)
            #expect(widget.storeIdentifier == store.container.storeIdentifier)

            let app = store.context(author: "app")
            let trip = try await app.insert(
                "Trip",
                attributes: [
                    "name": .string("Kyoto"), "destination": .string("Japan"),
                    "startDate": .date(Date.iso("2026-04-01")), "endDate": .date(Date.iso("2026-04-09")),
                ])
            let stay = try await app.insert(
                "LivingAccommodation",
                attributes: [
                    "address": .string("3 Gion"), "placeName": .string("Ryokan"),
                ], relationships: ["trip": .toOne(trip)])
            let ids = try await app.save().remappedIdentifiers
            let stayID = try #require(ids[stay])
            let mark = try await store.container.currentHistoryToken()

            // The widget opens the object by its URI and confirms the stay.
            let widgetContext = widget.makeContext(author: "widget")
            let sameStay = try PersistentIdentifier(uri: stayID.uriRepresentation, in: widget.storeIdentifier)
            #expect(try await widgetContext.object(for: sameStay)?["placeName"] == .string("Ryokan"))
            try await widgetContext.update(sameStay, attributes: ["isConfirmed": .bool(true)])
            try await widgetContext.save()

            // The app finds the widget's change in history after its token.
            let changes = try await store.container.history(after: mark)
            #expect(changes.map(\.author) == ["widget"])
            #expect(changes.first?.changes.map(\.id) == [stayID])
            #expect(changes.first?.changes.first?.changedProperties == ["isConfirmed"])
            #expect(try await store.context().object(for: stayID)?["isConfirmed"] == .bool(true))
            await widget.close()
        }
    }
}
