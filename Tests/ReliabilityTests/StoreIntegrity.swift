import ModelTesting
import SQLiteStorage

extension ModeldProcess {
    /// Stops the daemon, then runs SQLite's integrity check on the file of the store `name` it
    /// placed: `["ok"]` for a sound file, otherwise the problems found.
    func stopAndCheckIntegrity(ofStore name: String) async throws -> [String] {
        let path = dataDirectory + "/stores/\(name).sqlite"
        try await stop()
        let store = try await SQLiteStore.open(path: path)
        let problems = try await store.integrityCheck()
        await store.close()
        return problems
    }
}
