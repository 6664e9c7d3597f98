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
        line, or input the daemon refused as invalid); 66 not found (store, session or object); \
        69 unavailable (modeld is not running or not at the socket); 75 conflict (a unique \
        constraint, a concurrent change, a deny rule, a schema difference: resolve and retry); \
        77 permission denied (the store's owner or an administrator grants access).
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
        } catch let error as ModelError {
            let message =
                error.code == .unavailable && error.context["socket"] != nil
                ? "is modeld running? tried \(socket)" + (error.context["detail"].map { " (\($0))" } ?? "")
                : error.message
            Terminal.error("modelctl: \(message)\n")
            throw ExitCode(exitCode(for: error))
        } catch let error as InputError {
            Terminal.error("modelctl: \(error.message)\n")
            throw ExitCode(usage)
        } catch let error as FileError {
            Terminal.error("modelctl: \(error.message)\n")
            throw ExitCode(failure)
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
    init(_ message: String) { self.message = message }
}
