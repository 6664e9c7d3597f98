import Foundation
import ModelCore
import ModelRemote
import ModelTesting
import Testing

/// A dropped store's settings (its owner and grants, its history retention) are forgotten: a
/// setting the files hold is written out of them at the drop, one the daemon only remembered
/// (an owner the store keeps in itself) without a write. Settings a crash leaves in the files for
/// a store that is gone are dropped at the next start: the store the daemon makes under that
/// name (its default store, which has no owner) is open to every caller and keeps the daemon's
/// retention, not its predecessor's.
@Suite struct DroppedStoreSettingsTests {
    @Test func aDroppedStoresSettingsDoNotOutliveACrash() async throws {
        try await Self.withDaemon { daemon in
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let made = try await client.store("default")
                #expect(made.owner == nil, "the daemon's own default store has no owner")
                #expect(!made.historyRetention.transactionsIsTheStores)
                _ = try await client.dropStore("default", force: true)
                // Made again by a caller: it owns it, and gives it a retention of its own.
                #expect(try await client.createStore("default").owner != nil)
                let kept = try await client.setHistoryRetention(of: "default", transactions: .limit(7))
                #expect(kept.historyRetention.transactions == 7 && kept.historyRetention.transactionsIsTheStores)
                _ = try await client.dropStore("default", force: true)
            }
            try await daemon.kill()
            // The start makes the default store again, as the daemon's own.
            try await daemon.restart()
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let remade = try await client.store("default")
                #expect(remade.owner == nil, "the dropped store's owner was kept for the new one")
                #expect(!remade.historyRetention.transactionsIsTheStores, "the dropped store's retention was kept")
            }
        }
    }

    @Test func aStoreMadeAfterADropWritesTheSettingsWithoutIt() async throws {
        try await Self.withDaemon(arguments: ["--default-store", ""]) { daemon in
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                _ = try await client.createStore("first")
                _ = try await client.dropStore("first", force: true)
                _ = try await client.createStore("second")
                // A grant writes the list (a store's owner is kept in the store at its making).
                try await client.grantAccess(to: .user("nobody"), on: "second", write: false)
            }
            // What the daemon's next start reads: the record of the store that is there only.
            #expect(try Self.stores(in: "access.json", of: daemon) == ["second"])
        }
    }

    /// A store with grants and a retention of its own, dropped, and made again under its name
    /// (whose owner the new store keeps in itself, writing no settings file): the drop writes
    /// the files without the dropped store at once, so that the daemon's next start, which goes
    /// by the files before a store's own record, does not give the new store the old one's
    /// grants and retention (a user could otherwise make, grant and drop a name another user
    /// would make later, and own their store after the next restart).
    @Test func aStoreMadeAgainUnderADroppedNameKeepsNoneOfItsSettingsAfterARestart() async throws {
        try await Self.withDaemon(arguments: ["--default-store", ""]) { daemon in
            func recorded(_ file: String) throws -> Set<String> { try Self.stores(in: file, of: daemon) }
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                _ = try await client.createStore("payroll")
                try await client.grantAccess(to: .user("nobody"), on: "payroll", write: true)
                _ = try await client.setHistoryRetention(of: "payroll", transactions: .limit(7))
                #expect(try recorded("access.json") == ["payroll"] && recorded("retention.json") == ["payroll"])
                _ = try await client.dropStore("payroll", force: true)
                #expect(try recorded("access.json").isEmpty && recorded("retention.json").isEmpty)
                let made = try await client.createStore("payroll")
                #expect(made.grants.isEmpty && !made.historyRetention.transactionsIsTheStores)
            }
            try await daemon.kill()
            try await daemon.restart()
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let restarted = try await client.store("payroll")
                #expect(restarted.grants.isEmpty, "the dropped store's grants: \(restarted.grants)")
                #expect(!restarted.historyRetention.transactionsIsTheStores, "the dropped store's retention")
                #expect(restarted.owner != nil)
            }
        }
    }

    /// A drop whose settings file cannot be written (here a directory stands where access.json
    /// goes) fails before the store's data goes: the store is kept, closed, with its record, and
    /// the daemon's next start serves it again with its grants.
    @Test func aDropThatCannotWriteTheSettingsKeepsTheStore() async throws {
        try await Self.withDaemon(arguments: ["--default-store", ""]) { daemon in
            let stores = URL(fileURLWithPath: daemon.dataDirectory).appendingPathComponent("stores")
            let access = stores.appendingPathComponent("access.json")
            let aside = stores.appendingPathComponent("access.json.aside")
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                _ = try await client.createStore("payroll")
                try await client.grantAccess(to: .user("nobody"), on: "payroll", write: false)
                try FileManager.default.moveItem(at: access, to: aside)
                try FileManager.default.createDirectory(
                    at: access.appendingPathComponent("in-the-way"), withIntermediateDirectories: true)
                await #expect(throws: ModelError.self) { _ = try await client.dropStore("payroll", force: true) }
                #expect(FileManager.default.fileExists(atPath: stores.appendingPathComponent("payroll.sqlite").path))
            }
            try FileManager.default.removeItem(at: access)
            try FileManager.default.moveItem(at: aside, to: access)
            try await daemon.kill()
            try await daemon.restart()
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let kept = try await client.store("payroll")
                #expect(kept.grants.count == 1, "\(kept.grants)")
            }
        }
    }

    /// Runs `body` with a daemon launched with `arguments`, removed afterwards.
    static func withDaemon(
        arguments: [String] = [], _ body: (ModeldProcess) async throws -> Void
    ) async throws {
        let daemon = try await ModeldProcess.launch(arguments: arguments)
        do {
            try await body(daemon)
        } catch {
            await daemon.remove()
            throw error
        }
        await daemon.remove()
    }

    /// The stores a settings file of `daemon`'s stores directory holds a value for (none when
    /// there is no file).
    static func stores(in file: String, of daemon: ModeldProcess) throws -> Set<String> {
        let path = URL(fileURLWithPath: daemon.dataDirectory).appendingPathComponent("stores/\(file)").path
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return Set((try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]).keys)
    }
}
