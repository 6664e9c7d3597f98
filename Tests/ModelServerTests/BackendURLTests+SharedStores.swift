import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Synchronization
import Testing

/// Two daemons sharing one store (an SQLite file, a PostgreSQL namespace): what one does to
/// it, the other hears.
extension BackendURLTests {
    /// Two daemons share a store (an SQLite file, a PostgreSQL namespace); one migrates it. The
    /// other's next save, made for the old schema, is refused, and from then on that daemon
    /// serves the new schema (its sessions ended); a schema read shows what the store holds
    /// without a save first.
    @Test(arguments: ["sqlite", "postgres"])
    func aMigrationByAnotherDaemonIsServedAfterTheSaveItRefuses(backend: String) async throws {
        try await withTemporaryDirectory { elsewhere in
            let url =
                backend == "sqlite" ? "sqlite://\(elsewhere.path)/shared.sqlite" : try PostgresServer.freshStoreURL()
            try await Self.withTwoDaemonsSharing(url) { one, two in
                let session = try await two.openSession(on: "shared")
                var budgeted = SampleTrips.schema
                budgeted.entities[0].attributes.append(
                    AttributeDescription(name: "budget", type: .decimal, isOptional: true))
                _ = try await one.migrateSchema(of: "shared", to: budgeted)

                let kyoto = trip("Kyoto", "2026-04-01", "2026-04-09")
                let stale = await expectError(.schemaMismatch) {
                    try await two.apply(
                        [.insert(entity: "Trip", attributes: kyoto, relationships: [:], id: nil)],
                        in: "shared")
                }
                // In the daemon's words: the call is to be sent again, not the store reopened.
                let version = String(try #require(budgeted.versionHash).prefix(12))
                #expect(
                    stale?.message.hasPrefix(
                        "the store was migrated to schema version \(version) while this call was under way") == true
                        && stale?.message.contains("nothing was saved: send it again for the new schema") == true,
                    "\(String(describing: stale))")
                #expect(try await two.schema(of: "shared").versionHash == budgeted.versionHash)
                var withBudget = kyoto
                withBudget["budget"] = .decimal(Decimal(1200))
                try await two.apply(
                    [.insert(entity: "Trip", attributes: withBudget, relationships: [:], id: nil)],
                    in: "shared")
                let closed = await expectError(.schemaMismatch) {
                    _ = try await session.count(FetchDescriptor(entityName: "Trip"))
                }
                #expect(
                    closed?.message.contains("by another process") == true, "\(String(describing: closed))")

                // A schema read alone shows the next migration.
                var noted = budgeted
                noted.entities[0].attributes.append(
                    AttributeDescription(name: "note", type: .string, isOptional: true))
                _ = try await one.migrateSchema(of: "shared", to: noted)
                #expect(try await two.schema(of: "shared").versionHash == noted.versionHash)

                // A save naming what the next migration added is told the store was migrated
                // (it was unknownProperty, again and again, until something read the schema),
                // and goes through when sent again.
                var rated = noted
                rated.entities[0].attributes.append(AttributeDescription(name: "rating", type: .int, isOptional: true))
                let staging = try await two.openSession(on: "shared")
                _ = try await one.migrateSchema(of: "shared", to: rated)
                var withRating = trip("Nara", "2026-05-01", "2026-05-03")
                withRating["rating"] = .int(5)
                // A session's stage is told so too, and the session, made for the old schema, ends.
                let staged = await expectError(.schemaMismatch) {
                    _ = try await staging.stage(
                        [.insert(entity: "Trip", attributes: withRating, relationships: [:], id: nil)])
                }
                #expect(
                    staged?.message.contains(
                        "migrated to schema version \(String((rated.versionHash ?? "").prefix(12)))")
                        == true && staged?.message.contains("send it again") == true,
                    "\(String(describing: staged))")
                let ended = await expectError(.schemaMismatch) {
                    _ = try await staging.count(FetchDescriptor(entityName: "Trip"))
                }
                #expect(ended?.message.contains("by another process") == true, "\(String(describing: ended))")
                try await two.apply(
                    [.insert(entity: "Trip", attributes: withRating, relationships: [:], id: nil)], in: "shared")

                // An Apply meets the same after the next migration.
                var starred = rated
                starred.entities[0].attributes.append(AttributeDescription(name: "stars", type: .int, isOptional: true))
                _ = try await one.migrateSchema(of: "shared", to: starred)
                withRating["stars"] = .int(4)
                withRating["name"] = .string("Kobe")
                let named = await expectError(.schemaMismatch) {
                    try await two.apply(
                        [.insert(entity: "Trip", attributes: withRating, relationships: [:], id: nil)], in: "shared")
                }
                #expect(
                    named?.message.contains(
                        "migrated to schema version \(String((starred.versionHash ?? "").prefix(12)))")
                        == true && named?.message.contains("send it again") == true,
                    "\(String(describing: named))")
                try await two.apply(
                    [.insert(entity: "Trip", attributes: withRating, relationships: [:], id: nil)], in: "shared")
                if backend == "postgres" { try await one.dropStore("shared") }
            }
        }
    }

    /// Runs `body` with clients of two daemons serving one store, "shared", at `url` (made with
    /// the sample trips' schema by the first).
    static func withTwoDaemonsSharing(_ url: String, _ body: (DaemonClient, DaemonClient) async throws -> Void)
        async throws
    {
        try await TestDaemon.withDaemon { first in
            try await TestDaemon.withDaemon { second in
                try await first.withClient { one in
                    try await second.withClient { two in
                        try await one.createStore("shared", backend: nil, url: url, schema: SampleTrips.schema)
                        try await two.createStore("shared", backend: nil, url: url)
                        try await body(one, two)
                    }
                }
            }
        }
    }

    /// Two daemons share a store; one drops it. The other's saves are refused with NOT_FOUND
    /// saying so, not acknowledged: an SQLite writer once went on writing to the deleted file,
    /// and every save it acknowledged was lost when it closed the store.
    @Test(arguments: ["sqlite", "postgres"])
    func aStoreDroppedByAnotherDaemonRefusesSaves(backend: String) async throws {
        try await withTemporaryDirectory { elsewhere in
            let file = "\(elsewhere.path)/shared.sqlite"
            let url = backend == "sqlite" ? "sqlite://\(file)" : try PostgresServer.freshStoreURL()
            try await Self.withTwoDaemonsSharing(url) { one, two in
                let kyoto = trip("Kyoto", "2026-04-01", "2026-04-09")
                try await one.apply(
                    [.insert(entity: "Trip", attributes: kyoto, relationships: [:], id: nil)], in: "shared")
                // A watch through the daemon that did not drop it.
                let (first, arrived) = AsyncStream<Void>.makeStream()
                let watch = Task<ModelError?, Never> {
                    do {
                        try await one.watch(.count(FetchDescriptor(entityName: "Trip")), in: "shared") { _ in
                            arrived.yield()
                        }
                        return nil
                    } catch {
                        return error as? ModelError
                    }
                }
                for await _ in first { break }
                try await two.dropStore("shared")
                if backend == "postgres" {
                    // Its reads are told the store is gone (they were INTERNAL with PostgreSQL's
                    // own message), and its watch ends saying so (it waited for good).
                    let read = await expectError(.notFound) {
                        _ = try await one.count(FetchDescriptor(entityName: "Trip"), in: "shared")
                    }
                    #expect(read?.message.contains("dropped") == true, "\(String(describing: read))")
                    let ended = await watch.value
                    #expect(ended?.code == .notFound, "\(String(describing: ended))")
                } else {
                    watch.cancel()
                }
                let nara = trip("Nara", "2026-05-01", "2026-05-03")
                let refused = await expectError(.notFound) {
                    try await one.apply(
                        [.insert(entity: "Trip", attributes: nara, relationships: [:], id: nil)],
                        in: "shared")
                }
                #expect(refused?.message.contains("dropped") == true, "\(String(describing: refused))")
                if backend == "sqlite" { #expect(!FileManager.default.fileExists(atPath: file)) }
            }
        }
    }
}
