import CSQLite
import Foundation
import ModelCore
import ModelStorage
import Synchronization

/// Opens and destroys SQLite stores: `sqlite:///absolute/path.sqlite`. A daemon places a store
/// named `name` in `<stores>/<name>.sqlite`, and finds the stores it placed by those files.
///
/// With `recyclesFiles` (how the daemon runs it), a destroyed store's files are emptied for the
/// next store created in the same directory rather than deleted (``StoreFileRecycler``): a test
/// suite that makes a store per test pays for creating and freeing files otherwise. Only the
/// directories the factory places stores in recycle; a store at a URL of its own elsewhere (a
/// user's file the daemon attached) is deleted, leaving nothing behind in that directory.
public struct SQLiteStorageFactory: StorageBackendFactory, StorageLabelling {
    /// `sqlite`.
    public let scheme = "sqlite"
    /// Whether destroyed stores' files are kept, emptied, for the next stores.
    public let recyclesFiles: Bool
    /// The recycler of each directory, made when first needed.
    private let recyclers = Recyclers()

    /// A factory; with `recyclesFiles`, destroyed stores' files are emptied for new stores.
    public init(recyclesFiles: Bool = false) {
        self.recyclesFiles = recyclesFiles
    }

    /// Parses `sqlite:///absolute/path.sqlite` (or `sqlite:/absolute/path.sqlite`).
    public func location(parsing url: String) throws(ModelError) -> StoreLocation {
        let generic = try StoreLocation(url: url)
        guard generic.scheme == scheme else {
            throw ModelError(
                .invalidArgument, "'\(url)' is not an SQLite store URL; use sqlite:///absolute/path.sqlite")
        }
        let rest = generic.path
        guard rest.hasPrefix("///") || (rest.hasPrefix("/") && !rest.hasPrefix("//")) else {
            throw ModelError(.invalidArgument, "'\(url)' needs an absolute path: sqlite:///absolute/path.sqlite")
        }
        let path = rest.hasPrefix("///") ? String(rest.dropFirst(2)) : rest
        let decoded = path.removingPercentEncoding ?? path
        guard !decoded.contains("\0"), decoded.count > 1, !decoded.hasSuffix("/") else {
            throw ModelError(.invalidArgument, "'\(url)' does not name a file")
        }
        // `..` and repeated slashes go, so that one file has one location.
        return StoreLocation(scheme: scheme, path: URL(fileURLWithPath: decoded).standardizedFileURL.path)
    }

    /// `<directory>/<name>.sqlite`.
    public func location(forStoreNamed name: String, in directory: URL) -> StoreLocation? {
        if recyclesFiles { recyclers.place(in: directory) }
        return StoreLocation(scheme: scheme, path: directory.appendingPathComponent("\(name).sqlite").path)
    }

