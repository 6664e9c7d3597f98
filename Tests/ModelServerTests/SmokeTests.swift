import Foundation
import ModelClient
import ModelCore
import ModelFixtures
import ModelTesting
import Testing

@Suite struct SmokeTests {
    @Test func insertSaveFetch() async throws {
        try await withTestStore(schema: SampleTrips.schema) { store in
            let session = try await store.openSession(author: "smoke")
            let trip = try await session.insert("Trip", attributes: ["name": .string("Kyoto"), "destination": .string("Japan"),
                                                                     "startDate": .string("2026-04-01"), "endDate": .string("2026-04-09")])
            #expect(trip.isTemporary)
            let saved = try await session.save(returnTransaction: true)
            let id = try #require(saved.remappedIdentifiers[trip])
            #expect(saved.transaction?.author == "smoke")
            let found = try await store.client.fetch(FetchDescriptor(entityName: "Trip", predicate: try PredicateParser.parse("name == \"Kyoto\"")), in: store.name)
            #expect(found.objects.map(\.id) == [id])
        }
    }
}
