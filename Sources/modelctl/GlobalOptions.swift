#if canImport(Glibc)
    import Glibc
#endif
import ArgumentParser
import Foundation
import ModelRemote
import ModelCore
import ModelWire

/// The options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp("The daemon's socket (default: modeld's own default). [MODELD_SOCKET]", valueName: "path"))
    var socket: String?

    @Option(
        name: .long, help: ArgumentHelp("The store to work on (default: default). [MODELD_STORE]", valueName: "name"))
    var store: String?

    @Option(name: .long, help: "table, json, jsonl or csv (default: table on a terminal, json otherwise).")
    var format: OutputFormat?

    var socketPath: String {
        let environment = ProcessInfo.processInfo.environment
        return socket ?? environment["MODELD_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
            ?? DefaultLocations.clientSocketPath(environment: environment, userID: geteuid()) {
                FileManager.default.fileExists(atPath: $0)
            }
    }

    var storeName: String {
        store ?? ProcessInfo.processInfo.environment["MODELD_STORE"].flatMap { $0.isEmpty ? nil : $0 } ?? "default"
    }

    var outputFormat: OutputFormat {
        format ?? (Terminal.outputIsTerminal ? .table : .json)
    }

    /// Runs `body` with a client connected to the daemon; errors become a message on standard
    /// error and the exit code of their class.
    func withClient<T: Sendable>(_ body: (DaemonClient) async throws -> T) async throws -> T {
        try await CLI.reportingErrors(socket: socketPath) {
            try await DaemonClient.withClient(socketPath: socketPath, body)
        }
    }
}

/// Exit codes, one per class of error (documented in `modelctl --help`).
enum CLI {
    static let usage: Int32 = 64
    static let notFound: Int32 = 66
    static let unavailable: Int32 = 69
    static let conflict: Int32 = 75
    static let permissionDenied: Int32 = 77
    static let failure: Int32 = 1

    static let exitCodes = """
        Exit codes: 0 success; 1 failure (daemon or storage error); 64 usage (a bad command \
        line, or input the daemon refused as invalid); 66 not found (store, session, object or input file); \
        69 unavailable (modeld is not running or not at the socket, or it cannot reach the store's \
        backend now: a PostgreSQL server down, an SQLite file locked by another process; try again); \
        75 conflict (a unique constraint, a concurrent change, a deny rule, a schema difference: \
        resolve and retry); 77 permission denied (the store's owner or an administrator grants \
        access). When what reads its output stops early (| head), modelctl ends quietly by SIGPIPE, \
        as other tools do (141 in a shell).
        """

    static func exitCode(for error: ModelError) -> Int32 {
        switch ModelError.statusCode(for: error.code) {
        case .invalidArgument: usage
        case .notFound: notFound
        case .unavailable: unavailable
        case .alreadyExists, .aborted, .failedPrecondition: conflict
        case .permissionDenied: permissionDenied
        default: failure
        }
    }

    /// Runs `body`; a `ModelError` or an input mistake is printed as `modelctl: …` and ends the
    /// process with its exit code.
    static func reportingErrors<T>(socket: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            guard let code = report(error, socket: socket) else { throw error }
            throw ExitCode(code)
        }
    }

    /// Whether this user may not connect to the socket at `path` (or the framed one beside it):
    /// its permissions keep them out, so the daemon may well run.
    /// Who the socket at `path` lets in, from its owner, group and mode (the daemon's
    /// `--socket-mode`): "its owner root, group modeld (mode 660)".
    static func whoMayConnect(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return "modeld lets in its own user and group, and root" }
        let owner =
            getpwuid(info.st_uid).flatMap { String(validatingCString: $0.pointee.pw_name) } ?? "uid \(info.st_uid)"
        let group =
            getgrgid(info.st_gid).flatMap { String(validatingCString: $0.pointee.gr_name) } ?? "gid \(info.st_gid)"
        return
            "the socket lets in its owner \(owner) and group \(group) (mode \(String(info.st_mode & 0o777, radix: 8))), and root"
    }

    static func mayNotConnect(_ path: String) -> Bool {
        for candidate in [path, path + ".frames"] where Glibc.access(candidate, W_OK) != 0 && errno == EACCES {
            return true
        }
        return false
    }

    /// Prints a `ModelError` or an input or file mistake as `modelctl: …` and answers its exit
    /// code; nil (nothing printed) for any other error.
    static func report(_ error: any Error, socket: String?) -> Int32? {
        switch error {
        case let error as ModelError:
            var message = error.message
            var code = exitCode(for: error)
            if error.code == .unavailable, error.context["socket"] != nil {
                let detail = error.context["detail"] ?? ""
                if detail.contains("Permission denied") || socket.map(Self.mayNotConnect) == true {
                    // The daemon runs; this user may not use its socket.
                    message =
                        "permission denied on \(socket ?? "the socket"): \(socket.map(Self.whoMayConnect) ?? "modeld lets in its own user and group, and root"); ask to be added to its group"
                    code = permissionDenied
                } else {
                    message =
                        "is modeld running? tried \(socket ?? "its socket")" + (detail.isEmpty ? "" : ": \(detail)")
                }
            }
            Terminal.error("modelctl: \(message)\n")
            return code
        case let error as InputError:
            Terminal.error("modelctl: \(error.message)\n")
            return usage
        case let error as FileError:
            Terminal.error("modelctl: \(error.message)\n")
            return error.exitCode
        default:
            return nil
        }
    }
}

/// A mistake in what the user gave: a bad `key=value`, a line of an import file that is not
/// valid JSON…
struct InputError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A file modelctl could not read or write on its side (a full disk, a missing directory).
struct FileError: Error {
    let message: String
    /// 66 (not found) for an input file that is not there; 1 otherwise.
    let exitCode: Int32
    init(_ message: String, exitCode: Int32 = CLI.failure) {
        self.message = message
        self.exitCode = exitCode
    }

    /// An input file that cannot be opened, saying why in a word.
    static func cannotRead(_ path: String) -> FileError {
        guard !path.isEmpty else {
            return FileError("no file named: give a path ('-' for standard input)", exitCode: CLI.usage)
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            return FileError("cannot read \(path): no such file", exitCode: CLI.notFound)
        }
        return FileError("cannot read \(path): \(isDirectory.boolValue ? "it is a directory" : "permission denied")")
    }
}
