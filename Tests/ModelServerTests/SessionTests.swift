import Foundation
import ModelRemote
import ModelCore
import ModelEngine
import ModelFixtures
@testable import ModelServer
import ModelStorage
import ModelTesting
import StandardBackends
import Testing

/// SessionService over a real socket: each client's own unit of work.
@Suite(.isolatedStore(schema: SampleTrips.schema))
struct SessionTests {
    var store: TestStore { get throws { try #require(TestStore.current) } }

    @Test func nobodyElseSeesASessionsChangesBeforeItSaves() async throws {
        let store = try store
        let alice = try await store.openSession(author: "alice"), bob = try await store.openSession(author: "bob")
        let kyoto = try await alice.insert("Trip", attributes: trip("Kyoto", "2026-04-01", "2026-04-09"))
        let all = FetchDescriptor(entityName: "Trip")
        #expect(try await alice.fetch(all).objects.map(\.id) == [kyoto])
        #expect(try await bob.count(all) == 0)
        #expect(try await store.client.count(all, in: store.name) == 0)
        let description = try await alice.describe()
        #expect(description.hasChanges && description.inserted == [kyoto] && description.author == "alice")

        let saved = try await alice.save()
        let id = try #require(saved.remappedIdentifiers[kyoto])
        #expect(id.primaryKey != nil && saved.token != nil)
        // A temporary URI the save replaced (or another session's) is refused, saying which URI
        // to use; a missing object is left out.
        let replaced = await expectError(.notFound) { _ = try await alice.objects([kyoto, id]) }
        #expect(replaced?.message.contains("use the permanent URI the save returned") == true)
        await expectError(.notFound) { _ = try await bob.objects([kyoto]) }
        try await alice.delete(id)
        #expect(try await alice.objects([id]).isEmpty)
        _ = try await alice.rollback()
        #expect(try await bob.fetch(all).objects.map(\.id) == [id])
        #expect(try await alice.describe().hasChanges == false)
        #expect(try await store.client.history(after: nil, in: store.name).map(\.author) == ["alice"])
    }

    @Test func changesAreStagedInOrderAllOrNone() async throws {
        let store = try store
        let session = try await store.openSession()
        let berlin = try await session.insert("BusinessTrip", attributes: trip("Berlin", "2026-02-01", "2026-02-03"))
        // A later request refers to the temporary identifier an earlier one returned.
        let stay = try await session.insert(
            "LivingAccommodation",
            attributes: ["address": .string("1 Unter den Linden"), "placeName": .string("Hotel")],
            relationships: ["trip": .toOne(berlin)])
        let failing: [ObjectEdit] = [
            .update(berlin, attributes: ["perdiem": .double(120)], relationships: [:]),
            .insert(entity: "Trip", attributes: ["startDate": .string("not a date")], relationships: [:], id: nil),
        ]
        let error = await expectError(.typeMismatch) { try await session.stage(failing) }
        #expect(error?.message.hasPrefix("change 2: ") == true, "\(String(describing: error))")
        #expect(error?.context["change"] == "2")
        // Neither change of the failed request stayed.
        #expect(try await session.object(berlin)?["perdiem"] == .double(0))
        #expect(try await session.describe().inserted == [berlin, stay])

        let saved = try await session.save()
        let stayID = try #require(saved.remappedIdentifiers[stay]),
            berlinID = try #require(saved.remappedIdentifiers[berlin])
        #expect(try await store.client.objects([stayID], in: store.name).first?.toOne("trip") == berlinID)
    }

    @Test func saveStagesAndSavesInOneCallAllOrNone() async throws {
        let store = try store
        let session = try await store.openSession(author: "one-call")
        // Staged earlier, and saved with the changes the save itself carries.
        let rome = try await session.insert("Trip", attributes: trip("Rome", "2026-04-01", "2026-04-02"))
        let oslo = PersistentIdentifier.temporary(storeIdentifier: session.storeIdentifier, entityName: "Trip")
        let stay = PersistentIdentifier.temporary(
            storeIdentifier: session.storeIdentifier, entityName: "LivingAccommodation")
        let saved = try await session.save(
            applying: [
                .insert(
                    entity: "Trip", attributes: trip("Oslo", "2026-05-01", "2026-05-03"), relationships: [:], id: oslo),
                .insert(
                    entity: "LivingAccommodation",
                    attributes: ["address": .string("Karl Johans gate 31"), "placeName": .string("Grand")],
                    relationships: ["trip": .toOne(oslo)], id: stay),
            ], returnTransaction: true)
        let osloID = try #require(saved.remappedIdentifiers[oslo]),
            stayID = try #require(saved.remappedIdentifiers[stay])
        #expect(saved.remappedIdentifiers[rome] != nil)
        #expect(saved.transaction?.changes.count == 3 && saved.transaction?.author == "one-call")
        #expect(try await store.client.objects([osloID], in: store.name).first?.toOne("livingAccommodation") == stayID)

        // A failing save leaves the session as it was: the staged update stays, the carried
        // insert does not.
        try await session.update(osloID, attributes: ["destination": .string("Bergen")])
        let failing = await expectError(.typeMismatch) {
            try await session.save(applying: [
                .insert(entity: "Trip", attributes: ["startDate": .string("soon")], relationships: [:], id: nil)
            ])
        }
        #expect(
            failing?.context["change"] == "1" && failing?.message.contains("soon") == true,
            "\(String(describing: failing))")
        let pending = try await session.describe()
        #expect(pending.updated == [osloID] && pending.inserted.isEmpty)
        #expect(try await store.client.objects([osloID], in: store.name).first?["destination"] == .string("Oslo"))
        #expect(try await session.save().token != nil)
        #expect(try await store.client.objects([osloID], in: store.name).first?["destination"] == .string("Bergen"))
    }

    @Test func rollbackDiscardsWhatWasStaged() async throws {
        let store = try store
        let ids = try await store.insert("Trip", [trip("Paris", "2026-03-01", "2026-03-10")])
        let session = try await store.openSession()
        try await session.update(ids[0], attributes: ["destination": .string("Lyon")])
        _ = try await session.insert("Trip", attributes: trip("Rome", "2026-04-01", "2026-04-02"))
        #expect(try await session.rollback() == 2)
        #expect(
            try await session.fetch(FetchDescriptor(entityName: "Trip")).objects.map { $0["destination"] } == [
                .string("Paris")
            ])
        #expect(try await session.save().token == nil)
    }

