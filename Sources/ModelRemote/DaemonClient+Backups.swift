import Foundation
import GRPCCore
import ModelCore
import ModelWire
import Synchronization

/// What a backup holds (``DaemonClient/backupStore(_:writing:)``).
public struct StoreBackupInfo: Hashable, Sendable {
    /// The UUID of the store it was taken from; a store restored from it keeps it.
    public var storeIdentifier: UUID
    /// Every transaction up to this token is in the backup, none after (nil: nothing was ever saved).
    public var historyToken: HistoryToken?
    /// The version hash of its schema ("" while it has none).
    public var schemaVersionHash: String
    /// Its size in bytes.
    public var size: Int64
    /// Its format (`sqlite`: an SQLite database file).
    public var format: String

    init(wire: Modeld_V1_BackupInfo) throws(ModelError) {
        guard let uuid = UUID(uuidString: wire.uuid) else {
            throw ModelError(.invalidArgument, "the daemon sent a backup without a store UUID")
        }
        storeIdentifier = uuid
        historyToken = wire.hasHistoryToken ? HistoryToken(wire.historyToken) : nil
        schemaVersionHash = wire.schemaVersionHash
        size = wire.size
        format = wire.format
    }
}

extension DaemonClient {
    /// Takes a consistent backup of `store` while it serves, handing its bytes to `write` in
    /// order; returns what it holds (the history token it is true at). Fails `invalidArgument`
    /// for a store whose backend the daemon does not copy (memory, PostgreSQL).
    @discardableResult
    public func backupStore(_ store: String, writing write: @Sendable @escaping (Data) async throws -> Void)
        async throws -> StoreBackupInfo
    {
        let request = Modeld_V1_BackupStoreRequest.with { $0.name = store }
        do {
            return try await caller.serverStreaming(Modeld_V1_StoreService.Method.BackupStore.descriptor, request) {
                (messages: RPCAsyncSequence<Modeld_V1_BackupStoreResponse, any Error>) in
                var info: StoreBackupInfo?
                var received: Int64 = 0
                for try await message in messages {
                    if info == nil {
                        guard message.hasInfo else {
                            throw ModelError(.storageFailure, "the daemon's backup did not begin with what it holds")
                        }
                        info = try StoreBackupInfo(wire: message.info)
                    }
                    received += Int64(message.data.count)
                    if !message.data.isEmpty { try await write(message.data) }
                }
                guard let info, received == info.size else {
                    throw ModelError(
                        .storageFailure,
                        "the backup ended after \(received) of \(info?.size ?? 0) bytes; take it again")
                }
                return info
            }
        } catch {
            throw translateAny(error, small: false)
        }
    }

    /// Makes the store `name` from a backup whose bytes `read` returns in order (nil at the end).
    /// The daemon checks it before serving it. With `replace`, a store of that name is dropped
    /// first (its sessions closed); with `newIdentity`, the restored store gets a new UUID (for a
    /// copy served beside the store it was taken from). An error `read` throws ends the call,
    /// with nothing made, and is thrown from here.
    @discardableResult
    public func restoreStore(
        _ name: String, replace: Bool = false, newIdentity: Bool = false,
        reading read: @Sendable @escaping () async throws -> Data?
    ) async throws -> StoreInfo {
        // What `read` threw, which ends the call: thrown in place of the call's cancellation.
        let readFailure = Mutex<(any Error)?>(nil)
        let readNoting: @Sendable () async throws -> Data? = {
            do {
                return try await read()
            } catch {
                readFailure.withLock { $0 = error }
                throw error
            }
        }
        do {
            let response: Modeld_V1_StoreInfo = try await caller.clientStreaming(
                Modeld_V1_StoreService.Method.RestoreStore.descriptor
            ) { (writer: RPCWriter<Modeld_V1_RestoreStoreRequest>) in
                var message = Modeld_V1_RestoreStoreRequest.with {
                    $0.name = name
                    $0.replace = replace
                    $0.newIdentity = newIdentity
                }
                var sentFirst = false
                while let data = try await readNoting() {
                    message.data = data
                    try await writer.write(message)
                    message = Modeld_V1_RestoreStoreRequest()
                    sentFirst = true
                }
                if !sentFirst { try await writer.write(message) }
            }
            return try StoreInfo(wire: response)
        } catch {
            if let failure = readFailure.withLock({ $0 }) { throw failure }
            throw translateAny(error, small: false)
        }
    }
}
