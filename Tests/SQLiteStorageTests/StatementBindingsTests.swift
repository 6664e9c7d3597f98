import Foundation
import ModelCore
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// A cached statement run by `runEach(bindsEveryParameter: true)` keeps its last row's values
/// bound (clearing them cost each save's insert and history rows about 1,300 instructions): a
/// later use of the same SQL that sets fewer parameters must still find the others null.
@Suite struct StatementBindingsTests {
    static let insert = "INSERT INTO t (a, b) VALUES (?1, ?2)"

    @Test func aUseSettingFewerParametersFindsTheRestNull() async throws {
        try await withTemporaryDirectory { directory in
            let connection = try SQLiteConnection(
                path: directory.appendingPathComponent("bindings.sqlite").path, role: .writer)
            defer { connection.close() }
            try connection.execute("CREATE TABLE t (a INTEGER, b TEXT)")
            try connection.runEach(Self.insert, over: 1...2, bindsEveryParameter: true) { row, statement in
                try statement.bind(.int(Int64(row)), at: 1)
                try statement.bind(.string("kept \(row)"), at: 2)
            }
            // The same cached statement, told only ?1: ?2 is null, not the last row's "kept 2".
            try connection.run(Self.insert, [.int(3)])
            try connection.runEach(Self.insert, over: [4], bindsEveryParameter: true) { row, statement in
                try statement.bind(.int(Int64(row)), at: 1)
                try statement.bind(.string("kept \(row)"), at: 2)
            }
            // And once more after a use that cleared them.
            try connection.run(Self.insert, [.int(5)])
            var rows: [String] = []
            try connection.query("SELECT a, coalesce(b, 'null') FROM t ORDER BY a") { row in
                rows.append("\(row.int64(0)) \(row.text(1))")
            }
            #expect(rows == ["1 kept 1", "2 kept 2", "3 null", "4 kept 4", "5 null"])
        }
    }
}
