import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import ModelStorage
import Testing

/// After an inferred migration changes delete rules, the engine's saves follow the new ones.
@Suite struct MigratedDeleteRuleTests {
    @Test(arguments: BackendKind.allCases)
    func deletesFollowTheMigratedRules(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: SampleTrips.schema) { store in
            let context = store.context()
            let trip: (String, String) -> [String: Value] = { name, start in
                [
                    "name": .string(name), "destination": .string(name), "startDate": .date(.iso(start)),
                    "endDate": .date(.iso(start)),
                ]
            }
            let kyoto = try await context.insert("Trip", attributes: trip("Kyoto", "2026-04-01T00:00:00Z"))
            let temple = try await context.insert(
                "BucketListItem", attributes: ["title": .string("Temple")], relationships: ["trip": .toOne(kyoto)])
            let paris = try await context.insert("Trip", attributes: trip("Paris", "2026-03-01T00:00:00Z"))
            _ = try await context.insert(
                "LivingAccommodation", attributes: ["address": .string("1 Rue"), "placeName": .string("Flat")],
                relationships: ["trip": .toOne(paris)])
            let ids = try await context.save().remappedIdentifiers
            let kyotoID = try #require(ids[kyoto]), templeID = try #require(ids[temple])
            let parisID = try #require(ids[paris])

            var new = SampleTrips.schema
            for index in new.entities[0].relationships.indices {
                new.entities[0].relationships[index].deleteRule =
                    new.entities[0].relationships[index].name == "bucketList" ? .nullify : .deny
            }
            let plan = try await store.container.backend.migrate(to: new, options: MigrationOptions())
            #expect(plan.steps.map(\.kind) == [.changeRelationship, .changeRelationship], "\(plan.steps)")
            let migrated = try await ModelContainer.open(backend: store.container.backend)
            let after = migrated.makeContext()

            // The bucket list was cascaded before; now its item stays, without a trip.
            try await after.delete(kyotoID)
            try await after.save()
            let item = try #require(try await migrated.makeContext().object(for: templeID))
            #expect(item.toOne("trip") == nil)
            // Paris's place to stay now denies the trip's deletion.
            try await after.delete(parisID)
            #expect(await modelError { try await after.save() }?.code == .deleteDenied)
        }
    }
}
