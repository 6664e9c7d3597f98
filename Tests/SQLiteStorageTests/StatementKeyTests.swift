import Foundation
import ModelFixtures
@testable import SQLiteStorage
import Testing

/// The statement cache's keys hash a sample of their text: texts that differ only where it is not
/// sampled hash alike, and are still cached apart.
@Suite struct StatementKeyTests {
    /// `SELECT /* … */ <value>, 0, 0, …`, of one length for every digit: the value is at byte 43,
    /// between the samples (bytes 0-7, 78-85 and 156-163).
    static func select(_ value: Int) -> String {
        "SELECT /* a comment that pads the start */ \(value)" + String(repeating: ", 0", count: 40)
    }

    @Test func textsDifferingOutsideTheSamplesHashAlikeAndStayApart() {
        let two = Self.select(2), three = Self.select(3)
        #expect(two.utf8.count == 164 && three.utf8.count == 164)
        #expect(StatementKey(two).hashValue == StatementKey(three).hashValue, "the test's texts should hash alike")
        #expect(StatementKey(two) != StatementKey(three))
        #expect(StatementKey(two) == StatementKey(String(decoding: Array(two.utf8), as: UTF8.self)))
        #expect(StatementKey("BEGIN") != StatementKey("BEGIN;"))
        #expect(StatementKey("BEGIN").hashValue == StatementKey("BEGIN").hashValue)
    }

    /// Statements whose keys hash alike are each cached, and each runs its own SQL.
    @Test func aConnectionRunsEachOfStatementsThatHashAlike() async throws {
        try await withTemporaryDirectory { directory in
            let connection = try SQLiteConnection(
                path: directory.appendingPathComponent("keys.sqlite").path, role: .writer)
            defer { connection.close() }
            for _ in 0..<3 {
                for value in 1...9 {
                    #expect(try connection.scalarInt(Self.select(value)) == Int64(value))
                }
            }
        }
    }
}