    /// Every `<name>.sqlite` file of `directory`. The recycling bin is emptied first: sets left
    /// in it by an earlier run may not have been emptied and synced.
    public func storesPlaced(in directory: URL) throws -> [(name: String, location: StoreLocation)] {
        if recyclesFiles { recyclers.place(in: directory).removeAll() }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasSuffix(".sqlite")
        }.sorted()
        return files.map { file in
            (
                String(file.dropLast(".sqlite".count)),
                StoreLocation(scheme: scheme, path: directory.appendingPathComponent(file).path)
            )
        }
    }

    /// Whether the store file exists.
    public func hasData(at location: StoreLocation) -> Bool {
        FileManager.default.fileExists(atPath: location.path)
    }

    /// Opens the store file at `location`, `notFound` when it is not there; an empty file (cut
    /// short, or made by a creation that never finished) is refused rather than made a new,
    /// empty store under a new UUID.
    public func openExisting(_ location: StoreLocation) async throws -> any StorageBackend {
        guard hasData(at: location) else {
            throw ModelError(
                .notFound,
                "no store file at \(location.path): it was dropped (by another daemon?) or moved; put it back, or create the store again to start an empty one there",
                context: ["url": location.description])
        }
        var info = stat()
        if stat(location.path, &info) == 0, info.st_size == 0 {
            throw ModelError(
                .storageFailure,
                "the store file \(location.path) is empty: it was cut short, or its creation never finished; restore a backup there, or remove it to make the store anew",
                context: ["url": location.description])
        }
        return try await open(location)
    }

    /// Opens the store file at `location`, creating it (and its directory) when missing.
    public func open(_ location: StoreLocation) async throws -> any StorageBackend {
        try await SQLiteStore.open(path: try prepare(location))
    }

    /// Opens the store file at `location` and applies `schema` in the transaction that prepares
    /// the file.
    public func open(_ location: StoreLocation, applying schema: Schema) async throws -> any StorageBackend {
        try await SQLiteStore.open(path: try prepare(location), applying: schema)
    }

    /// Makes the store file at `location` with `labels` kept in it, applying `schema` when given,
    /// in the transaction that prepares the file.
    public func create(_ location: StoreLocation, applying schema: Schema?, labels: [String: String]) async throws
        -> any StorageBackend
    {
        try await SQLiteStore.open(path: try prepare(location), applying: schema, labels: labels)
    }

    /// Removes the store file and its `-wal` and `-shm` files (moves them to the bin, recycling);
    /// a missing file is not an error.
    public func destroy(_ location: StoreLocation) async throws {
        let path = try path(of: location)
        if recyclesFiles,
            recyclers.recycler(forDirectory: Self.directory(of: path))?.recycle(path) == true
        {
            return
        }
        for file in [path, path + "-wal", path + "-shm", path + "-journal"]
        where FileManager.default.fileExists(atPath: file) {
            do {
                try FileManager.default.removeItem(atPath: file)
            } catch {
                throw ModelError(
                    .storageFailure, "cannot remove \(file): \(error.localizedDescription)", context: ["path": file])
            }
        }
    }

    /// Returns once the sets of files dropped so far have been emptied (or deleted).
    public func finishBackgroundWork() async {
        for recycler in recyclers.all { await recycler.finishEmptying() }
    }

    /// The store's path; a store about to be created takes an emptied set of files, recycling.
    private func prepare(_ location: StoreLocation) throws(ModelError) -> String {
        let path = try path(of: location)
        try Self.checkPlace(path)
        // A set of the daemon's own emptied files needs no look.
        if recyclesFiles, !FileManager.default.fileExists(atPath: path),
            recyclers.recycler(forDirectory: Self.directory(of: path))?.claim(for: path) == true
        {
            return path
        }
        switch Self.contents(of: path) {
        case .nothing, .store:
            return path
        case .notADatabase:
            // A file of something else is the caller's mistake, not a failure of the store.
            throw ModelError(
                .invalidArgument,
                "\(path) is not an SQLite database (the file holds something else): choose another path",
                context: ["path": path])
        case .anotherProgramsDatabase:
            // Refused as it was found: opening the store would have switched it to WAL first.
            throw ModelError(
                .invalidArgument, "\(path) is an SQLite database but not a modeld store; choose another path",
                context: ["path": path])
        }
    }

    /// Refuses a path that names a directory, or lies under a file: the caller's mistakes, said
    /// as such rather than as the failures opening there would give.
    private static func checkPlace(_ path: String) throws(ModelError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ModelError(
                .invalidArgument, "\(path) is a directory: a store's URL names its file (sqlite:///path/name.sqlite)",
                context: ["path": path])
        }
        var above = directory(of: path)
        while !above.isEmpty, above != "/" {
            if FileManager.default.fileExists(atPath: above, isDirectory: &isDirectory) {
                guard isDirectory.boolValue else {
                    throw ModelError(
                        .invalidArgument, "\(above) is a file, so no store can be made under it at \(path)",
                        context: ["path": path])
                }
                return
            }
            above = directory(of: above)
        }
    }

    /// The directory of the absolute `path`, without a trailing slash ("/" for a file at the
    /// root): what `NSString.deletingLastPathComponent` gives for the paths of store locations,
    /// which have no trailing slash, without Foundation's path handling (about 70,000
    /// instructions for the walk of a store's creation, against a few hundred).
    static func directory(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return slash == path.utf8.startIndex ? "/" : String(path[..<slash])
    }

    /// What the file at `path` holds, as a store is about to be opened there.
    enum Contents {
        /// No file, or an empty one: a new store.
        case nothing
        /// A store, or a database opening it as one will sort out (in WAL mode, as every
        /// store is: ``StoreMetadata`` refuses one that is not a store, without changing it).
        case store
        case notADatabase
        /// A database in another journal mode with tables, none of them modeld's.
        case anotherProgramsDatabase
    }

    /// What the file at `path` holds, looked at through SQLite, read-only: a descriptor of the
    /// file's own, closed, would drop every lock this process holds on it, were it open here
    /// already (under another path) — see ``SQLiteConnection/finishCreation()``.
    static func contents(of path: String) -> Contents {
        var info = stat()
        guard stat(path, &info) == 0, info.st_size > 0 else { return .nothing }
        var db: OpaquePointer?
        defer { sqlite3_close_v2(db) }
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else { return .store }
        func first(_ sql: String) -> (code: Int32, text: String?) {
            var statement: OpaquePointer?
            defer { sqlite3_finalize(statement) }
            var code = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
            if code == SQLITE_OK { code = sqlite3_step(statement) }
            guard code == SQLITE_ROW else { return (sqlite3_extended_errcode(db) & 0xff, nil) }
            return (code, sqlite3_column_text(statement, 0).map { String(cString: $0) })
        }
        let mode = first("PRAGMA journal_mode")
        if mode.code == SQLITE_NOTADB { return .notADatabase }
        // Anything else the opening itself reports, in its own words.
        guard let journal = mode.text, journal.lowercased() != "wal" else { return .store }
        let owned = first(
            "SELECT count(*) = 0 OR sum(name = '_modeld_meta') > 0 FROM sqlite_master WHERE type = 'table'")
        if owned.code == SQLITE_NOTADB { return .notADatabase }
        return owned.text == "0" ? .anotherProgramsDatabase : .store
    }

    private func path(of location: StoreLocation) throws(ModelError) -> String {
        guard location.scheme == scheme else {
            throw ModelError(
                .invalidArgument, "\(location) is not an SQLite store URL; use sqlite:///absolute/path.sqlite")
        }
        guard location.path.hasPrefix("/") else {
            throw ModelError(.invalidArgument, "\(location) needs an absolute path: sqlite:///absolute/path.sqlite")
        }
        return location.path
    }
}

