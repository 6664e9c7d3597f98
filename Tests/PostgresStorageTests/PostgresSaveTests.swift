import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import PostgresStorage
import Testing

/// Saves on PostgreSQL through the shared save algorithm, read back by URI and in history:
/// inserts with relationships, optimistic concurrency between two openers (two daemons), unique
/// constraints, deletes, and tokens that follow commit order.
@Suite struct PostgresSaveTests {
    static func trip(_ name: String, _ start: String) -> [String: Value] {
        ["name": .string(name), "destination": .string(name), "startDate": date(start), "endDate": date(start)]
    }

    static func temporary(_ store: PostgresStore, _ entity: String) -> PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: store.storeIdentifier, entityName: entity, key: .temporary(UUID()))
    }

    /// Runs `body` with a store of its own, of `schema`, closed after.
    static func withStore(schema: Schema = SampleTrips.schema, _ body: (PostgresStore) async throws -> Void)
        async throws
    {
        let store = try await PostgresStore.open(url: try PostgresServer.freshStoreURL(), applying: schema)
        do {
            try await body(store)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    @Test func savedObjectsComeBackWithTheirRelationshipsAndHistory() async throws {
        try await Self.withStore { store in
            let kyoto = Self.temporary(store, "Trip"), temple = Self.temporary(store, "BucketListItem")
            let flat = Self.temporary(store, "LivingAccommodation")
            let saved = try await store.save(
                ChangeSet(
                    inserts: [
                        InsertedObject(id: kyoto, attributes: Self.trip("Kyoto", "2026-04-01")),
                        InsertedObject(
                            id: temple, attributes: ["title": .string("Temple")], relationships: ["trip": .toOne(kyoto)]
                        ),
                        InsertedObject(
                            id: flat, attributes: ["address": .string("1 Rue"), "placeName": .string("Flat")],
                            relationships: ["trip": .toOne(kyoto)]),
                    ], author: "loader"))
            let kyotoID = try #require(saved.remappedIdentifiers[kyoto])
            let templeID = try #require(saved.remappedIdentifiers[temple])
            let trip = try #require(try await store.snapshots(for: [kyotoID]).first)
            #expect(trip.version == 1 && trip.attributes["name"] == .string("Kyoto"))
            #expect(trip.attributes["startDate"] == date("2026-04-01"))
            #expect(trip.relationships["bucketList"] == .toMany([templeID]))
            if case .toOne(let place)? = trip.relationships["livingAccommodation"] {
                #expect(place == saved.remappedIdentifiers[flat])
            } else {
                Issue.record("no living accommodation: \(trip.relationships)")
            }
            let item = try #require(try await store.snapshots(for: [templeID]).first)
            #expect(item.relationships["trip"] == .toOne(kyotoID))
            #expect(item.attributes["details"] == .string(""), "the default")

            let history = try await store.history(after: nil, limit: nil)
            #expect(history.count == 1 && history[0].author == "loader" && history[0].token == saved.token)
            #expect(Set(history[0].changes.map(\.id)) == Set(saved.remappedIdentifiers.values))
            #expect(try await store.currentHistoryToken() == saved.token)

            // An update bumps the version and records what changed; a delete leaves a tombstone.
            let updated = try await store.save(
                ChangeSet(updates: [UpdatedObject(id: kyotoID, attributes: ["destination": .string("Japan")])]))
            #expect(updated.token.map(\.rawValue) == saved.token.map { $0.rawValue + 1 })
            #expect(try await store.snapshots(for: [kyotoID]).first?.version == 2)
            try await store.save(ChangeSet(deletes: [DeletedObject(id: templeID)]))
            #expect(try await store.snapshots(for: [templeID]).isEmpty)
            let later = try await store.history(after: saved.token, limit: nil)
            #expect(later.map { $0.changes.map(\.kind) } == [[.update], [.delete]])
            #expect(later[0].changes[0].changedProperties == ["destination"])
        }
    }

    /// Two openers (two daemons) saving the same object: the second, made for the old version,
    /// conflicts; the unique constraint holds across them.
    @Test func concurrencyAndUniquenessHoldAcrossOpeners() async throws {
        try await Self.withStore { store in
            let other = try await PostgresStore.open(url: store.endpoint.url)
            defer { Task { await other.close() } }
            let kyoto = Self.temporary(store, "Trip")
            let id = try #require(
                try await store.save(
                    ChangeSet(inserts: [InsertedObject(id: kyoto, attributes: Self.trip("Kyoto", "2026-04-01"))])
                ).remappedIdentifiers[kyoto])
            try await other.save(
                ChangeSet(updates: [
                    UpdatedObject(id: id, attributes: ["destination": .string("A")], expectedVersion: 1)
                ]))
            let stale = await #expect(throws: SaveConflicts.self) {
                try await store.save(
                    ChangeSet(
                        updates: [UpdatedObject(id: id, attributes: ["destination": .string("B")], expectedVersion: 1)])
                )
            }
            #expect(stale?.conflicts.first?.current?.attributes["destination"] == .string("A"))
            let duplicate = await modelError {
                _ = try await other.save(
                    ChangeSet(
                        inserts: [
                            InsertedObject(
                                id: Self.temporary(store, "Trip"), attributes: Self.trip("Kyoto", "2026-04-01"))
                        ]))
            }
            #expect(duplicate?.code == .uniqueConstraint, "\(String(describing: duplicate))")
        }
    }

    /// Text holding NUL, which PostgreSQL's text cannot store (SQLite's can): the save fails as
    /// the client's error, saying what to do, and leaves the store as it was.
    @Test func textHoldingNULIsRefusedAsInvalidArgument() async throws {
        try await Self.withStore { store in
            let before = try await store.history(after: nil, limit: nil).count
            let refused = await modelError {
                _ = try await store.save(
                    ChangeSet(inserts: [
                        InsertedObject(
                            id: Self.temporary(store, "Trip"), attributes: Self.trip("Ky\u{0}oto", "2026-04-01"))
                    ]))
            }
            #expect(refused?.code == .invalidArgument, "\(String(describing: refused))")
            #expect(refused?.message.contains("NUL character (U+0000)") == true, "\(String(describing: refused))")
            #expect(refused?.context["sqlstate"] == "22021")
            #expect(try await store.history(after: nil, limit: nil).count == before)
            let saved = try await store.save(
                ChangeSet(inserts: [
                    InsertedObject(id: Self.temporary(store, "Trip"), attributes: Self.trip("Kyoto", "2026-04-01"))
                ]))
            #expect(saved.remappedIdentifiers.count == 1)
        }
    }

    /// Many saves at once through two openers: every token is taken once, in commit order, and
    /// history lists every save.
    @Test func tokensFollowCommitOrderAcrossOpeners() async throws {
        try await Self.withStore { store in
            let other = try await PostgresStore.open(url: store.endpoint.url)
            defer { Task { await other.close() } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<40 {
                    let target = index % 2 == 0 ? store : other
                    group.addTask {
                        _ = try await target.save(
                            ChangeSet(inserts: [
                                InsertedObject(
                                    id: Self.temporary(store, "Trip"),
                                    attributes: Self.trip("Trip \(index)", "2026-04-01"))
                            ]))
                    }
                }
                try await group.waitForAll()
            }
            let history = try await store.history(after: nil, limit: nil)
            #expect(history.map(\.token.rawValue) == Array(1...40))
            #expect(Set(history.flatMap(\.changes).map(\.id)).count == 40)
        }
    }
}
