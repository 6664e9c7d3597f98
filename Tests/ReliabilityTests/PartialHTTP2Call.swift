import Foundation
import ModelFixtures
import NIOCore
import NIOHPACK
import Synchronization

/// A gRPC call over HTTP/2 written byte by byte on a raw socket, so that a test can stop halfway:
/// the connection preface, its headers, then a message prefix announcing `announced` bytes and
/// only `sent` of them. Nothing else is sent (no SETTINGS acknowledgement, no window updates): a
/// client that stopped. The daemon's answer — the `grpc-status` of its trailers, or a reset —
/// is read as it comes.
final class PartialHTTP2Call: Sendable {
    private let socket: RawSocket
    private let outcome: Task<(answer: Answer, at: ContinuousClock.Instant), Never>

    enum Answer: Equatable, Sendable {
        /// The trailers' `grpc-status`.
        case status(String)
        /// A reset stream or a closed connection, without a status.
        case closed
        case timedOut
    }

    private init(socket: RawSocket) {
        self.socket = socket
        let outcome = Task { (answer: await Self.readAnswer(socket), at: ContinuousClock.now) }
        self.outcome = outcome
        // Reads on to the end (``close()``, or the daemon's), so that the descriptor is closed
        // only once nothing waits on it.
        Task {
            _ = await outcome.value
            _ = await socket.waitUntilClosed(timeout: .seconds(3_600))
            socket.close()
        }
    }

    static func start(socketPath: String, method: String, announced: Int, sent: Int) async throws -> PartialHTTP2Call {
        let socket = try RawSocket.connect(socketPath)
        try socket.send(
            HTTP2Bytes.call(path: method, message: [UInt8](repeating: 0x0A, count: sent), announced: announced))
        return PartialHTTP2Call(socket: socket)
    }

    /// The daemon's answer, or `.timedOut` if none came within `timeout` (the call goes on).
    func answer(within timeout: Duration) async -> Answer {
        let outcome = outcome
        return await withTaskGroup(of: Answer.self) { group in
            group.addTask { await outcome.value.answer }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return .timedOut
            }
            let first = await group.next() ?? .timedOut
            group.cancelAll()
            return first
        }
    }

    /// The daemon's answer and when it came: waits for it (the connection's end counts).
    func answerAndArrival() async -> (answer: Answer, at: ContinuousClock.Instant) {
        await outcome.value
    }

    /// Ends the connection; the descriptor is closed once the reading task has seen the end.
    func close() {
        socket.shutdown()
    }

    /// Reads frames until stream 1's trailers, its reset, or the connection's end.
    private static func readAnswer(_ socket: RawSocket) async -> Answer {
        var buffer: [UInt8] = []
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        while true {
            while buffer.count >= 9 {
                let length = Int(buffer[0]) << 16 | Int(buffer[1]) << 8 | Int(buffer[2])
                guard buffer.count >= 9 + length else { break }
                let type = buffer[3], stream = buffer[5...8].reduce(0) { $0 << 8 | UInt32($1) }
                let payload = Array(buffer[9..<(9 + length)])
                buffer.removeFirst(9 + length)
                if type == 1 {
                    // HEADERS, without padding or priority from this server.
                    var block = ByteBuffer(bytes: payload)
                    guard let fields = try? decoder.decodeHeaders(from: &block) else { return .closed }
                    if stream == 1, let status = fields.first(name: "grpc-status") { return .status(status) }
                } else if type == 3, stream == 1 {
                    return .closed
                }
            }
            switch await socket.read(timeout: .seconds(3_600)) {
            case .bytes(let bytes): buffer += bytes
            case .closed, .timedOut: return .closed
            }
        }
    }
}