    @Test func aClosedSessionSaysSo() async throws {
        let store = try store
        let session = try await store.openSession()
        _ = try await session.insert("Trip", attributes: trip("Oslo", "2026-05-01", "2026-05-02"))
        #expect(try await session.close() == 1)
        let error = await expectError(.notFound) { try await session.save() }
        #expect(error?.message == "session \(session.id) was closed by its client; open a new session")
        let unknown = await expectError(.notFound) { _ = try await store.client.openSession(on: "no-such-store") }
        #expect(unknown?.message.contains("no store named 'no-such-store'") == true)
        #expect(try await store.client.count(FetchDescriptor(entityName: "Trip"), in: store.name) == 0)
    }

    @Test func conflictsAreAbortedNamingTheObjects() async throws {
        let store = try store
        let ids = try await store.insert("Trip", [trip("Paris", "2026-03-01", "2026-03-10")])
        let first = try await store.openSession(), second = try await store.openSession()
        _ = try await first.object(ids[0])
        _ = try await second.object(ids[0])
        try await first.update(ids[0], attributes: ["destination": .string("Lyon")])
        try await second.update(ids[0], attributes: ["destination": .string("Nice")])
        try await first.save()
        let error = await expectError(.conflict) { try await second.save() }
        #expect(error?.context["objects"] == ids[0].uriRepresentation)
        #expect(try await store.values("Trip", key: "destination") == ["Lyon"])

        // The same conflict under objectTrump: the second session's change wins.
        let trumping = try await store.openSession(mergePolicy: .objectTrump)
        _ = try await trumping.object(ids[0])
        try await first.update(ids[0], attributes: ["destination": .string("Marseille")])
        try await first.save()
        try await trumping.update(ids[0], attributes: ["destination": .string("Nice")])
        try await trumping.save()
        #expect(try await store.values("Trip", key: "destination") == ["Nice"])
    }

