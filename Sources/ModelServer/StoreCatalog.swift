import Foundation
import ModelCore
import ModelEngine
import ModelStorage
import Synchronization

/// The stores the daemon serves, by name, on whatever backends its registry has. A store is
/// placed by its backend in `<data>/stores` (an SQLite file, a memory store), or lives at a URL of
/// its own (attached: remembered in `<data>/stores/attached.json` when its backend keeps data
/// across restarts). Lookups take a lock for a moment; creating, dropping and changing the
/// schema of stores take turns, since they wait for the disk.
final class StoreCatalog: Sendable {
    /// `<data directory>/stores`.
    let directory: URL
    let registry: StorageRegistry
    let stores = Mutex<[String: StoreHandle]>([:])
    /// The stores whose data was there at start-up but could not be opened, with why: a call
    /// naming one is told so, not that there is no such store.
    let unopened = Mutex<[String: UnopenedStore]>([:])
    /// The stores whose server could not be reached at start-up (UNAVAILABLE: a PostgreSQL server
    /// down, or not up yet): opened as soon as it can be (``openUnreachable()``).
    let unreachable = Mutex<[String: UnreachableStore]>([:])
    /// Whether ``openUnreachable()`` is under way.
    let reopening = Atomic(false)

    /// Creating, dropping, restoring and migrating stores take turns.
    let changes = AsyncSemaphore(permits: 1)
    let attached: AttachedStores
    /// The stores' own history retention.
    let retention: StoreRetentionSettings
    /// Who owns each store and what others were granted.
    let access: StoreAccessList

    /// The size limit of stores whose backend can keep one (``StorageSizeLimiting``).
    let maximumStoreSize: Int64?
    /// The most stores open at once (what the file-descriptor limit leaves for them).
    let maximumStores: Int

    init(directory: URL, registry: StorageRegistry, maximumStoreSize: Int64? = nil, maximumStores: Int = .max) {
        self.directory = directory
        self.registry = registry
        self.maximumStoreSize = maximumStoreSize
        self.maximumStores = maximumStores
        attached = AttachedStores(file: directory.appendingPathComponent("attached.json"))
        retention = StoreRetentionSettings(file: directory.appendingPathComponent("retention.json"))
        access = StoreAccessList(file: directory.appendingPathComponent("access.json"))
    }

    /// Opens every store the backends placed in the stores directory before, and every attached
    /// one. Returns those that could not be opened, with why, so that the daemon can say so and
    /// serve the others.
    func openExisting() async throws -> [(store: String, error: any Error)] {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try prepareTransfers()
        try retention.load()
        try access.load()
        var found: [(name: String, location: StoreLocation)] = []
        for scheme in registry.schemes { found += try registry.factory(for: scheme).storesPlaced(in: directory) }
        var failures: [(String, any Error)] = []
        let attachedStores = try attached.all()
        let attachedNames = Set(attachedStores.map { $0.name })
        // Settings of stores that are gone (dropped before a crash cut short the settings' write).
        let known = Set(found.map { $0.name }).union(attachedStores.map { $0.name })
        try retention.keepOnly(known)
        try access.keepOnly(known)
        for (name, url) in attachedStores {
            do {
                found.append((name, try registry.location(parsing: url)))
            } catch {
                failures.append(("\(name) (\(url))", error))
                unopened.withLock { $0[name] = UnopenedStore(reason: Self.reason(error), location: nil) }
            }
        }
        for (name, location) in found {
            guard (try? StoreName.validate(name)) != nil, stores.withLock({ $0[name] }) == nil else { continue }
            if let other = stores.withLock({ $0.values.first { $0.location == location } }) {
                failures.append(
                    ("\(name) (\(location))", ModelError(.uniqueConstraint, "served already as '\(other.name)'")))
                continue
            }
            do {
                // A store is opened only as it is: one at a remembered URL only if it is still
                // there, and none made anew from an empty file.
                let handle = try await open(name: name, at: location, schema: nil, existingOnly: true)
                if !attachedNames.contains(name) { rememberOwner(keptIn: handle) }
                stores.withLock { $0[name] = handle }
            } catch let error as ModelError where error.code == .unavailable {
                failures.append(("\(name) (\(location))", error))
                unreachable.withLock {
                    $0[name] = UnreachableStore(
                        location: location, reason: error.message, attached: attachedNames.contains(name))
                }
            } catch {
                failures.append(("\(name) (\(location))", error))
                unopened.withLock { $0[name] = UnopenedStore(reason: Self.reason(error), location: location) }
            }
        }
        return failures
    }

    static func reason(_ error: any Error) -> String {
        (error as? ModelError)?.message ?? "\(error)"
    }

