import ArgumentParser
import Foundation
import ModelCore
import ModelRemote

extension StoreCommand {
    /// `modelctl store backup NAME FILE`.
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a consistent backup of a store to a file while it serves.",
            discussion: """
                The backup holds every transaction up to one history token and none after; it is \
                printed with the store's UUID. Writers go on meanwhile. The file is an SQLite \
                database ('-' writes it to standard output, and the summary to standard error); \
                'store restore' makes a store from it. \
                Memory and PostgreSQL stores are not copied by modeld (see docs/operations.md).
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The store to back up.") var name: String
        @Argument(help: "The file to write ('-' for standard output); an existing file is replaced.") var file: String

        func run() async throws {
            let info = try await CLI.reportingErrors(socket: global.socketPath) {
                let output = try BackupOutput(path: file)
                do {
                    let info = try await DaemonClient.withClient(socketPath: global.socketPath) { client in
                        try await client.backupStore(name) { data in try output.write(data) }
                    }
                    try output.finish()
                    return info
                } catch {
                    output.abandon()
                    throw error
                }
            }
            // Written to standard output, the backup is followed by nothing: the summary goes to
            // standard error.
            let writer = RecordWriter(format: global.outputFormat, single: true, toStandardError: file == "-")
            writer.write([StoreCommand.record(info, store: name, file: file)])
            writer.finish()
        }
    }

    /// `modelctl store restore FILE NAME`.
    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a store from a backup file.",
            discussion: """
                The daemon checks the file (SQLite's integrity check and modeld's metadata) before it \
                serves the store, and makes nothing from a file that fails. The restored store keeps \
                the backup's UUID, so its objects' URIs are those of the store it was taken from.
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The backup file ('-' for standard input).") var file: String
        @Argument(help: "The store to make.") var name: String
        @Flag(help: "Replace a store of that name: drop it, its data and its sessions first.") var replace = false
        @Flag(help: "Give the restored store a new UUID (new URIs): for a copy served beside its original.")
        var newIdentity = false

        func run() async throws {
            let store = try await CLI.reportingErrors(socket: global.socketPath) {
                let input = try BackupInput(path: file)
                return try await DaemonClient.withClient(socketPath: global.socketPath) { client in
                    try await client.restoreStore(name, replace: replace, newIdentity: newIdentity) {
                        try input.next()
                    }
                }
            }
            let writer = RecordWriter(format: global.outputFormat, single: true)
            writer.write([StoreCommand.record(store)])
            writer.finish()
        }
    }

    static func record(_ info: StoreBackupInfo, store: String, file: String) -> Record {
        [
            ("store", .text(store)), ("uuid", .text(info.storeIdentifier.uuidString.lowercased())),
            ("history_token", .number(info.historyToken?.rawValue)),
            ("schema_version_hash", .text(info.schemaVersionHash.isEmpty ? nil : info.schemaVersionHash)),
            ("bytes", .number(info.size)), ("format", .text(info.format)), ("file", .text(file)),
        ]
    }
}

/// Where a backup is written. A regular file is written beside its path and renamed onto it
/// once whole, so that a failed backup leaves no partial file and an older backup there
/// untouched; a device or pipe (or '-', standard output) is written straight. Opened before the
/// daemon is asked, so that a bad path fails first.
final class BackupOutput: Sendable {
    private let descriptor: Int32
    private let path: String
    /// The file written, renamed onto `path` at the end; nil when writing straight to `path`.
    private let temporary: String?

    init(path: String) throws {
        self.path = path
        if path == "-" {
            descriptor = STDOUT_FILENO
            temporary = nil
            return
        }
        var info = stat()
        let isSpecial = stat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG
        temporary = isSpecial ? nil : path + ".partial-\(getpid())"
        descriptor = open(temporary ?? path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw FileError("cannot write \(path): \(String(cString: strerror(errno)))") }
    }

    func write(_ data: Data) throws {
        let failure = FileDescriptorWrites.writeAll(data, to: descriptor)
        if failure == EPIPE, descriptor == STDOUT_FILENO {
            // What reads standard output stopped (`| head`): end quietly by SIGPIPE, as other
            // output of modelctl does (141 in a shell).
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
        }
        if let failure {
            throw FileError(
                "cannot write \(path): \(String(cString: strerror(failure)))\(failure == ENOSPC ? " (the disk is full; nothing of the backup is kept)" : "")"
            )
        }
    }

    /// Syncs and closes the file, and renames it onto its path.
    func finish() throws {
        guard descriptor != STDOUT_FILENO else { return }
        let synced = fsync(descriptor) == 0 || errno == EINVAL // EINVAL: a device or pipe
        let error = errno
        close(descriptor)
        guard synced else {
            if let temporary { unlink(temporary) }
            throw FileError("cannot write \(path): \(String(cString: strerror(error)))")
        }
        if let temporary, rename(temporary, path) != 0 {
            let error = errno
            unlink(temporary)
            throw FileError("cannot write \(path): \(String(cString: strerror(error)))")
        }
    }

    /// Closes the file and removes what was written of it.
    func abandon() {
        guard descriptor != STDOUT_FILENO else { return }
        close(descriptor)
        if let temporary { unlink(temporary) }
    }
}

/// A backup file read in chunks, in order.
struct BackupInput: Sendable {
    private let handle: FileHandle
    static let chunkSize = 256 * 1024

    init(path: String) throws {
        if path == "-" {
            handle = .standardInput
            return
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw FileError("cannot restore from \(path): it is a directory, not a backup file")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw FileError.cannotRead(path) }
        self.handle = handle
    }

    func next() throws -> Data? {
        let data: Data?
        do {
            data = try handle.read(upToCount: Self.chunkSize)
        } catch {
            throw FileError("cannot read the backup: \(error.localizedDescription)")
        }
        guard let data, !data.isEmpty else { return nil }
        return data
    }
}
