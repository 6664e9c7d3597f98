@testable import SQLiteStorage

/// Runs `sql` on the store file at `path` through a connection of its own, as another tool that
/// writes to the file does.
func asAnotherTool(_ sql: String, on path: String) throws {
    let tool = try SQLiteConnection(path: path, role: .reader)
    defer { tool.close() }
    try tool.execute(sql)
}