    /// A client that read an object elsewhere says at which version (`expect_version`): a
    /// session that never read it, and a plain Apply, check that version.
    @Test func anExpectedVersionIsChecked() async throws {
        let store = try store
        let ids = try await store.insert("Trip", [trip("Paris", "2026-03-01", "2026-03-10")])
        let read = try #require(try await store.client.objects(ids, in: store.name).first)
        #expect(read.version == 1)
        _ = try await store.client.apply(
            [.update(ids[0], attributes: ["destination": .string("Lyon")], relationships: [:])], in: store.name)
        let stale: [ObjectEdit] = [
            .expectVersion(read.version, of: ids[0]),
            .update(ids[0], attributes: ["destination": .string("Nice")], relationships: [:]),
        ]
        let session = try await store.openSession()
        let inSession = await expectError(.conflict) { _ = try await session.save(applying: stale) }
        #expect(inSession?.message.contains("read version 1, now 2") == true, "\(String(describing: inSession))")
        await expectError(.conflict) { _ = try await store.client.apply(stale, in: store.name) }
        let deleting = await expectError(.conflict) {
            _ = try await store.client.apply([.expectVersion(1, of: ids[0]), .delete(ids[0])], in: store.name)
        }
        #expect(deleting?.context["objects"] == ids[0].uriRepresentation)
        #expect(try await store.values("Trip", key: "destination") == ["Lyon"])
        // The version it is at saves.
        _ = try await store.client.apply(
            [
                .expectVersion(2, of: ids[0]),
                .update(ids[0], attributes: ["destination": .string("Nice")], relationships: [:]),
            ],
            in: store.name)
        #expect(try await store.values("Trip", key: "destination") == ["Nice"])
        let zero = await expectError(.invalidArgument) {
            _ = try await store.client.apply([.expectVersion(0, of: ids[0])], in: store.name)
        }
        #expect(zero?.message.contains("versions start at 1") == true, "\(String(describing: zero))")
    }

    @Test func uniqueConflictsAndUpserts() async throws {
        let store = try store
        _ = try await store.insert("Trip", [trip("Paris", "2026-03-01", "2026-03-10", destination: "France")])
        let session = try await store.openSession()
        _ = try await session.insert(
            "Trip", attributes: trip("Paris", "2026-03-01", "2026-03-10", destination: "Texas"))
        let error = await expectError(.uniqueConstraint) { try await session.save() }
        #expect(
            error?.message.contains("name") == true && error?.message.contains("startDate") == true,
            "\(String(describing: error))")
        #expect(try await session.describe().hasChanges, "a failed save keeps the session's changes")

        let upserting = try await store.openSession(uniquenessPolicy: .upsert)
        _ = try await upserting.insert(
            "Trip", attributes: trip("Paris", "2026-03-01", "2026-03-10", destination: "Texas"))
        try await upserting.save()
        #expect(try await store.values("Trip", key: "destination") == ["Texas"])
    }

    @Test func deleteRulesRunAtSave() async throws {
        let store = try store
        let session = try await store.openSession(author: "planner")
        let rome = try await session.insert("Trip", attributes: trip("Rome", "2026-04-01", "2026-04-02"))
        let items = try await session.stage([
            .insert(
                entity: "BucketListItem", attributes: ["title": .string("Colosseum"), "details": .string("")],
                relationships: ["trip": .toOne(rome)], id: nil),
            .insert(
                entity: "LivingAccommodation",
                attributes: ["address": .string("Via Roma 1"), "placeName": .string("B&B")],
                relationships: ["trip": .toOne(rome)], id: nil),
        ])
        let saved = try await session.save()
        let romeID = try #require(saved.remappedIdentifiers[rome])
        try await session.delete(romeID)
        let deleted = try await session.save(returnTransaction: true)
        let changes = try #require(deleted.transaction).changes
        #expect(Set(changes.map(\.id)) == Set([romeID] + items.compactMap { saved.remappedIdentifiers[$0] }))
        #expect(changes.allSatisfy { $0.kind == .delete })
        #expect(changes.first { $0.id == romeID }?.tombstone["name"] == .string("Rome"))
        #expect(try await store.client.count(FetchDescriptor(entityName: "BucketListItem"), in: store.name) == 0)
    }

    @Test func aggregatesAndObjectsIncludePendingChanges() async throws {
        let store = try store
        _ = try await store.insert(
            "PersonalTrip", [trip("Paris", "2026-03-01", "2026-03-10"), trip("Rome", "2026-04-01", "2026-04-02")])
        let session = try await store.openSession()
        let oslo = try await session.insert("BusinessTrip", attributes: trip("Oslo", "2026-05-01", "2026-05-02"))
        let rows = try await session.aggregate(
            AggregateDescriptor(entityName: "Trip", groupBy: ["name"], aggregations: [Aggregation("n", .count)]))
        #expect(rows.map { $0["name"] } == [.string("Oslo"), .string("Paris"), .string("Rome")])
        #expect(try await session.object(oslo)?["name"] == .string("Oslo"))
        #expect(try await store.client.objects([oslo].filter { !$0.isTemporary }, in: store.name).isEmpty)
    }
}