    /// The store named `name`.
    func handle(named name: String) throws(ModelError) -> StoreHandle {
        if let handle = stores.withLock({ $0[name] }) { return handle }
        try StoreName.validate(name)
        if let reason = unreachable.withLock({ $0[name]?.reason }) {
            // Tried again now, and every few seconds by the daemon: the next call may find it open.
            Task { await self.openUnreachable() }
            throw ModelError(
                .unavailable,
                "the store '\(name)' could not be opened yet, its server unreachable since modeld started (\(reason)); modeld opens it as soon as the server answers: try again shortly",
                context: ["store": name])
        }
        if let reason = unopened.withLock({ $0[name]?.reason }) {
            throw ModelError(
                .storageFailure,
                "the store '\(name)' could not be opened when modeld started: \(reason); drop it, restore a backup over it (restore with replace), or repair or move its data (the daemon's log says where) and restart modeld",
                context: ["store": name])
        }
        throw ModelError(
            .notFound, "no store named '\(name)'; list the stores, or create it first", context: ["store": name])
    }

    /// Every store, by name.
    func all() -> [StoreHandle] {
        stores.withLock { Array($0.values) }.sorted { $0.name < $1.name }
    }

    var count: Int { stores.withLock { $0.count } }

    /// Creates a store, applying `schema` when given: placed by the backend of scheme `backend`
    /// in the stores directory, or at `url` (attached when a store is there already).
    func create(name: String, backend: String, url: String? = nil, schema: Schema?, owner: UInt32? = nil) async throws
        -> StoreHandle
    {
        try StoreName.validate(name)
        return try await changes.withPermit {
            guard let owner else { return try await make(name: name, backend: backend, url: url, schema: schema) }
            try checkNameFree(name)
            let record = StoreAccessRecord(owner: owner)
            let keeping = ownerKeeping(backend: backend, url: url)
            if keeping == .inSettings {
                return try await make(name: name, backend: backend, url: url, schema: schema, recording: record)
            }
            // Known before the store is served, so that no call finds it without its owner.
            access.remember(record, for: name)
            do {
                // Kept in the store, in the one commit that makes it: no settings file written
                // and synced per store (a test suite makes one per test). The daemon's next start
                // reads it from the store (``openExisting()``); the next write of access.json
                // includes it. A store in memory dies with the daemon, its record with it.
                return try await make(
                    name: name, backend: backend, url: url, schema: schema,
                    labels: keeping == .inStore ? [Self.ownerLabel: String(owner)] : [:])
            } catch {
                try? access.forget(name)
                throw error
            }
        }
    }

    /// Whether a store of `backend`, or at `url`, outlives the daemon (unknown: true, for `make`).
    func isPersistent(backend: String, url: String?) -> Bool {
        let scheme = url.map { (try? registry.location(parsing: $0))?.scheme } ?? backend
        guard let scheme, let factory = try? registry.factory(for: scheme) else { return true }
        return factory.isPersistent
    }

    private func checkNameFree(_ name: String) throws {
        guard stores.withLock({ $0[name] }) == nil, unreachable.withLock({ $0[name] }) == nil else {
            throw ModelError(.uniqueConstraint, "a store named '\(name)' already exists", context: ["store": name])
        }
    }

    /// ``create(name:backend:url:schema:owner:)``, once it is this call's turn; `labels` are kept
    /// in a store the daemon places.
    func make(
        name: String, backend: String, url: String?, schema: Schema?, labels: [String: String] = [:]
    ) async throws -> StoreHandle {
        try checkNameFree(name)
        guard count < maximumStores else {
            throw ModelError(
                .resourceExhausted,
                "modeld serves \(count) stores, the most its file-descriptor limit allows beside its connections: drop a store, raise the limit (LimitNOFILE= in its unit, ulimit -n), or lower --max-connections",
                context: ["store": name])
        }
        if let url {
            let location = try registry.location(parsing: url)
            try checkAttachable(location, as: name)
            let handle = try await open(name: name, at: location, schema: schema)
            do {
                // A copy of a served store's data (a file copied, a schema restored into another
                // database) has its UUID: served twice, its objects' URIs would name two objects.
                if let twin = stores.withLock({ $0.values.first { $0.storeIdentifier == handle.storeIdentifier } }) {
                    let uuid = handle.storeIdentifier.uuidString.lowercased()
                    throw ModelError(
                        .uniqueConstraint,
                        "the data at \(location) has the UUID of the store '\(twin.name)' (\(uuid)), served already: it is that store reached by another URL, or a copy of it; serve it under one name (a copy of an SQLite file gets a new identity by store backup, then store restore --new-identity)",
                        context: ["store": name, "url": location.description, "uuid": uuid])
                }
                if try registry.factory(for: location.scheme).isPersistent { try attached.add(name, location) }
            } catch {
                await handle.close()
                throw error
            }
            stores.withLock { $0[name] = handle }
            return handle
        }
        let factory = try registry.factory(for: backend)
        guard let location = factory.location(forStoreNamed: name, in: directory) else {
            throw ModelError(
                .invalidArgument,
                "a '\(backend)' store lives at a URL of its own: create it with one (\(backend)://…)",
                context: ["store": name, "backend": backend])
        }
        if factory.hasData(at: location) {
            throw ModelError(
                .uniqueConstraint,
                "the data of a store named '\(name)' exists at \(location) but the daemon could not open it at start-up (see its log); move it away or choose another name",
                context: ["store": name])
        }
        do {
            let handle = try await open(name: name, at: location, schema: schema, labels: labels)
            stores.withLock { $0[name] = handle }
            return handle
        } catch {
            // A bad schema leaves no half-made store behind.
            try? await registry.destroy(location)
            throw error
        }
    }

