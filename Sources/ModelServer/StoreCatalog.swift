import Foundation
import ModelCore
import ModelEngine
import ModelStorage
import SQLiteStorage
import Synchronization

/// The stores the daemon serves, by name. Lookups take a lock for a moment; creating, dropping
/// and changing the schema of stores take turns behind an async mutex, since they wait for the disk.
final class StoreCatalog: Sendable {
    /// `<data directory>/stores`.
    let directory: URL
    private let registry: StorageRegistry
    private let stores = Mutex<[String: StoreHandle]>([:])
    private let changes = AsyncMutex()
    /// The emptied files of dropped stores, for new ones.
    private let recycler: StoreFileRecycler

    /// The size limit of SQLite store files.
    let maximumStoreSize: Int64?
    /// The most stores open at once (what the file-descriptor limit leaves for them).
    let maximumStores: Int

    init(directory: URL, registry: StorageRegistry = .standard, maximumStoreSize: Int64? = nil, maximumStores: Int = .max) {
        self.directory = directory
        self.registry = registry
        self.maximumStoreSize = maximumStoreSize
        self.maximumStores = maximumStores
        recycler = StoreFileRecycler(storesDirectory: directory)
    }

    /// Opens every `<name>.sqlite` file of the stores directory. Returns the files that could not
    /// be opened, with why, so that the daemon can say so and serve the others.
    func openExisting() async throws -> [(file: String, error: any Error)] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        // Sets left in the bin by an earlier run may not have been emptied and synced.
        recycler.removeAll()
        var failures: [(String, any Error)] = []
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".sqlite") }.sorted()
        for file in files {
            let name = String(file.dropLast(".sqlite".count))
            guard (try? StoreName.validate(name)) != nil else { continue }
            do {
                let handle = try await open(name: name, kind: .sqlite, schema: nil)
                stores.withLock { $0[name] = handle }
            } catch {
                failures.append((file, error))
            }
        }
        return failures
    }

    /// The store named `name`.
    func handle(named name: String) throws(ModelError) -> StoreHandle {
        if let handle = stores.withLock({ $0[name] }) { return handle }
        try StoreName.validate(name)
        throw ModelError(.notFound, "no store named '\(name)'; list the stores, or create it first", context: ["store": name])
    }

    /// Every store, by name.
    func all() -> [StoreHandle] {
        stores.withLock { Array($0.values) }.sorted { $0.name < $1.name }
    }

    var count: Int { stores.withLock { $0.count } }

    /// Creates a store, applying `schema` when given.
    func create(name: String, kind: StoreKind, schema: Schema?) async throws -> StoreHandle {
        try StoreName.validate(name)
        return try await changes.withLock {
            guard stores.withLock({ $0[name] }) == nil else {
                throw ModelError(.uniqueConstraint, "a store named '\(name)' already exists", context: ["store": name])
            }
            guard count < maximumStores else {
                throw ModelError(.resourceExhausted,
                    "modeld serves \(count) stores, the most its file-descriptor limit allows beside its connections: drop a store, raise the limit (LimitNOFILE= in its unit, ulimit -n), or lower --max-connections",
                    context: ["store": name])
            }
            if kind == .sqlite, FileManager.default.fileExists(atPath: file(for: name).path) {
                throw ModelError(.uniqueConstraint,
                    "the file of a store named '\(name)' exists but the daemon could not open it at start-up (see its log); move \(file(for: name).path) away or choose another name",
                    context: ["store": name])
            }
            do {
                if kind == .sqlite { recycler.claim(for: file(for: name).path) }
                let handle = try await open(name: name, kind: kind, schema: schema)
                stores.withLock { $0[name] = handle }
                return handle
            } catch {
                // A bad schema leaves no half-made store behind.
                if kind == .sqlite { try? await registry.destroy(url: StoreLocation(scheme: "sqlite", path: file(for: name).path).url) }
                throw error
            }
        }
    }

    /// Closes a store and deletes its data (its files are emptied for a new store, after the
    /// drop has returned: see ``StoreFileRecycler``). The caller closes its sessions first.
    func drop(name: String) async throws {
        try await changes.withLock {
            let handle = try handle(named: name)
            stores.withLock { $0[name] = nil }
            await handle.container.closeForRemoval()
            if handle.kind == .sqlite, recycler.recycle(handle.location.path) { return }
            try await registry.destroy(url: handle.location.url)
        }
    }

    /// Sets a store's schema (see `StorageBackend.apply(schema:)`) and returns its handle, whose
    /// container now has the new schema.
    func apply(schema: Schema, to name: String) async throws -> StoreHandle {
        try await changes.withLock {
            let handle = try handle(named: name)
            let backend = handle.container.backend
            try await backend.apply(schema: schema)
            handle.replace(try await ModelContainer.open(backend: backend))
            return handle
        }
    }

    /// Closes every store.
    func closeAll() async {
        let all = stores.withLock { stores in
            defer { stores = [:] }
            return Array(stores.values)
        }
        for handle in all { await handle.container.close() }
    }

    private func file(for name: String) -> URL { directory.appendingPathComponent("\(name).sqlite") }

    private func open(name: String, kind: StoreKind, schema: Schema?) async throws -> StoreHandle {
        let location = switch kind {
        case .sqlite: StoreLocation(scheme: "sqlite", path: file(for: name).path)
        case .memory: StoreLocation(scheme: "memory", path: name)
        }
        let container = try await ModelContainer.open(url: location.url, schema: schema, registry: registry)
        if let maximumStoreSize, let sqlite = container.backend as? SQLiteStore {
            try await sqlite.setMaximumFileSize(maximumStoreSize)
        }
        return StoreHandle(name: name, kind: kind, location: location, container: container)
    }
}
