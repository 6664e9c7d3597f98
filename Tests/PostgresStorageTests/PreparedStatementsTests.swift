import Foundation
import ModelCore
import ModelFixtures
import NIOCore
import PostgresNIO
@testable import PostgresStorage
import Testing

/// A reader's connection keeps the statements it reads with prepared (`PreparedStatements`):
/// each text is prepared once and then only bound and run; the least recently used is closed
/// past the capacity; one the server no longer knows, or can no longer run as prepared, is
/// prepared again; one that fails to prepare is not kept and fails as a statement does. What
/// the server has prepared is read from its own view, `pg_prepared_statements`, on the same
/// connection.
@Suite struct PreparedStatementsTests {
    /// Runs `body` on the one reader connection of a new store.
    static func withReader(_ body: @escaping @Sendable (PostgresAsyncSession) async throws -> Void) async throws {
        let store = try await PostgresStore.open(
            url: try PostgresServer.freshStoreURL() + "&pool_size=1", applying: SampleTrips.schema)
        try await store.readers.runAsync { try await body($0) }
        await store.close()
    }

    /// The statements prepared on `session`'s connection whose text contains `marker`.
    static func prepared(_ session: PostgresAsyncSession, containing marker: String) async throws -> [String] {
        // A statement of its own, not prepared, so that it does not count itself.
        let rows = try await session.connection.query(
            "SELECT statement FROM pg_prepared_statements WHERE strpos(statement, \(marker)) > 0 ORDER BY statement",
            logger: PostgresSession.logger)
        var statements: [String] = []
        for try await (statement) in rows.decode(String.self) { statements.append(statement) }
        return statements
    }

    /// The first column of the first row, as a bigint.
    static func int(_ rows: [PostgresRow]) throws -> Int64? {
        try rows.first.flatMap { try $0.first.flatMap(PostgresValues.int) }
    }

    /// The first column of the first row, as text.
    static func text(_ rows: [PostgresRow]) throws -> String? {
        try rows.first.flatMap { try $0.first.flatMap(PostgresValues.text) }
    }

    /// How many statements `statements` holds, read on its event loop.
    static func count(_ statements: PreparedStatements) async throws -> Int {
        try await statements.connection.eventLoop.submit { statements.count }.get()
    }

    @Test func aStatementReadAgainIsPreparedOnceAndRunWithEachReadsValues() async throws {
        try await Self.withReader { session in
            let sql = "SELECT $1::bigint + 1 AS once_marker"
            let first = try await Self.int(session.query(sql, [.int(41)]))
            let second = try await Self.int(session.query(sql, [.int(1)]))
            #expect(first == 42 && second == 2)
            let prepared = try await Self.prepared(session, containing: "once_marker")
            let count = try await Self.count(session.statements)
            #expect(prepared == [sql] && count == 1)
        }
    }

    @Test func aStatementThatLeavesAParameterOutIsRunUnprepared() async throws {
        #expect(PreparedStatements.references("SELECT $1::text, $2::bigint", parameters: 2))
        #expect(PreparedStatements.references("WHERE a = ANY($1) AND b = $2", parameters: 2))
        #expect(!PreparedStatements.references("WHERE b = $2::text", parameters: 2))
        #expect(!PreparedStatements.references("WHERE b = $12", parameters: 2))
        #expect(PreparedStatements.references("SELECT 1", parameters: 0))
        try await Self.withReader { session in
            // $1 is bound but not used: PostgreSQL could not infer its type to prepare it.
            let sql = "SELECT $2::text AS unused_marker"
            let rows = try await session.query(sql, [.string("left out"), .string("used")])
            let again = try await session.query(sql, [.string("left out"), .string("again")])
            #expect(try Self.text(rows) == "used" && Self.text(again) == "again")
            let prepared = try await Self.prepared(session, containing: "unused_marker")
            #expect(prepared.isEmpty)
        }
    }

    @Test func pastItsCapacityTheLeastRecentlyUsedStatementIsClosedOnTheServer() async throws {
        try await Self.withReader { session in
            let statements = PreparedStatements(connection: session.connection, capacity: 3)
            func run(_ n: Int) async throws -> Int64? {
                let sql = "SELECT \(n)::bigint AS capacity_marker"
                return try Self.int(
                    try await statements.connection.eventLoop.flatSubmit { statements.rows(sql, []) }.get())
            }
            var answers: [Int64?] = []
            // After the fourth, 2 is the least recently used.
            for n in [1, 2, 3, 1, 4] { answers.append(try await run(n)) }
            #expect(answers == [1, 2, 3, 1, 4])
            let count = try await Self.count(statements)
            let prepared = try await Self.prepared(session, containing: "capacity_marker")
            #expect(count == 3)
            #expect(prepared == [1, 3, 4].map { "SELECT \($0)::bigint AS capacity_marker" })
        }
    }

