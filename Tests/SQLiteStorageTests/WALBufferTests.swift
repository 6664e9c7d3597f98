import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// The writer's VFS (`Sources/CSQLite/wal_buffer.h`), which gathers a commit's writes to the WAL
/// into one: a commit is one write however many frames it has (up to 126,976 bytes), it is in the file, for any other
/// connection, as soon as it returns (whether or not SQLite syncs it), and transactions larger
/// than the buffer, whose pages SQLite spills to the WAL and rewrites before they commit, read
/// back whole. The writer opens through the VFS; a reader connection, on the default VFS, is
/// the control and the other connection.
@Suite struct WALBufferTests {
    /// Write system calls this thread has made (`/proc/thread-self/io`, `syscw`).
    private static func writeCalls() throws -> Int {
        let text = try String(contentsOfFile: "/proc/thread-self/io", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("syscw:") })
        return try #require(Int(line.dropFirst("syscw:".count).trimmingCharacters(in: .whitespaces)))
    }

    /// A table with an index on a key that scatters its rows over the index's pages, so that a
    /// transaction of a few hundred rows dirties tens of pages.
    private static func prepare(_ connection: SQLiteConnection) throws {
        try connection.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL")
        try connection.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, key INTEGER, payload TEXT)")
        try connection.execute("CREATE INDEX item_key ON item(key)")
        try connection.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
            INSERT INTO item(key, payload) SELECT (i * 7919) % 1000003, printf('%.40c', 'x') FROM n
            """)
    }

    /// One transaction of 20 rows whose keys land all over the index (about 23 pages changed, 95 KB
    /// of frames: less than one write of the VFS, 126,976 bytes): the write calls it made on this
    /// thread.
    private static func writesOfOneCommit(_ connection: SQLiteConnection, first: Int) throws -> Int {
        let before = try writeCalls()
        try connection.execute(
            """
            BEGIN IMMEDIATE;
            WITH RECURSIVE n(i) AS (SELECT \(first) UNION ALL SELECT i + 1 FROM n WHERE i < \(first + 19))
            INSERT INTO item(key, payload) SELECT (i * 104729) % 1000003, 'new' FROM n;
            COMMIT
            """)
        return try writeCalls() - before
    }

    @Test func aCommitOfManyFramesIsOneWriteThroughTheWritersVFS() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store.sqlite").path
            let writer = try SQLiteConnection(path: path, role: .writer)
            defer { writer.close() }
            try Self.prepare(writer)
            // The control: the same transaction through the default VFS writes each frame's
            // header and page apart.
            let reader = try SQLiteConnection(path: path, role: .reader)
            defer { reader.close() }
            let unbuffered = try Self.writesOfOneCommit(reader, first: 100_000)
            let buffered = try Self.writesOfOneCommit(writer, first: 200_000)
            #expect(unbuffered >= 30, "the default VFS made \(unbuffered) writes")
            #expect(buffered == 1, "the writer's VFS made \(buffered) writes")
            #expect(try reader.scalarInt("SELECT count(*) FROM item") == 20_040)
        }
    }

    @Test(arguments: ["FULL", "OFF"])
    func eachCommitIsInTheFileForOtherConnectionsWhenItReturns(synchronous: String) async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store.sqlite").path
            let writer = try SQLiteConnection(path: path, role: .writer)
            defer { writer.close() }
            try Self.prepare(writer)
            // Without a sync on commit, the commit frame's page is what writes the buffer.
            try writer.execute("PRAGMA synchronous=\(synchronous)")
            let reader = try SQLiteConnection(path: path, role: .reader)
            defer { reader.close() }
            for round in 1...40 {
                try writer.execute("INSERT INTO item(key, payload) VALUES (\(round), printf('%.3000c', 'y'))")
                #expect(try reader.scalarInt("SELECT count(*) FROM item WHERE key = \(round)") == 1)
                #expect(try reader.scalarInt("SELECT count(*) FROM item") == Int64(20_000 + round))
            }
        }
    }

    @Test func aTransactionLargerThanTheBufferWithSpilledPagesReadsBackWhole() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store.sqlite").path
            do {
                let writer = try SQLiteConnection(path: path, role: .writer)
                defer { writer.close() }
                try Self.prepare(writer)
                // A page cache of 20 pages: SQLite writes pages to the WAL before the commit,
                // reads them back and writes some of them again, over about 10 MB of frames.
                try writer.execute("PRAGMA cache_size=20")
                try writer.execute(
                    """
                    BEGIN IMMEDIATE;
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000)
                    INSERT INTO item(key, payload) SELECT (i * 104729) % 1000003, printf('%.300c', 'z') FROM n;
                    UPDATE item SET payload = 'changed' WHERE id % 7 = 0;
                    COMMIT
                    """)
                let reader = try SQLiteConnection(path: path, role: .reader)
                defer { reader.close() }
                #expect(try reader.scalarInt("SELECT count(*) FROM item") == 50_000)
                #expect(try reader.scalarInt("SELECT count(*) FROM item WHERE payload = 'changed'") == 7_142)
            }
            // Opened again, from the file alone.
            let again = try SQLiteConnection(path: path, role: .reader)
            defer { again.close() }
            var problems: [String] = []
            try again.query("PRAGMA integrity_check") { problems.append($0.text(0)) }
            #expect(problems == ["ok"])
            #expect(try again.scalarInt("SELECT count(*) FROM item") == 50_000)
            // Rows whose id is a multiple of 7 say 'changed'; the others keep 40 or 300 characters.
            let changed = 50_000 / 7, changedFirst = 20_000 / 7
            let characters = (20_000 - changedFirst) * 40 + (30_000 - (changed - changedFirst)) * 300 + changed * 7
            #expect(try again.scalarInt("SELECT sum(length(payload)) FROM item") == Int64(characters))
        }
    }
}
