import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
@testable import PostgresStorage
import Testing

/// The first part of the PostgreSQL backend against a real server (scripts/test starts one):
/// store URLs, one UUID for every opener, schemas laid out as tables, refusals.
@Suite struct PostgresStoreTests {
    @Test func urlsSayWhereTheStoreIs() throws {
        let tcp = try PostgresEndpoint(url: "postgres://ann:secret@db.example:6543/shop?schema=trips")
        #expect(tcp.host == "db.example" && tcp.port == 6543 && tcp.user == "ann" && tcp.password == "secret")
        #expect(tcp.database == "shop" && tcp.namespace == "trips" && tcp.socketDirectory == nil)
        #expect(!tcp.description.contains("secret"))
        let socket = try PostgresEndpoint(url: "postgres:///shop?host=/run/postgresql&user=modeld")
        #expect(socket.host == nil && socket.socketDirectory == "/run/postgresql" && socket.port == 5432)
        #expect(socket.namespace == "modeld" && socket.user == "modeld" && socket.poolSize == 4)
        let pooled = try PostgresEndpoint(url: "postgres:///shop?host=/run/postgresql&pool_size=12&password=hush")
        #expect(pooled.poolSize == 12 && pooled.password == "hush")
        #expect(!pooled.redactedURL.contains("hush") && pooled.redactedURL.contains("pool_size=12"))
        #expect(
            !StoreLocation.redacted(tcp.url).contains("secret") && StoreLocation.redacted(tcp.url).contains("ann:***@"))
        for (bad, why) in [
            ("postgres://db.example/shop?schema=Trips", "is not a name modeld uses"),
            ("postgres://db.example/", "names no database"),
            ("postgres:///shop", "names no server"),
            ("postgres://db.example/shop?colour=blue", "'colour' is not a parameter"),
            ("postgres://ann:secret@db.example:99999/shop", "out of range"),
            ("mysql://db.example/shop", "does not start with postgres://"),
            ("postgres://ann:secret@db.example:abc/shop", "the port 'abc' is not a number"),
            ("postgres://db.example:x1/shop?password=secret&schema=s", "the port 'x1' is not a number"),
            ("postgres://db.example/shop?port=abc", "the port 'abc' is not a number"),
            ("postgres://db.example/shop?schema=pg_catalog", "is PostgreSQL's own"),
            ("postgres://db.example/shop?schema=pg_foo", "names starting with pg_ are reserved"),
            ("postgres://db.example/shop?schema=information_schema", "is PostgreSQL's own"),
            ("postgres://db.example/shop?pool_size=0", "pool_size '0' is not a number from 1 to 64"),
            ("postgres://db.example/shop?pool_size=65", "pool_size '65' is not a number from 1 to 64"),
            ("postgres://db.example/shop?pool_size=many&password=secret", "pool_size 'many'"),
            (
                "postgres://db.example/shop?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem",
                "sslrootcert '/nonexistent/ca.pem' is not a file the daemon can read"
            ),
        ] {
            let error = #expect(throws: ModelError.self) { try PostgresEndpoint(url: bad) }
            #expect(
                error?.code == .invalidArgument && error?.message.contains(why) == true,
                "\(bad): \(String(describing: error))")
            #expect(error?.message.contains("secret") == false)
        }
    }

    @Test func everyOpenerSeesOneStore() async throws {
        let url = try PostgresServer.freshStoreURL()
        // Two processes opening a new store at once agree on its UUID.
        async let first = PostgresStore.open(url: url)
        async let second = PostgresStore.open(url: url)
        let (a, b) = try await (first, second)
        #expect(a.storeIdentifier == b.storeIdentifier)
        try await a.apply(schema: SampleTrips.schema)
        // The other opener reads the schema another applied.
        #expect(try await b.schema().versionHash == SampleTrips.schema.versionHash)
        #expect(
            try await b.tableNames() == [
                "BucketListItem", "LivingAccommodation", "Trip",
            ])
        await a.close()
        await b.close()
        let again = try await PostgresStore.open(url: url)
        #expect(again.storeIdentifier == a.storeIdentifier)
        #expect(try await again.schema().versionHash == SampleTrips.schema.versionHash)
        await again.close()
    }

    /// A namespace that holds anything before the store (a function, a type) is not taken: a
    /// drop of the store would drop it with them.
    @Test func aNamespaceHoldingObjectsOfOthersIsRefused() async throws {
        let observer = try await PostgresStore.open(url: try PostgresServer.freshStoreURL())
        let name = "t_others_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        try await observer.writer.run { session in
            try session.query("CREATE SCHEMA \(name)")
            try session.query("CREATE FUNCTION \(name).mine() RETURNS int LANGUAGE sql AS 'SELECT 1'")
            try session.query("CREATE TYPE \(name).mood AS ENUM ('ok')")
        }
        let error = await modelError {
            _ = try await PostgresStore.open(url: try PostgresServer.url() + "&schema=\(name)")
        }
        #expect(error?.message.contains("already holds 2 object(s)") == true, "\(String(describing: error))")
        #expect(error?.code == .invalidArgument, "a namespace the caller chose: another is to be chosen")
        let left = try await observer.writer.run { session in
            try session.query(
                "SELECT count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1",
                [.string(String(name))]
            ).first.flatMap { try $0.first.flatMap(PostgresValues.int) }
        }
        #expect(left == 1, "nothing of modeld's was put beside the function")
        // Tables of others: the same, naming how many.
        try await observer.writer.run { session in
            try session.query("CREATE TABLE \(name).orders (id bigint)")
            try session.query("CREATE TABLE \(name).lines (id bigint)")
        }
        let tables = await modelError {
            _ = try await PostgresStore.open(url: try PostgresServer.url() + "&schema=\(name)")
        }
        #expect(tables?.code == .invalidArgument, "\(String(describing: tables))")
        #expect(tables?.message.contains("holds 2 table(s) of its own") == true, "\(String(describing: tables))")
        try await observer.writer.run { session in try session.query("DROP SCHEMA \(name) CASCADE") }
        await observer.close()
    }

    /// Opened only if it exists (as a daemon opens the URLs it remembers), a namespace without a
    /// store is `notFound`, and nothing is made in it.
    @Test func openingOnlyAnExistingStoreMakesNothing() async throws {
        let url = try PostgresServer.freshStoreURL()
        let error = await modelError { _ = try await PostgresStore.open(url: url, creating: false) }
        #expect(
            error?.code == .notFound && error?.message.contains("holds no store") == true,
            "\(String(describing: error))")
        let made = try await PostgresStore.open(url: url)
        let again = try await PostgresStore.open(url: url, creating: false)
        #expect(again.storeIdentifier == made.storeIdentifier)
        await again.close()
        await made.close()
    }

    /// A store another opener dropped (another daemon sharing it) is `notFound` at its next
    /// save, not a storage failure, and is not made anew.
    @Test func aStoreDroppedByAnotherOpenerIsNotFound() async throws {
        let url = try PostgresServer.freshStoreURL()
        let kept = try await PostgresStore.open(url: url, applying: SampleTrips.schema)
        let other = try await PostgresStore.open(url: url)
        await other.close()
        try await PostgresStorageFactory().destroy(try StoreLocation(url: url))
        let insert = InsertedObject(
            id: PersistentIdentifier(
                storeIdentifier: kept.storeIdentifier, entityName: "Trip", key: .temporary(UUID())),
            attributes: PostgresSaveTests.trip("Kyoto", "2026-04-01"))
        let error = await modelError { _ = try await kept.save(ChangeSet(inserts: [insert])) }
        #expect(error?.code == .notFound && error?.message.contains("dropped") == true, "\(String(describing: error))")
        await kept.close()
        let reopened = await modelError { _ = try await PostgresStore.open(url: url, creating: false) }
        #expect(reopened?.code == .notFound)
    }

    @Test func anEmptyStoreTakesAnotherSchemaAndTheSameOneIsKept() async throws {
        let store = try await PostgresStore.open(url: try PostgresServer.freshStoreURL(), applying: SampleTrips.schema)
        try await store.apply(schema: SampleTrips.schema)
        try await store.apply(schema: Articles.schema)
        #expect(try await store.schema().versionHash == Articles.schema.versionHash)
        #expect(try await store.tableNames().contains("Trip") == false)
        await store.close()
    }

    @Test func aServerThatIsNotThereIsUnavailable() async throws {
        let error = await modelError {
            _ = try await PostgresStore.open(url: "postgres:///postgres?host=/nonexistent-modeld-dir&user=modeld")
        }
        #expect(error?.code == .unavailable, "\(String(describing: error))")
        #expect(error?.message.contains("cannot reach the PostgreSQL server") == true, "\(String(describing: error))")
    }

    /// A server that answers but refuses is not "unreachable" (UNAVAILABLE, to be tried again):
    /// a login it refuses (no such role, a wrong or missing password) is `permissionDenied`
    /// naming the role and what to check, a database it lacks `notFound` naming it, and a role
    /// without CREATE on the database `permissionDenied` saying it needs it. On a cluster of the
    /// test's own, whose pg_hba.conf asks one role for a password.
    @Test func refusedLoginsAndMissingDatabasesSayWhy() async throws {
        try await PostgresCluster.with { cluster in
            let dir = cluster.directory
            let admin = try await PostgresStore.open(url: cluster.freshStoreURL())
            try await admin.writer.run { session in
                try session.query("CREATE ROLE pwuser LOGIN PASSWORD 'rightpw'")
                try session.query("GRANT CREATE ON DATABASE postgres TO pwuser")
                try session.query("CREATE ROLE nocreate LOGIN")
            }
            await admin.close()
            let hba = dir + "/data/pg_hba.conf"
            let rules = try String(contentsOfFile: hba, encoding: .utf8)
            try ("local all pwuser scram-sha-256\n" + rules).write(toFile: hba, atomically: false, encoding: .utf8)
            // Restarted, the server answers only once it has read its new rules.
            try await cluster.restart()
            let wrong = "postgres://pwuser:wrongpw@/postgres?host=\(dir)&schema=t_wrong"
            let refused = await modelError {
                let store = try await PostgresStore.open(url: wrong)
                await store.close()
            }
            #expect(refused?.code == .permissionDenied, "\(String(describing: refused))")
            #expect(
                refused?.message.contains("refused to log in the role 'pwuser'") == true
                    && refused?.message.contains("pg_hba.conf") == true && refused?.message.contains("28P01") == true
                    && refused?.message.contains("wrongpw") == false, "\(String(describing: refused))")

            let noPassword = await modelError {
                _ = try await PostgresStore.open(url: "postgres:///postgres?host=\(dir)&user=pwuser&schema=t_none")
            }
            #expect(
                noPassword?.code == .permissionDenied
                    && noPassword?.message.contains("refused to log in the role 'pwuser'") == true,
                "\(String(describing: noPassword))")
            let noRole = await modelError {
                _ = try await PostgresStore.open(url: "postgres:///postgres?host=\(dir)&user=nobody&schema=t_nobody")
            }
            #expect(
                noRole?.code == .permissionDenied && noRole?.message.contains("the role 'nobody'") == true
                    && noRole?.message.contains("check the URL's user and password") == true,
                "\(String(describing: noRole))")
            let noDatabase = await modelError {
                _ = try await PostgresStore.open(url: "postgres:///nodb?host=\(dir)&user=modeld&schema=t_nodb")
            }
            #expect(
                noDatabase?.code == .notFound
                    && noDatabase?.message.contains("the database 'nodb' does not exist") == true,
                "\(String(describing: noDatabase))")
            let noCreate = await modelError {
                _ = try await PostgresStore.open(
                    url: "postgres:///postgres?host=\(dir)&user=nocreate&schema=t_nocreate")
            }
            #expect(
                noCreate?.code == .permissionDenied
                    && noCreate?.message.contains("needs CREATE on the database 'postgres'") == true,
                "\(String(describing: noCreate))")

            let right = try await PostgresStore.open(
                url: "postgres://pwuser:rightpw@/postgres?host=\(dir)&schema=t_right", applying: SampleTrips.schema)
            #expect(try await right.tableNames().contains("Trip"))
            await right.close()
        }
    }
}
