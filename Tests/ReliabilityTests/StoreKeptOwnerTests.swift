import Foundation
import ModelRemote
import ModelTesting
import Synchronization
import Testing

/// An SQLite store the daemon places keeps its owner in itself, written in the commit that makes
/// it: making one writes no access list, and a daemon killed before it next wrote the list still
/// knows, at its next start, whose store it is (a store without an owner would be open to every
/// caller). A record in the list comes first.
@Suite struct StoreKeptOwnerTests {
    @Test func aStoresOwnerKeptInItOutlivesAKill() async throws {
        try await StalledClients.withDaemon { daemon in
            let list = Self.accessList(of: daemon)
            let (mine, shared) = try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let mine = try await client.createStore("mine")
                let shared = try await client.createStore("shared")
                #expect(mine.owner != nil && shared.owner == mine.owner)
                #expect(!FileManager.default.fileExists(atPath: list.path), "making a store wrote the access list")
                return (mine, try await client.grantAccess(to: .user("nobody"), on: "shared", write: true))
            }
            #expect(shared.grants.count == 1)
            try await daemon.kill()
            try await daemon.restart()
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                #expect(try await client.store("mine").owner == mine.owner, "the owner kept in the store was lost")
                let again = try await client.store("shared")
                #expect(again.owner == shared.owner && again.grants == shared.grants)
            }
        }
    }

    @Test func theAccessListsRecordComesBeforeTheStoresOwn() async throws {
        try await StalledClients.withDaemon { daemon in
            let made = try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                try await client.createStore("mine")
            }
            try await daemon.stop()
            // An administrator's list (restored from a backup, say) names another owner.
            let list = Self.accessList(of: daemon)
            try Data(#"{"mine": {"owner": 4242, "grants": []}}"#.utf8).write(to: list)
            try await daemon.restart()
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let info = try await client.store("mine")
                #expect(info.owner == "uid 4242", "the store's own owner (\(made.owner ?? "none")) won over the list")
            }
        }
    }

    /// A backup restored over a store keeps that store's owner, or its having none: the owner
    /// the backed-up store kept in itself does not come back at the next start.
    @Test func aStoreRestoredOverKeepsHavingNoOwnerAfterAKill() async throws {
        // The daemon makes its default store itself: it has no owner, and is open to every caller.
        // (The last --default-store given is the one the daemon goes by.)
        try await StalledClients.withDaemon(arguments: ["--default-store", "default"]) { daemon in
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                #expect(try await client.store("default").owner == nil)
                #expect(try await client.createStore("mine").owner != nil)
                let backup = Mutex(Data())
                try await client.backupStore("mine") { data in backup.withLock { $0.append(data) } }
                let chunks = Mutex([backup.withLock { $0 }])
                let restored = try await client.restoreStore("default", replace: true, newIdentity: true) {
                    chunks.withLock { $0.popLast() }
                }
                #expect(restored.owner == nil)
            }
            try await daemon.kill()
            try await daemon.restart()
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let owner = try await client.store("default").owner
                #expect(owner == nil, "the owner kept in the backed-up store came back with the restore")
            }
        }
    }

    /// A store at a URL of its own may have been made by another daemon, which kept its own
    /// caller in it: a daemon that attaches it goes by its access list only.
    @Test func anAttachedStoresOwnIsNotTrusted() async throws {
        try await StalledClients.withDaemon { first in
            try await StalledClients.withDaemon { second in
                _ = try await DaemonClient.withClient(socketPath: first.socketPath) { client in
                    try await client.createStore("placed")
                }
                // Stopped, so that its last connection copied the WAL into the file.
                _ = try await first.stop()
                let file = URL(fileURLWithPath: first.dataDirectory).appendingPathComponent("stores/placed.sqlite").path
                let attached = try await DaemonClient.withClient(socketPath: second.socketPath) { client in
                    try await client.createStore("attached", backend: nil, url: "sqlite://\(file)")
                }
                #expect(attached.owner != nil)
                _ = try await second.stop()
                // Its record lost: the store is the daemon's own again (open to every caller), not
                // the first daemon's caller's.
                let list = Self.accessList(of: second)
                #expect(FileManager.default.fileExists(atPath: list.path), "an attached store's owner was not written")
                try FileManager.default.removeItem(at: list)
                try await second.restart()
                try await DaemonClient.withClient(socketPath: second.socketPath) { client in
                    let owner = try await client.store("attached").owner
                    #expect(owner == nil, "the first daemon's caller, kept in the store, was taken as its owner")
                }
            }
        }
    }

    /// The daemon's access list (its owners and grants).
    private static func accessList(of daemon: ModeldProcess) -> URL {
        URL(fileURLWithPath: daemon.dataDirectory).appendingPathComponent("stores/access.json")
    }
}
