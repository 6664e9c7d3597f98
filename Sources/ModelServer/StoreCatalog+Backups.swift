import Foundation
import ModelCore
import ModelEngine
import ModelStorage

/// Backups and restores. Both go through files of `<stores>/.transfers`, on the stores' own file
/// system (a restored file is renamed into place), removed when the call ends; the directory is
/// made by the first of them and removed when the daemon starts (with what a crash left).
extension StoreCatalog {
    /// `<stores>/.transfers`.
    var transfers: URL { directory.appendingPathComponent(".transfers") }

    /// Removes what a crash left in the transfers directory, and the directory: it is made again
    /// by the first backup or restore.
    func prepareTransfers() throws {
        try? FileManager.default.removeItem(at: transfers)
    }

    /// A path for a new transfer file (the directory made if missing).
    func newTransferPath(_ kind: String) throws -> String {
        try FileManager.default.createDirectory(
            at: transfers, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return transfers.appendingPathComponent("\(kind)-\(UUID().uuidString.lowercased())").path
    }

    /// Writes a consistent copy of the store `name` to a new transfer file (the caller removes
    /// it) and says what it holds.
    func backup(_ name: String) async throws -> (path: String, summary: BackupSummary) {
        let handle = try handle(named: name)
        guard let backend = handle.container.backend as? any StorageBackupWriting else {
            throw ModelError(
                .invalidArgument,
                handle.backend == "memory"
                    ? "the store '\(name)' is kept in memory: it has no file to back up (export its objects with 'modelctl export' instead)"
                    : "the store '\(name)' is on the \(handle.backend) backend, whose data modeld does not copy: back it up with that server's own tools (for PostgreSQL, pg_dump of the store's schema: see docs/postgres.md)",
                context: ["store": name, "backend": handle.backend])
        }
        let path = try newTransferPath("backup")
        do {
            return (path, try await backend.writeBackup(to: path))
        } catch let error as ModelError where error.code == .closed {
            unlink(path)
            throw ModelError(
                .notFound, "no store named '\(name)': it was dropped during the backup", context: ["store": name])
        }
    }

    /// Makes the store `name` from the backup file at `path` (a transfer file, checked here
    /// first, then moved into place). With `replace`, a store of that name is dropped first
    /// (`beforeReplacing` ends its sessions); with `newIdentity`, the restored store gets a new UUID.
    func restore(
        from path: String, as name: String, replace: Bool, newIdentity: Bool, owner: UInt32,
        beforeReplacing: (StoreHandle) async throws -> Void
    ) async throws -> (StoreHandle, BackupSummary) {
        try StoreName.validate(name)
        guard let factory = try registry.factory(for: "sqlite") as? any StorageBackupRestoring,
            let location = factory.location(forStoreNamed: name, in: directory)
        else {
            throw ModelError(.invalidArgument, "this daemon has no backend that restores SQLite backups")
        }
        let summary = try await factory.checkBackup(at: path, newIdentity: newIdentity)
        return try await changes.withPermit {
            let existing = stores.withLock { $0[name] }
            if existing != nil, !replace {
                throw ModelError(
                    .uniqueConstraint,
                    "a store named '\(name)' already exists; restore with replace to drop it and serve the backup in its place, or choose another name",
                    context: ["store": name])
            }
            if let twin = stores.withLock({
                $0.values.first { $0.storeIdentifier == summary.storeIdentifier && $0.name != name }
            }) {
                throw ModelError(
                    .uniqueConstraint,
                    "the store '\(twin.name)' is served with this backup's UUID (\(summary.storeIdentifier.uuidString.lowercased())): restore over it with replace, or restore a copy with a new identity (new UUID, so new URIs)",
                    context: ["store": name, "uuid": summary.storeIdentifier.uuidString.lowercased()])
            }
            // Whether the name's data could not be opened at start-up and is replaced now.
            var replacedUnopened = false
            if let existing {
                try existing.checkAvailable()
                // The store keeps its owner and grants: in access.json from now on, since the
                // owner the store kept in itself (``ownerLabel``) goes with its data.
                if let record = access.record(for: name) { try access.set(record, for: name) }
                try await beforeReplacing(existing)
                stores.withLock { $0[name] = nil }
                try attached.remove(name)
                await existing.close(forRemoval: true)
                try await registry.destroy(existing.location)
            } else if replace, let unopened = unopened.withLock({ $0[name] }) {
                // Data that could not be opened at start-up, replaced: the backup is what it was
                // kept for. Its owner and grants stay, as over a store that opened.
                if let record = access.record(for: name) { try access.set(record, for: name) }
                if let location = unopened.location { try await registry.destroy(location) }
                self.unopened.withLock { _ = $0.removeValue(forKey: name) }
                try attached.remove(name)
                replacedUnopened = true
            } else {
                guard count < maximumStores else {
                    throw ModelError(
                        .resourceExhausted,
                        "modeld serves \(count) stores, the most its file-descriptor limit allows beside its connections: drop a store first",
                        context: ["store": name])
                }
                if factory.hasData(at: location) {
                    throw ModelError(
                        .uniqueConstraint,
                        "the data of a store named '\(name)' exists at \(location) but the daemon could not open it at start-up (see its log); move it away or choose another name",
                        context: ["store": name])
                }
            }
            // A new store is its restorer's; one restored over keeps its owner and grants (or
            // its having none). The owner the backup's store kept in itself (``ownerLabel``) is
            // replaced by that one ("" for none), so that no later start takes it from there.
            let record =
                existing == nil && !replacedUnopened ? StoreAccessRecord(owner: owner) : access.record(for: name)
            let labels =
                registry.keepsLabels(location.scheme) ? [Self.ownerLabel: record.map { String($0.owner) } ?? ""] : [:]
            try await factory.installBackup(at: path, to: location)
            do {
                if existing == nil, !replacedUnopened { try access.set(record, for: name) }
                let handle = try await open(name: name, at: location, schema: nil, labels: labels)
                stores.withLock { $0[name] = handle }
                return (handle, summary)
            } catch {
                if existing == nil, !replacedUnopened { try? access.set(nil, for: name) }
                try? await registry.destroy(location)
                throw error
            }
        }
    }
}