/// One ``StoreFileRecycler`` per directory the factory places stores in, shared by the copies of
/// a factory.
private final class Recyclers: Sendable {
    private let byDirectory = Mutex<[String: StoreFileRecycler]>([:])

    /// The recycler of the directory at `path` if the factory places stores in it, or nil. The
    /// path is looked up as it is first (directories are kept standardized, and the daemon's
    /// stores directory is already: its stores' paths hit), and standardized only if that
    /// misses (a directory given with `..` or `//`, or one the factory does not place stores in).
    func recycler(forDirectory path: String) -> StoreFileRecycler? {
        if let recycler = byDirectory.withLock({ $0[path] }) { return recycler }
        let standardized = URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL.path
        return standardized == path ? nil : byDirectory.withLock { $0[standardized] }
    }

    /// Every directory's recycler.
    var all: [StoreFileRecycler] {
        byDirectory.withLock { Array($0.values) }
    }

    /// The recycler of `directory`, which the factory places stores in from now on.
    @discardableResult
    func place(in directory: URL) -> StoreFileRecycler {
        let directory = directory.standardizedFileURL
        return byDirectory.withLock { recyclers in
            if let recycler = recyclers[directory.path] { return recycler }
            let recycler = StoreFileRecycler(storesDirectory: directory)
            recyclers[directory.path] = recycler
            return recycler
        }
    }
}
