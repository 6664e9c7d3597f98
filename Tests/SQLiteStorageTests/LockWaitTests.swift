import CSQLite
import ModelCore
import Testing

@testable import SQLiteStorage

/// A lock another connection held past the wait is UNAVAILABLE (the store is there, and takes
/// the call once the other lets go), not INTERNAL, which gRPC clients take for a fault not to
/// retry.
@Suite struct LockWaitTests {
    @Test(arguments: [SQLITE_BUSY, SQLITE_LOCKED])
    func aLockHeldTooLongIsUnavailable(code: Int32) {
        let error = ModelError.sqlite(code, message: "database is locked", sql: "BEGIN IMMEDIATE")
        #expect(error.code == .unavailable, "\(error)")
        #expect(error.message.contains("try again"), "\(error)")
    }
}
