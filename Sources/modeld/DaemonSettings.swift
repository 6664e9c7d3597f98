import ArgumentParser
import Foundation
import Logging
import ModelCore
import ModelServer
import StandardBackends
import ModelWire

/// The daemon's settings from flags, `MODELD_*` variables and the defaults, in that order.
struct DaemonSettings {
    var server: ServerConfiguration
    var logLevel: Logger.Level
    /// The scheduler time slice to ask for (``TimeSlice``); 0 keeps the kernel's.
    var timeSliceMicroseconds = TimeSlice.defaultMicroseconds

    init(flags: Modeld, environment: [String: String], userID: UInt32) throws {
        func value(_ flag: String?, _ variable: String) -> String? {
            flag ?? environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        let socket =
            value(flags.socket, "MODELD_SOCKET")
            ?? DefaultLocations.socketPath(environment: environment, userID: userID)
        let data =
            value(flags.dataDir, "MODELD_DATA_DIR")
            ?? DefaultLocations.dataDirectory(environment: environment, userID: userID)
        server = ServerConfiguration(
            socketPath: Self.absolute(socket), dataDirectory: Self.absolute(data), registry: .daemon)

        if let text = value(flags.socketMode, "MODELD_SOCKET_MODE") {
            guard let mode = UInt16(text.hasPrefix("0o") ? String(text.dropFirst(2)) : text, radix: 8), mode <= 0o777
            else {
                throw ValidationError("socket mode '\(text)' is not an octal permission such as 0660")
            }
            server.socketMode = mode
        }
        if let seconds = try Self.seconds(flags.idleTimeout, value(nil, "MODELD_IDLE_TIMEOUT"), "idle timeout") {
            server.idleTimeout = seconds
        }
        if let seconds = try Self.seconds(
            flags.migrationIdleTimeout, value(nil, "MODELD_MIGRATION_IDLE_TIMEOUT"), "migration idle timeout")
        {
            server.migrationIdleTimeout = seconds
        }
        if let count = try Self.count(flags.maxSessions, value(nil, "MODELD_MAX_SESSIONS"), "max sessions") {
            server.maximumSessions = count
        }
        if let count = try Self.count(flags.maxConnections, value(nil, "MODELD_MAX_CONNECTIONS"), "max connections") {
            server.maximumConnections = count
        }
        if let count = try Self.count(
            flags.maxStreamingFetches, value(nil, "MODELD_MAX_STREAMING_FETCHES"), "max streaming fetches")
        {
            server.maximumStreamingFetches = count
        }
        if let seconds = try Self.seconds(
            flags.connectionIdleTimeout, value(nil, "MODELD_CONNECTION_IDLE_TIMEOUT"), "connection idle timeout")
        {
            server.connectionIdleTimeout = seconds
        }
        if let seconds = try Self.seconds(flags.requestTimeout, value(nil, "MODELD_REQUEST_TIMEOUT"), "request timeout")
        {
            server.requestTimeout = seconds
        }
        if let seconds = try Self.seconds(
            flags.streamStallTimeout, value(nil, "MODELD_STREAM_STALL_TIMEOUT"), "stream stall timeout")
        {
            server.streamStallTimeout = seconds
        }
        if let text = value(flags.maxMessageSize, "MODELD_MAX_MESSAGE_SIZE") {
            server.maximumMessageSize = try Self.size(
                text, "max message size", within: 64 * 1024...1 << 30, "between 64K and 1024M")
        }
        if let text = value(flags.maxPendingRequestBytes, "MODELD_MAX_PENDING_REQUEST_BYTES") {
            server.maximumPendingRequestBytes = try Self.size(
                text, "max pending request bytes", within: 1024 * 1024...Int.max, "at least 1M")
            // A request between the two could never arrive (it would wait for room it never gets).
            guard server.maximumPendingRequestBytes >= server.maximumMessageSize else {
                throw ValidationError(
                    "max pending request bytes '\(text)' is less than the max message size (\(server.maximumMessageSize) bytes): a request between the two could never arrive; raise it, or lower --max-message-size"
                )
            }
        } else {
            // The default budget grows to hold one request of the largest size allowed.
            server.maximumPendingRequestBytes = max(server.maximumPendingRequestBytes, server.maximumMessageSize)
        }
        if let text = value(flags.maxWatchMemory, "MODELD_MAX_WATCH_MEMORY") {
            server.maximumWatchMemory = try Self.size(
                text, "max watch memory", within: 1024 * 1024...Int.max, "at least 1M")
        }
        if let text = value(flags.maxStoreSize, "MODELD_MAX_STORE_SIZE") {
            server.maximumStoreSize = Int64(
                try Self.size(text, "max store size", within: 64 * 1024...Int.max, "at least 64K"))
        }
        if let text = value(flags.historyRetentionAge, "MODELD_HISTORY_RETENTION_AGE") {
            guard let age = HistoryRetentionAge.parse(text) else {
                throw ValidationError("history retention age '\(text)' is not an age: \(HistoryRetentionAge.form)")
            }
            server.historyRetentionAge = age
        }
        if let count = try Self.count(
            flags.historyRetentionTransactions, value(nil, "MODELD_HISTORY_RETENTION_TRANSACTIONS"),
            "history retention transactions")
        {
            server.historyRetentionCount = count
        }
        if let seconds = try Self.seconds(
            flags.historyPruneInterval, value(nil, "MODELD_HISTORY_PRUNE_INTERVAL"), "history prune interval")
        {
            server.historyPruneInterval = seconds
        }
        if let address = value(flags.metricsAddress, "MODELD_METRICS_ADDRESS"), !address.isEmpty {
            do {
                try ServerConfiguration.checkMetricsAddress(address)
            } catch {
                throw ValidationError(error.message)
            }
            server.metricsAddress = address
        }
        if let name = value(flags.adminGroup, "MODELD_ADMIN_GROUP"), !name.isEmpty {
            guard let gid = ServerConfiguration.groupID(named: name) else {
                throw ValidationError("admin group '\(name)' is not a group of this host")
            }
            server.administratorsGroup = gid
        }
        if let store = flags.defaultStore ?? environment["MODELD_DEFAULT_STORE"] {
            if !store.isEmpty {
                do {
                    try ServerConfiguration.checkStoreName(store)
                } catch {
                    throw ValidationError("default store: \(error.message)")
                }
            }
            server.defaultStore = store.isEmpty ? nil : store
        }
        if let text = flags.timeSlice.map(String.init) ?? value(nil, "MODELD_TIME_SLICE") {
            guard let microseconds = Int(text), microseconds == 0 || TimeSlice.allowed.contains(microseconds) else {
                throw ValidationError(
                    "time slice '\(text)' must be 0 (the kernel's) or \(TimeSlice.allowed.lowerBound) to \(TimeSlice.allowed.upperBound) microseconds"
                )
            }
            timeSliceMicroseconds = microseconds
        }
        let level = value(flags.logLevel, "MODELD_LOG_LEVEL") ?? "info"
        guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
            throw ValidationError(
                "log level '\(level)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        logLevel = parsed
    }

    /// A positive number of seconds, from a flag or else a variable's text.
    private static func seconds(_ flag: Double?, _ variable: String?, _ what: String) throws -> Duration? {
        guard
            let seconds = try flag
                ?? variable.map({ text in
                    guard let seconds = Double(text) else {
                        throw ValidationError("\(what) '\(text)' is not a number of seconds")
                    }
                    return seconds
                })
        else { return nil }
        guard seconds > 0, seconds.isFinite else {
            throw ValidationError("the \(what) must be a positive number of seconds")
        }
        return .milliseconds(Int64(seconds * 1000))
    }

    /// A whole number of at least 1, from a flag or else a variable's text.
    private static func count(_ flag: Int?, _ variable: String?, _ what: String) throws -> Int? {
        guard
            let count = try flag
                ?? variable.map({ text in
                    guard let count = Int(text) else {
                        throw ValidationError("\(what) '\(text)' is not a whole number")
                    }
                    return count
                })
        else { return nil }
        guard count > 0 else { throw ValidationError("\(what) must be at least 1") }
        return count
    }

    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// `text` as a number of bytes within `range` (`rangeText` says it in words), or a message
    /// that says which of the two it is not.
    private static func size(_ text: String, _ name: String, within range: ClosedRange<Int>, _ rangeText: String)
        throws -> Int
    {
        guard let bytes = bytes(text) else {
            throw ValidationError(
                "\(name) '\(text)' is not a size: a whole number of bytes, or one with a K, M, G or T suffix (64M)")
        }
        guard range.contains(bytes) else { throw ValidationError("\(name) '\(text)' must be \(rangeText)") }
        return bytes
    }

    /// A whole number of bytes, or of K, M, G or T (powers of 1024); nil for anything else, or a
    /// size too large to count.
    private static func bytes(_ text: String) -> Int? {
        let upper = text.uppercased()
        let units: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        guard let last = upper.last else { return nil }
        let (digits, unit) = units[last].map { (upper.dropLast(), $0) } ?? (Substring(upper), 1)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let count = Int(digits)
        else { return nil }
        let (bytes, overflow) = count.multipliedReportingOverflow(by: unit)
        return overflow ? nil : bytes
    }
}
