import Foundation
import GRPCCore
import ModelCore
import ModelStorage
import ModelWire

/// BackupStore and RestoreStore: a store's consistent copy streamed out, a backup streamed in.
/// The bytes go through a transfer file on the daemon's side (``StoreCatalog/transfers``), so a
/// slow client holds a file, not memory, and no store.
extension StoreServiceHandler {
    /// The bytes of a backup each message carries.
    static let chunkSize = 256 * 1024

    func backupStore(
        request: Modeld_V1_BackupStoreRequest, response: RPCWriter<Modeld_V1_BackupStoreResponse>,
        context: ServerContext
    ) async throws {
        try await core.rpc.handle("BackupStore") {
            _ = try core.store(request.name, whileMigrating: true, for: .read)
            let (path, summary) = try await core.catalog.backup(request.name)
            defer { unlink(path) }
            core.logger.info(
                "backed up store '\(request.name)' at history token \(summary.token.map { String($0.rawValue) } ?? "none") (\(summary.size) bytes)"
            )
            guard let file = FileHandle(forReadingAtPath: path) else {
                throw ModelError(
                    .storageFailure, "cannot read the backup file \(path): \(String(cString: strerror(errno)))")
            }
            defer { try? file.close() }
            var first = Modeld_V1_BackupStoreResponse.with { $0.info = summary.wire }
            var sent: Int64 = 0
            while true {
                let data = try file.read(upToCount: Self.chunkSize) ?? Data()
                if data.isEmpty, sent > 0 || summary.size == 0 { break }
                sent += Int64(data.count)
                first.data = data
                try await response.write(first)
                first = Modeld_V1_BackupStoreResponse()
                if data.isEmpty { break }
            }
            guard sent == summary.size else {
                throw ModelError(
                    .storageFailure, "the backup file changed while it was sent (\(sent) of \(summary.size) bytes)")
            }
        }
    }

    func restoreStore(
        request: RPCAsyncSequence<Modeld_V1_RestoreStoreRequest, any Error>, context: ServerContext
    ) async throws -> Modeld_V1_StoreInfo {
        try await core.rpc.handle("RestoreStore") {
            let path = try core.catalog.newTransferPath("restore")
            defer { unlink(path) }
            let first = try await receive(request, into: path)
            let (store, summary) = try await core.catalog.restore(
                from: path, as: first.name, replace: first.replace, newIdentity: first.newIdentity,
                owner: Caller.current.uid
            ) { existing in
                try core.checkAccess(.manage, to: existing.name)
                let closed = await core.sessions.end(
                    where: { $0.store === existing },
                    reason: "was closed: its store '\(existing.name)' was replaced by a restored backup")
                core.logger.info(
                    "replacing store '\(existing.name)' with a backup\(closed > 0 ? ", closing \(closed) session(s)" : "")"
                )
            }
            // A store it replaced was dropped: its series go with it, as a drop's do.
            if first.replace { core.metrics.storeDropped(store.name) }
            core.logger.info(
                "restored store '\(store.name)' (uuid \(summary.storeIdentifier.uuidString.lowercased())) at history token \(summary.token.map { String($0.rawValue) } ?? "none")"
            )
            return try await core.info(store)
        }
    }

    /// Writes the restore's bytes to a new file at `path`, synced, and returns its first message
    /// (which names the store). The size limit of stores, when the daemon has one, bounds it.
    private func receive(
        _ request: RPCAsyncSequence<Modeld_V1_RestoreStoreRequest, any Error>, into path: String
    ) async throws -> Modeld_V1_RestoreStoreRequest {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ModelError(.storageFailure, "cannot make \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var first: Modeld_V1_RestoreStoreRequest?
        var received: Int64 = 0
        let limit = core.catalog.maximumStoreSize
        for try await message in request {
            if first == nil {
                first = message
                try StoreName.validate(message.name)
                // Said before the bytes come, not after.
                if message.replace, (try? core.catalog.handle(named: message.name)) != nil {
                    try core.checkAccess(.manage, to: message.name)
                } else if message.replace, core.catalog.isUnopened(message.name) {
                    try core.checkMayManageUnopened(message.name)
                }
                if !message.replace, (try? core.catalog.handle(named: message.name)) != nil {
                    throw ModelError(
                        .uniqueConstraint,
                        "a store named '\(message.name)' already exists; restore with replace to drop it and serve the backup in its place, or choose another name",
                        context: ["store": message.name])
                }
            }
            received += Int64(message.data.count)
            if let limit, received > limit {
                throw ModelError(
                    .resourceExhausted,
                    "the backup is larger than the daemon's store size limit of \(limit) bytes (modeld --max-store-size)"
                )
            }
            try Self.write(message.data, to: descriptor, path: path)
        }
        guard let first else {
            throw ModelError(.invalidArgument, "the restore sent no message: its first names the store to make")
        }
        guard fsync(descriptor) == 0 else {
            throw ModelError(.storageFailure, "cannot sync \(path): \(String(cString: strerror(errno)))")
        }
        return first
    }

    private static func write(_ data: Data, to descriptor: Int32, path: String) throws(ModelError) {
        guard let failure = FileDescriptorWrites.writeAll(data, to: descriptor) else { return }
        if failure == ENOSPC || failure == EDQUOT {
            throw ModelError(
                .resourceExhausted,
                "the daemon's disk is full: the backup could not be received (nothing was restored); free space and restore again"
            )
        }
        throw ModelError(.storageFailure, "cannot write \(path): \(String(cString: strerror(failure)))")
    }
}

extension BackupSummary {
    var wire: Modeld_V1_BackupInfo {
        Modeld_V1_BackupInfo.with {
            $0.uuid = storeIdentifier.uuidString.lowercased()
            if let token { $0.historyToken = token.rawValue }
            $0.schemaVersionHash = schemaVersionHash
            $0.size = size
            $0.format = format
        }
    }
}
