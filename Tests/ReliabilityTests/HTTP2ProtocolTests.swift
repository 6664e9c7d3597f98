import Foundation
import ModelFixtures
import ModelWire
import NIOCore
import NIOHPACK
import SwiftProtobuf
import Synchronization
import Testing

/// The daemon's HTTP/2 socket read as gRPC's HTTP/2 protocol has it (PROTOCOL-HTTP2.md), with
/// frames written by hand: what a client in any language may send, and what it gets back. Each
/// refusal leaves the connection serving its next call.
@Suite struct HTTP2ProtocolTests {
    static let status = "/modeld.v1.DaemonService/Status"

    /// A unary call answered by the daemon itself: response headers, one DATA frame with the
    /// message, then trailers with grpc-status 0; the connection's next stream is answered too.
    @Test func aUnaryCallIsHeadersMessageAndTrailers() async throws {
        try await StalledClients.withDaemon { daemon in
            let exchange = try HTTP2Exchange(daemon.socketPath)
            defer { exchange.close() }
            try exchange.send(HTTP2Bytes.preface + HTTP2Bytes.stream(1, path: Self.status, messages: [[]]))
            let first = try #require(await exchange.answer(stream: 1))
            #expect(first.headers.first?.first(name: ":status") == "200")
            #expect(first.headers.first?.first(name: "content-type") == "application/grpc")
            #expect(first.trailers.first(name: "grpc-status") == "0")
            #expect(first.messages.count == 1)
            let answer = try Modeld_V1_StatusResponse(serializedBytes: first.messages.first ?? [])
            #expect(answer.pid > 0 && !answer.version.isEmpty, "\(answer)")
            try exchange.send(HTTP2Bytes.stream(3, path: Self.status, messages: [[]]))
            let second = try #require(await exchange.answer(stream: 3))
            #expect(second.trailers.first(name: "grpc-status") == "0")
        }
    }

    /// What is not a gRPC call, or asks for what the daemon does not do, is answered with the
    /// status gRPC's protocol gives it, and the connection goes on.
    @Test func requestsThatAreNotCallsAreRefusedAsGRPCSays() async throws {
        try await StalledClients.withDaemon { daemon in
            let exchange = try HTTP2Exchange(daemon.socketPath)
            defer { exchange.close() }
            try exchange.send(HTTP2Bytes.preface)
            let refusals: [(what: String, [(String, String)], flag: UInt8, check: (HTTP2Exchange.Answer) -> Bool)] = [
                ("not gRPC", [("content-type", "text/plain")], 0, { $0.trailers.first(name: ":status") == "415" }),
                ("a GET", [(":method", "GET")], 0, { $0.trailers.first(name: "grpc-status") == "3" }),
                (
                    "gzip", [("grpc-encoding", "gzip")], 0,
                    {
                        $0.trailers.first(name: "grpc-status") == "12"
                            && $0.trailers.first(name: "grpc-accept-encoding") == "identity"
                    }
                ),
                ("a compressed message", [], 1, { $0.trailers.first(name: "grpc-status") == "13" }),
            ]
            var stream: UInt32 = 1
            for (what, headers, flag, check) in refusals {
                try exchange.send(
                    HTTP2Bytes.stream(stream, path: Self.status, headers: headers, messages: [[]], flag: flag))
                let answer = try #require(await exchange.answer(stream: stream), "\(what)")
                #expect(check(answer), "\(what): \(answer)")
                stream += 2
            }
            try exchange.send(HTTP2Bytes.stream(stream, path: Self.status, messages: [[]]))
            #expect(await exchange.answer(stream: stream)?.trailers.first(name: "grpc-status") == "0")
        }
    }

    /// A unary call of two messages, or none, is an error naming what came; a method no service
    /// has is UNIMPLEMENTED.
    @Test func unaryCallsNeedOneMessageAndAKnownMethod() async throws {
        try await StalledClients.withDaemon { daemon in
            let exchange = try HTTP2Exchange(daemon.socketPath)
            defer { exchange.close() }
            try exchange.send(HTTP2Bytes.preface + HTTP2Bytes.stream(1, path: Self.status, messages: [[], []]))
            let two = try #require(await exchange.answer(stream: 1))
            #expect(two.trailers.first(name: "grpc-status") == "13")
            #expect(two.trailers.first(name: "grpc-message")?.contains("2 arrived") == true, "\(two)")
            try exchange.send(HTTP2Bytes.stream(3, path: Self.status, messages: []))
            #expect(await exchange.answer(stream: 3)?.trailers.first(name: "grpc-status") == "13")
            try exchange.send(HTTP2Bytes.stream(5, path: "/modeld.v1.DaemonService/Nothing", messages: [[]]))
            #expect(await exchange.answer(stream: 5)?.trailers.first(name: "grpc-status") == "12")
        }
    }
}

