import Foundation
import Synchronization
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import ModelWire
import SwiftProtobuf
import Testing

/// Clients that misbehave on purpose, against a spawned `modeld`: they ask for a big fetch and
/// stop reading, on either transport.
enum StalledClients {
    /// A store of `rows` objects of `bytes` bytes each, on `daemon`.
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Blob",
            attributes: [
                AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "body", type: .string),
            ], indexes: [["name"]])
    ])

    /// Runs `body` with a spawned `modeld` (no default store; `arguments` added), removed after.
    static func withDaemon<T: Sendable>(
        arguments: [String] = [], launcher: [String] = [],
        _ body: (ModeldProcess) async throws -> T
    ) async throws -> T {
        let daemon = try await ModeldProcess.launch(arguments: ["--default-store", ""] + arguments, launcher: launcher)
        do {
            let result = try await body(daemon)
            await daemon.remove()
            return result
        } catch {
            // What the daemon said last, for a failure's reader (a crash's message, say).
            print("modeld's log, at the failure (its last 4,000 characters):\n\(daemon.log.suffix(4_000))")
            await daemon.remove()
            throw error
        }
    }

    /// (On the daemon's default backend, or at `url`: a PostgreSQL store, say.)
    static func makeStore(_ name: String, on daemon: ModeldProcess, rows: Int, bytes: Int, url: String? = nil)
        async throws
    {
        try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
            _ = try await client.createStore(name, backend: nil, url: url, schema: schema)
            let body = String(repeating: "b", count: bytes)
            for start in stride(from: 0, to: rows, by: 2_500) {
                let edits: [ObjectEdit] = (start..<min(start + 2_500, rows)).map {
                    .insert(
                        entity: "Blob",
                        attributes: ["name": .string(String(format: "blob %06d", $0)), "body": .string(body)],
                        relationships: [:], id: nil)
                }
                try await client.apply(edits, in: name)
            }
        }
    }

    /// The bytes of a whole framed `Fetch` call of every `Blob`, on stream 1.
    static func framedFetch(store: String, batchSize: Int32 = 10_000) throws -> [UInt8] {
        let request =
            try Modeld_V1_StoreFetchRequest.with {
                $0.store = store
                $0.fetch.entity = "Blob"
                $0.fetch.batchSize = batchSize
            }.serializedBytes() as [UInt8]
        return FramedBytes.call(stream: 1, path: "modeld.v1.QueryService/Fetch", request: request)
    }

    /// A framed fetch whose client reads its first response, then stops reading; nil if no
    /// response arrived within `timeout`.
    static func stallFramed(
        _ daemon: ModeldProcess, store: String, batchSize: Int32 = 10_000,
        timeout: Duration = .seconds(30)
    ) async throws -> RawSocket? {
        let socket = try RawSocket.connect(daemon.socketPath + ".frames")
        try socket.send(try framedFetch(store: store, batchSize: batchSize))
        guard case .bytes = await socket.read(exactly: FramedBytes.headerSize, timeout: timeout) else {
            socket.close()
            return nil
        }
        return socket
    }

    /// An HTTP/2 fetch whose client reads its first response, then stops reading until released
    /// (it then reads the rest) or cancelled. Nil if no response arrived within `timeout`.
    static func stallHTTP2(
        _ daemon: ModeldProcess, store: String, batchSize: Int32 = 10_000,
        timeout: Duration = .seconds(30)
    ) async throws -> StalledHTTP2Fetch? {
        let first = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        let received = Tally()
        let task = Task<(any Error)?, Never> {
            do {
                let transport = try HTTP2ClientTransport.Posix(
                    target: .unixDomainSocket(path: daemon.socketPath), transportSecurity: .plaintext)
                try await withGRPCClient(transport: transport) { grpc in
                    try await Modeld_V1_QueryService.Client(wrapping: grpc).fetch(
                        Modeld_V1_StoreFetchRequest.with {
                            $0.store = store
                            $0.fetch.entity = "Blob"
                            $0.fetch.batchSize = batchSize
                        }
                    ) { response in
                        var isFirst = true
                        for try await message in response.messages {
                            received.add(message.objects.count)
                            guard isFirst else { continue }
                            isFirst = false
                            first.continuation.yield()
                            // Reads nothing more until released.
                            for await _ in release.stream {}
                            try Task.checkCancellation()
                        }
                    }
                }
                return nil
            } catch {
                first.continuation.finish()
                return error
            }
        }
        let stalled = StalledHTTP2Fetch(task: task, received: received, release: release.continuation)
        let arrived = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await first.stream.first(where: { true }) != nil }
            group.addTask {
                try? await Task.sleep(for: timeout); return false
            }
            let arrived = await group.next() ?? false
            group.cancelAll()
            return arrived
        }
        guard arrived else {
            stalled.cancel()
            return nil
        }
        return stalled
    }

    /// Runs `body`, failing if it has not finished within `limit` (it is then cancelled).
    static func within<T: Sendable>(
        _ limit: Duration, _ what: String,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw RawSocketError("\(what) did not finish within \(limit)")
            }
            return value
        }
    }
}

/// An HTTP/2 fetch whose client stopped reading (``StalledClients/stallHTTP2(_:store:timeout:)``).
struct StalledHTTP2Fetch: Sendable {
    /// Ends with the error that ended the call (nil if it ended with OK).
    let task: Task<(any Error)?, Never>
    /// The objects the client has read so far.
    let received: Tally
    fileprivate let release: AsyncStream<Void>.Continuation

    /// Lets the client read the rest of the stream (and hear how it ends).
    func resume() {
        release.finish()
    }

    func cancel() {
        task.cancel()
        release.finish()
    }
}

/// A count shared by tasks: added to by some, read by others.
final class Tally: Sendable {
    private let count = Atomic(0)
    func add(_ amount: Int = 1) { count.add(amount, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
