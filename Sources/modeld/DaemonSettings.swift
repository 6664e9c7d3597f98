import ArgumentParser
import Foundation
import Logging
import ModelServer
import ModelWire

/// The daemon's settings from flags, `MODELD_*` variables and the defaults, in that order.
struct DaemonSettings {
    var server: ServerConfiguration
    var logLevel: Logger.Level

    init(flags: Modeld, environment: [String: String], userID: UInt32) throws {
        func value(_ flag: String?, _ variable: String) -> String? {
            flag ?? environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        let socket = value(flags.socket, "MODELD_SOCKET") ?? DefaultLocations.socketPath(environment: environment, userID: userID)
        let data = value(flags.dataDir, "MODELD_DATA_DIR") ?? DefaultLocations.dataDirectory(environment: environment, userID: userID)
        server = ServerConfiguration(socketPath: Self.absolute(socket), dataDirectory: Self.absolute(data))

        if let text = value(flags.socketMode, "MODELD_SOCKET_MODE") {
            guard let mode = UInt16(text.hasPrefix("0o") ? String(text.dropFirst(2)) : text, radix: 8), mode <= 0o777 else {
                throw ValidationError("socket mode '\(text)' is not an octal permission such as 0660")
            }
            server.socketMode = mode
        }
        if let seconds = try flags.idleTimeout ?? value(nil, "MODELD_IDLE_TIMEOUT").map({ text in
            guard let seconds = Double(text) else { throw ValidationError("idle timeout '\(text)' is not a number of seconds") }
            return seconds
        }) {
            guard seconds > 0, seconds.isFinite else { throw ValidationError("the idle timeout must be a positive number of seconds") }
            server.idleTimeout = .milliseconds(Int64(seconds * 1000))
        }
        if let count = try flags.maxSessions ?? value(nil, "MODELD_MAX_SESSIONS").map({ text in
            guard let count = Int(text) else { throw ValidationError("max sessions '\(text)' is not a whole number") }
            return count
        }) {
            guard count > 0 else { throw ValidationError("max sessions must be at least 1") }
            server.maximumSessions = count
        }
        if let text = value(flags.maxMessageSize, "MODELD_MAX_MESSAGE_SIZE") {
            guard let bytes = Self.bytes(text), bytes >= 64 * 1024, bytes <= 1 << 30 else {
                throw ValidationError("max message size '\(text)' must be between 64K and 1024M (bytes, or with a K or M suffix)")
            }
            server.maximumMessageSize = bytes
        }
        if let text = value(flags.maxStoreSize, "MODELD_MAX_STORE_SIZE") {
            guard let bytes = Self.bytes(text), bytes >= 64 * 1024 else {
                throw ValidationError("max store size '\(text)' must be at least 64K (bytes, or with a K, M or G suffix)")
            }
            server.maximumStoreSize = Int64(bytes)
        }
        if let store = flags.defaultStore ?? environment["MODELD_DEFAULT_STORE"] {
            server.defaultStore = store.isEmpty ? nil : store
        }
        let level = value(flags.logLevel, "MODELD_LOG_LEVEL") ?? "info"
        guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
            throw ValidationError("log level '\(level)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        logLevel = parsed
    }

    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    private static func bytes(_ text: String) -> Int? {
        let upper = text.uppercased()
        if upper.hasSuffix("G") { return Int(upper.dropLast()).map { $0 * 1024 * 1024 * 1024 } }
        if upper.hasSuffix("M") { return Int(upper.dropLast()).map { $0 * 1024 * 1024 } }
        if upper.hasSuffix("K") { return Int(upper.dropLast()).map { $0 * 1024 } }
        return Int(upper)
    }
}