/// Sessions that end by themselves: idle timeout, the daemon's session limit.
@Suite struct SessionLifetimeTests {
    @Test func idleSessionsExpireAndSaySo() async throws {
        try await TestDaemon.withDaemon(configure: { $0.idleTimeout = .milliseconds(200) }) { daemon in
            try await withStore(on: daemon, schema: SampleTrips.schema) { store in
                let idle = try await store.openSession()
                // Wait (without calling on it) until the daemon has closed it.
                let deadline = ContinuousClock.now + .seconds(30)
                while try await store.client.store(store.name).openSessions > 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                let error = await expectError(.notFound) { try await idle.save() }
                #expect(
                    error?.message.contains("expired after 0.2 s without a call") == true,
                    "\(String(describing: error))")
            }
        }
    }

    /// Which sessions count as idle, on a clock the test moves (no waiting): calls keep a
    /// session alive, and a call under way never lets it expire.
    @Test func callsKeepSessionsAlive() async throws {
        let container = try await ModelContainer.open(
            url: "memory:idle", schema: SampleTrips.schema, registry: .standard)
        let handle = StoreHandle(
            name: "idle", location: StoreLocation(scheme: "memory", path: "idle"), container: container)
        let start = ContinuousClock.now
        let clock = Shared(start)
        let registry = SessionRegistry(maximumSessions: 10, idleTimeout: .seconds(60), now: { clock.value })
        let quiet = try registry.open(on: handle, author: nil, mergePolicy: .error, uniquenessPolicy: .error)
        let used = try registry.open(on: handle, author: nil, mergePolicy: .error, uniquenessPolicy: .error)
        let busy = try registry.open(on: handle, author: nil, mergePolicy: .error, uniquenessPolicy: .error)
        clock.update { $0 = start + .seconds(50) }
        _ = try await used.run { await $0.hasChanges }
        try await withThrowingTaskGroup(of: Void.self) { group in
            let entered = TestEvent(), release = TestEvent()
            group.addTask {
                try await busy.run { _ in
                    entered.signal()
                    await release.wait()
                }
            }
            #expect(await entered.wait())
            clock.update { $0 = start + .seconds(70) }
            #expect(await registry.endIdle() == 1, "only the quiet one: 70 s without a call")
            #expect(throws: ModelError.self) { try registry.session(quiet.id) }
            #expect(try registry.session(used.id) === used, "20 s since its call")
            clock.update { $0 = start + .seconds(200) }
            #expect(await registry.endIdle() == 1, "now the used one; never the one inside a call")
            #expect(try registry.session(busy.id) === busy)
            release.signal()
            try await group.waitForAll()
        }
        clock.update { $0 = start + .seconds(230) }
        #expect(await registry.endIdle() == 0, "30 s since the busy one's call ended")
        clock.update { $0 = start + .seconds(300) }
        #expect(await registry.endIdle() == 1)
        #expect(registry.count == 0)
    }

    @Test func theDaemonRefusesSessionsBeyondItsLimit() async throws {
        try await TestDaemon.withDaemon(configure: { $0.maximumSessions = 3 }) { daemon in
            try await withStore(on: daemon) { store in
                var sessions: [RemoteSession] = []
                for _ in 0..<3 { sessions.append(try await store.openSession()) }
                let error = await expectError(.resourceExhausted) { _ = try await store.openSession() }
                #expect(error?.message.contains("3 open sessions") == true, "\(String(describing: error))")
                try await sessions[0].close()
                _ = try await store.openSession()
                #expect(try await store.client.status().openSessions == 3)
            }
        }
    }
}
