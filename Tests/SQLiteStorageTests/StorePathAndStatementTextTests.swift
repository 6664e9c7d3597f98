import Foundation
@testable import SQLiteStorage
import Testing

/// The two small helpers on a store's creation path that replaced Foundation's: a store path's
/// directory, and a byte search in a table's `CREATE` statement.
@Suite struct StorePathAndStatementTextTests {
    /// The same directory as `NSString.deletingLastPathComponent` for the paths of store
    /// locations (absolute, no trailing slash).
    @Test(arguments: ["/a/b/c.sqlite", "/a/b.sqlite", "/b.sqlite", "/tmp/modeld/stores/test-7.sqlite", "/a/b"])
    func aPathsDirectoryIsFoundationsToo(path: String) {
        #expect(SQLiteStorageFactory.directory(of: path) == (path as NSString).deletingLastPathComponent)
    }

    @Test func aFileAtTheRootIsInTheRoot() {
        #expect(SQLiteStorageFactory.directory(of: "/store.sqlite") == "/")
        #expect(SQLiteStorageFactory.directory(of: "store.sqlite") == "")
    }

    @Test func aStatementIsSearchedByItsBytes() {
        let sql = #"CREATE TABLE _modeld_transaction (id INTEGER PRIMARY KEY, "user" TEXT, "count" INTEGER)"#
        #expect(StoreMetadata.containsBytes(sql, #""user""#))
        #expect(StoreMetadata.containsBytes(sql, #""count" INTEGER)"#))
        #expect(StoreMetadata.containsBytes(sql, "CREATE"))
        #expect(!StoreMetadata.containsBytes(sql, #""users""#))
        #expect(!StoreMetadata.containsBytes(sql, "user\" TEXT, \"count\" INTEGER) and more"))
        #expect(!StoreMetadata.containsBytes("", "x"))
        #expect(StoreMetadata.containsBytes("CRÉATE \"é\"", "\"é\""))
    }
}
