import Foundation
import ModelCore
import ModelStorage

/// Where the catalog keeps a store's owner: in the store itself, for an SQLite store it places
/// (its label ``ownerLabel``, written in the commit that makes the store); in access.json,
/// written and synced, for a store at a URL of its own; in memory, for a store in memory.
extension StoreCatalog {
    /// The label a store keeps its owner's user id in (``StorageLabelling``); empty for none (a
    /// backup restored over a store without an owner).
    static let ownerLabel = "owner"

    /// Where a new store's owner is kept.
    enum OwnerKeeping {
        /// In the store itself: a store the daemon places, of a backend that keeps labels.
        case inStore
        /// In the daemon's memory only: a store that does not outlive the daemon.
        case inMemory
        /// In access.json, written and synced before the store is answered for: a store at a URL
        /// of its own (whose data may predate it, labels and all), or of a backend without labels.
        case inSettings
    }

    func ownerKeeping(backend: String, url: String?) -> OwnerKeeping {
        guard isPersistent(backend: backend, url: url) else { return .inMemory }
        return url == nil && registry.keepsLabels(backend) ? .inStore : .inSettings
    }

    /// ``make(name:backend:url:schema:labels:)`` with the owner's `record` written (and synced)
    /// to access.json while the store is made, on a Dispatch thread (a synced write would hold one
    /// of the few threads tasks run on); both are done before the answer. A record that a crash
    /// leaves without its store is dropped when the daemon starts (StoreSettings.keepOnly).
    func make(
        name: String, backend: String, url: String?, schema: Schema?, recording record: StoreAccessRecord
    ) async throws -> StoreHandle {
        let recording = DispatchedWork { [access] in try access.set(record, for: name) }
        let handle: StoreHandle
        do {
            handle = try await make(name: name, backend: backend, url: url, schema: schema)
        } catch {
            _ = try? await recording.value()
            // A record written for a store that was not made; one a failed write leaves there is
            // dropped at the next start, unless a store of the name exists by then.
            try? access.forget(name)
            throw error
        }
        do {
            try await recording.value()
        } catch {
            stores.withLock { $0[name] = nil }
            try? attached.remove(name)
            // An attached store's data was there before (another daemon's, say): it stays.
            await handle.close(forRemoval: url == nil)
            if url == nil { try? await registry.destroy(handle.location) }
            throw error
        }
        return handle
    }

    /// The owner a store the daemon placed keeps in itself (``ownerLabel``), gone by when
    /// access.json has no record of the store: the daemon made it and stopped before it next
    /// wrote the file. A record in the file (grants made since, a restore) comes first. Not for
    /// an attached store, whose labels another daemon may have written.
    func rememberOwner(keptIn handle: StoreHandle) {
        guard access.record(for: handle.name) == nil,
            let labelled = handle.container.backend as? any LabelledStorage,
            let owner = labelled.labels[Self.ownerLabel].flatMap(UInt32.init)
        else { return }
        access.remember(StoreAccessRecord(owner: owner), for: handle.name)
    }
}
