import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import PostgresStorage
import Testing

/// A save sends the statements whose answers it does not need without waiting for them, and
/// checks the store's schema version once a later answer came: a save planned on a schema
/// another opener (another daemon) has since migrated is refused `schemaMismatch` and writes
/// nothing — whether its statements still fit the new tables or fail on them.
@Suite struct PostgresStaleSchemaSaveTests {
    /// SampleTrips after `migration`.
    static func migrated(_ migration: String) -> Schema {
        var schema = SampleTrips.schema
        let trip = schema.entities.firstIndex { $0.name == "Trip" }! // SampleTrips has a Trip
        if migration == "an added attribute" {
            schema.entities[trip].attributes.append(
                AttributeDescription(name: "budget", type: .double, isOptional: true))
        } else {
            let item = schema.entities.firstIndex { $0.name == "BucketListItem" }! // SampleTrips has it
            schema.entities[item].name = "Wish"
            schema.entities[item].originalName = "BucketListItem"
            for relationship in schema.entities[trip].relationships.indices
            where schema.entities[trip].relationships[relationship].destination == "BucketListItem" {
                schema.entities[trip].relationships[relationship].destination = "Wish"
            }
        }
        return schema
    }

    @Test(
        .timeLimit(.minutes(3)),
        arguments: [
            // The new tables still take the old save's statements: the version check refuses it.
            "an added attribute",
            // The old save's reads fail on the new tables (the item's table is renamed): the
            // failure is told as the mismatch.
            "a renamed entity",
        ])
    func aSavePlannedOnAnOlderSchemaIsRefusedAndWritesNothing(_ migration: String) async throws {
        let url = try PostgresServer.freshStoreURL()
        let stale = try await PostgresStore.open(url: url, applying: SampleTrips.schema)
        let other = try await PostgresStore.open(url: url)
        let oslo = PostgresSaveTests.temporary(stale, "Trip"),
            temple = PostgresSaveTests.temporary(stale, "BucketListItem")
        let first = try await stale.save(
            ChangeSet(inserts: [
                InsertedObject(id: oslo, attributes: PostgresSaveTests.trip("Oslo", "2026-05-01")),
                InsertedObject(
                    id: temple, attributes: ["title": .string("Temple")], relationships: ["trip": .toOne(oslo)]),
            ]))
        let item = try #require(first.remappedIdentifiers[temple])
        let new = Self.migrated(migration)
        _ = try await other.migrate(to: new, options: MigrationOptions())
        let before = try await other.currentHistoryToken()

        let error = await #expect(throws: ModelError.self) {
            try await stale.save(
                ChangeSet(
                    inserts: [
                        InsertedObject(
                            id: PostgresSaveTests.temporary(stale, "Trip"),
                            attributes: PostgresSaveTests.trip("Bergen", "2026-06-01"))
                    ],
                    updates: [UpdatedObject(id: item, attributes: ["title": .string("Shrine")])]))
        }
        #expect(error?.code == .schemaMismatch, "\(String(describing: error))")
        #expect(try await other.currentHistoryToken() == before, "the refused save recorded history")
        let trips = try await other.fetch(FetchDescriptor(entityName: "Trip"), overlay: nil).objects
        #expect(trips.map(\.attributes["name"]) == [.string("Oslo")], "the refused save inserted a trip")
        let itemEntity = migration == "a renamed entity" ? "Wish" : "BucketListItem"
        let items = try await other.fetch(FetchDescriptor(entityName: itemEntity), overlay: nil).objects
        #expect(items.map(\.attributes["title"]) == [.string("Temple")], "the refused save changed the item")
        // The stale opener's connection is usable: its next statement is not refused as aborted.
        #expect(try await stale.currentHistoryToken() == before)
        await stale.close()
        await other.close()
    }
}