    @Test func aStatementMadeStaleIsPreparedAgain() async throws {
        let store = try await PostgresStore.open(
            url: try PostgresServer.freshStoreURL() + "&pool_size=1", applying: SampleTrips.schema)
        try await store.writer.run { session in
            try session.query("CREATE TABLE stale_marker (x bigint)")
            try session.query("INSERT INTO stale_marker VALUES (7)")
        }
        let read = "SELECT x FROM stale_marker"
        let first = try await store.readers.runAsync { session in
            try Self.int(try await session.query(read))
        }
        #expect(first == 7)
        // The column's type changes under the prepared statement: PostgreSQL refuses to run it
        // as prepared ("cached plan must not change result type").
        try await store.writer.run { try $0.query("ALTER TABLE stale_marker ALTER COLUMN x TYPE text") }
        let changed = try await store.readers.runAsync { session in
            try Self.text(try await session.query(read))
        }
        #expect(changed == "7")
        // The server forgets every prepared statement of the connection.
        let again = try await store.readers.runAsync { session in
            _ = try await session.connection.query("DEALLOCATE ALL", logger: PostgresSession.logger)
            return try Self.text(try await session.query(read))
        }
        #expect(again == "7")
        await store.close()
    }

    @Test func aStatementThatFailsToPrepareFailsAsAStatementDoesAndIsNotKept() async throws {
        try await Self.withReader { session in
            do {
                _ = try await session.query("SELECT * FROM no_such_table_marker")
                Issue.record("a statement naming no table ran")
            } catch let error as ModelError {
                // A table the store's statements name is missing only when the store was dropped
                // or migrated by another daemon: NOT_FOUND, as its saves are told.
                #expect(error.code == .notFound, "\(error)")
                #expect(error.message.contains("no_such_table_marker") && error.message.contains("42P01"), "\(error)")
            }
            let count = try await Self.count(session.statements)
            let prepared = try await Self.prepared(session, containing: "no_such_table_marker")
            #expect(count == 0 && prepared.isEmpty)
        }
    }

    /// The values of a fetch are bound with their types spelt (`$1::bigint`), so that a fetch run
    /// again and again (PostgreSQL plans a prepared statement for any value after five runs)
    /// answers each value right, whichever type it compares with.
    @Test func aFetchRunAgainAndAgainAnswersEachValueRight() async throws {
        try await PostgresSaveTests.withStore { store in
            let trips = (1...8).map { n in
                InsertedObject(
                    id: PostgresSaveTests.temporary(store, "BusinessTrip"),
                    attributes: PostgresSaveTests.trip("t\(n)", "2026-05-0\(n)")
                        .merging(["perdiem": .double(Double(n))]) { $1 })
            }
            _ = try await store.save(ChangeSet(inserts: trips))
            for n in 1...8 {
                let byName = FetchDescriptor(
                    entityName: "Trip", predicate: try PredicateParser.parse("name == \"t\(n)\""), resultType: .count)
                let named = try await store.fetch(byName, overlay: nil)
                #expect(named == .count(1), "name t\(n)")
                let byPerdiem = FetchDescriptor(
                    entityName: "BusinessTrip", predicate: try PredicateParser.parse("perdiem >= \(n)"),
                    resultType: .count)
                let atLeast = try await store.fetch(byPerdiem, overlay: nil)
                #expect(atLeast == .count(9 - n), "perdiem >= \(n)")
                let byHalf = FetchDescriptor(
                    entityName: "BusinessTrip", predicate: try PredicateParser.parse("perdiem > \(Double(n) - 0.5)"),
                    resultType: .count)
                let above = try await store.fetch(byHalf, overlay: nil)
                #expect(above == .count(9 - n), "perdiem > \(Double(n) - 0.5)")
            }
        }
    }

    /// PostgresNIO reports a prepared statement's failures in its older error types, and a broken
    /// socket's error as it is: a lost connection is UNAVAILABLE (so a read is tried again on a
    /// new one) whichever form it takes, as it is for an unprepared statement.
    @Test func aConnectionLostUnderAPreparedStatementIsUnavailable() throws {
        let endpoint = try PostgresEndpoint(url: "postgres:///shop?host=/run/postgresql&user=modeld")
        let lost: [any Error] = [
            PostgresError.connectionClosed, PostgresError.protocol("Unexpected connection close"),
            ChannelError.ioOnClosedChannel, IOError(errnoCode: ECONNRESET, reason: "read"),
        ]
        for error in lost {
            let mapped = PostgresSession.error(error, endpoint: endpoint)
            #expect(mapped.code == .unavailable && mapped.message.contains("closed the connection"), "\(error)")
        }
        let other = PostgresSession.error(PostgresDecodingError.Code.typeMismatch, endpoint: endpoint)
        #expect(other.code == .storageFailure)
    }
}