extension HTTP2ProtocolTests {
    /// A connection left idle for `--connection-idle-timeout` is first told to go (GOAWAY, so
    /// that a client about to call opens another), then closed once the grace period passes.
    @Test func anIdleConnectionIsToldToGoThenClosed() async throws {
        try await StalledClients.withDaemon(arguments: ["--connection-idle-timeout", "1"]) { daemon in
            let exchange = try HTTP2Exchange(daemon.socketPath)
            defer { exchange.close() }
            try exchange.send(HTTP2Bytes.preface + HTTP2Bytes.stream(1, path: Self.status, messages: [[]]))
            #expect(await exchange.answer(stream: 1)?.trailers.first(name: "grpc-status") == "0")
            #expect(await exchange.goAway(within: .seconds(20)) == .goAway)
            #expect(await exchange.closed(within: .seconds(20)))
        }
    }
}

/// A raw HTTP/2 connection to the daemon that reads the answers of the streams it opened.
final class HTTP2Exchange: Sendable {
    private let socket: RawSocket
    private let state = Mutex<(buffer: [UInt8], decoder: HPACKDecoder)>(([], HPACKDecoder(allocator: .init())))

    struct Answer: CustomStringConvertible {
        /// Every HEADERS frame's fields but the last (the response headers, if any).
        var headers: [HPACKHeaders] = []
        /// The last HEADERS frame's fields: the trailers.
        var trailers = HPACKHeaders()
        var messages: [[UInt8]] = []

        var description: String { "headers \(headers), trailers \(trailers), \(messages.count) message(s)" }
    }

    init(_ path: String) throws {
        socket = try RawSocket.connect(path)
    }

    func send(_ bytes: [UInt8]) throws {
        try socket.send(bytes)
    }

    func close() {
        socket.close()
    }

    /// Stream `stream`'s answer, read up to the frame that ends it; nil if the stream was reset
    /// or the connection closed first, or nothing ended it within 10 s.
    func answer(stream wanted: UInt32) async -> Answer? {
        var answer = Answer()
        var data: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            while let (type, flags, stream, payload) = nextFrame() {
                // Every stream's headers go through the decoder, whose table they change.
                let fields = type == 1 ? decode(payload) : nil
                guard stream == wanted else { continue }
                switch type {
                case 0: data += payload
                case 1:
                    guard let fields else { return nil }
                    if !answer.trailers.isEmpty { answer.headers.append(answer.trailers) }
                    answer.trailers = fields
                case 3: return nil
                default: continue
                }
                guard flags & 0x1 != 0 else { continue }
                while data.count >= 5 {
                    let length = data[1...4].reduce(0) { $0 << 8 | Int($1) }
                    guard data.count >= 5 + length else { break }
                    answer.messages.append(Array(data[5..<(5 + length)]))
                    data.removeFirst(5 + length)
                }
                return answer
            }
            switch await socket.read(timeout: deadline - ContinuousClock.now) {
            case .bytes(let bytes): state.withLock { $0.buffer += bytes }
            case .closed, .timedOut: return nil
            }
        }
        return nil
    }

    enum Ending: Equatable {
        case goAway
        case closed
        case timedOut
    }

    /// Reads until the daemon's GOAWAY, or the connection's end.
    func goAway(within timeout: Duration) async -> Ending {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            while let (type, _, stream, payload) = nextFrame() {
                if type == 1 { _ = decode(payload) }
                if type == 7, stream == 0 { return .goAway }
            }
            switch await socket.read(timeout: deadline - ContinuousClock.now) {
            case .bytes(let bytes): state.withLock { $0.buffer += bytes }
            case .closed: return .closed
            case .timedOut: return .timedOut
            }
        }
        return .timedOut
    }

    /// Whether the daemon closes the connection within `timeout`.
    func closed(within timeout: Duration) async -> Bool {
        await socket.waitUntilClosed(timeout: timeout)
    }

    private func nextFrame() -> (UInt8, UInt8, UInt32, [UInt8])? {
        state.withLock { state in
            let buffer = state.buffer
            guard buffer.count >= 9 else { return nil }
            let length = Int(buffer[0]) << 16 | Int(buffer[1]) << 8 | Int(buffer[2])
            guard buffer.count >= 9 + length else { return nil }
            let stream = buffer[5...8].reduce(0) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
            let payload = Array(buffer[9..<(9 + length)])
            state.buffer.removeFirst(9 + length)
            return (buffer[3], buffer[4], stream, payload)
        }
    }

    private func decode(_ block: [UInt8]) -> HPACKHeaders? {
        state.withLock { state in
            var bytes = ByteBuffer(bytes: block)
            return try? state.decoder.decodeHeaders(from: &bytes)
        }
    }
}