    /// Refuses a URL that another store is served from (two names would be one store, each
    /// caching its schema and keys), or one in the stores directory, whose files the backends
    /// place and find by name.
    private func checkAttachable(_ location: StoreLocation, as name: String) throws(ModelError) {
        if let other = stores.withLock({ $0.values.first { $0.location == location } }) {
            throw ModelError(
                .uniqueConstraint, "\(location) is served already, as the store '\(other.name)'; use that name",
                context: ["store": name, "url": location.description])
        }
        if location.path.hasPrefix(directory.standardizedFileURL.path + "/") {
            throw ModelError(
                .invalidArgument,
                "\(location) is inside the daemon's stores directory, where it places stores by name: create the store with a backend (\(location.scheme)) rather than a URL",
                context: ["store": name, "url": location.description])
        }
    }

    /// Closes a store and deletes its data. The caller closes its sessions first.
    func drop(name: String) async throws {
        try await changes.withPermit {
            let handle = try handle(named: name)
            try handle.checkAvailable()
            stores.withLock { $0[name] = nil }
            // Out of the settings files before the data goes; a failure leaves the store's data
            // and its owner's record, and the store closed, unserved until the daemon starts again.
            do {
                try attached.remove(name)
                try retention.forget(name)
                try access.forget(name)
            } catch {
                await handle.close()
                throw error
            }
            await handle.close(forRemoval: true)
            try await registry.destroy(handle.location)
        }
    }

    /// Changes the store `name`'s own history retention with `change`, and returns it; taking
    /// turns with drops, so that a dropped store leaves no setting behind.
    func changeRetention(of name: String, _ change: (inout RetentionSetting) -> Void) async throws
        -> RetentionSetting
    {
        try await changes.withPermit {
            _ = try handle(named: name)
            var setting = retention.setting(for: name) ?? RetentionSetting()
            change(&setting)
            try retention.set(setting, for: name)
            return setting
        }
    }

    /// Changes who may use the store `name`, taking turns with drops. A store without an owner
    /// (open to every caller) gets one, `ownerIfNone`, before `change`; without it (a revoke:
    /// there is nothing to take back) such a store is left open and unchanged.
    func changeAccess(of name: String, ownerIfNone: UInt32?, _ change: (inout StoreAccessRecord) -> Void)
        async throws
    {
        try await changes.withPermit {
            _ = try handle(named: name)
            guard var record = access.record(for: name) ?? ownerIfNone.map({ StoreAccessRecord(owner: $0) }) else {
                return
            }
            change(&record)
            try access.set(record, for: name)
        }
    }

    /// Closes every store.
    func closeAll() async {
        let all = stores.withLock { stores in
            defer { stores = [:] }
            return Array(stores.values)
        }
        for handle in all { await handle.close() }
    }

    func open(
        name: String, at location: StoreLocation, schema: Schema?, labels: [String: String] = [:],
        existingOnly: Bool = false
    ) async throws -> StoreHandle {
        let backend =
            existingOnly
            ? try await registry.openExisting(location)
            : try await registry.open(location, applying: schema, labels: labels)
        let container: ModelContainer
        do {
            if let maximumStoreSize, let limited = backend as? any StorageSizeLimiting {
                try await limited.setMaximumSize(maximumStoreSize)
            }
            container = try await ModelContainer.open(backend: backend)
        } catch {
            await backend.close()
            throw error
        }
        return StoreHandle(name: name, location: location, container: container)
    }
}
