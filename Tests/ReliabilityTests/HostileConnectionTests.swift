import Foundation
import ModelFixtures
import ModelWire
import SwiftProtobuf
import Testing

/// Clients that break HTTP/2 or never finish a request are ended, not served on: a connection
/// error closes the connection after its GOAWAY (RFC 9113, 5.4.1: before, the daemon kept every
/// byte such a client went on sending), and a call handed to gRPC's server (health, history,
/// a restore) whose request goes the request timeout with nothing arriving is ended, on both
/// sockets. Other clients are served meanwhile.
@Suite(.timeLimit(.minutes(3)))
struct HostileConnectionTests {
    static let status = "/modeld.v1.DaemonService/Status"
    static let healthCheck = "/grpc.health.v1.Health/Check"

    /// A zero WINDOW_UPDATE, a client that is not HTTP/2, undecodable headers: each a connection
    /// error, each answered with GOAWAY and then a closed connection, however much the client
    /// goes on sending.
    @Test func aConnectionErrorClosesTheConnection() async throws {
        try await StalledClients.withDaemon { daemon in
            let zeroWindowUpdate = HTTP2Bytes.frame(type: 8, flags: 0, stream: 0, [0, 0, 0, 0])
            // A header block naming an index far past HPACK's tables.
            let badHeaders = HTTP2Bytes.frame(type: 1, flags: 0x5, stream: 1, [0xFF, 0xFF, 0xFF, 0x7F])
            let openings: [(String, [UInt8])] = [
                ("zero window update", HTTP2Bytes.preface + zeroWindowUpdate),
                ("not HTTP/2", Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
                ("undecodable headers", HTTP2Bytes.preface + badHeaders),
            ]
            let junk = [UInt8](repeating: 0x5A, count: 1 << 20)
            for (what, opening) in openings {
                let exchange = try HTTP2Exchange(daemon.socketPath)
                defer { exchange.close() }
                try exchange.send(opening)
                #expect(await exchange.goAway(within: .seconds(10)) == .goAway, "\(what)")
                // What it sends after is not kept: the connection closes (sending may fail once it has).
                for _ in 0..<8 { try? exchange.send(junk) }
                #expect(await exchange.closed(within: .seconds(10)), "\(what)")
            }
            let other = try HTTP2Exchange(daemon.socketPath)
            defer { other.close() }
            try other.send(HTTP2Bytes.preface + HTTP2Bytes.stream(1, path: Self.status, messages: [[]]))
            #expect(await other.answer(stream: 1)?.trailers.first(name: "grpc-status") == "0")
        }
    }

    /// A health check (a method gRPC's server runs) whose request never ends was held for good,
    /// whatever `--request-timeout` said: now it ends DEADLINE_EXCEEDED once the timeout passes
    /// with nothing of its request arriving, over HTTP/2 and on the framed socket alike.
    @Test func aCallWhoseRequestNeverEndsIsEnded() async throws {
        try await StalledClients.withDaemon(arguments: ["--request-timeout", "1"]) { daemon in
            let exchange = try HTTP2Exchange(daemon.socketPath)
            defer { exchange.close() }
            try exchange.send(
                HTTP2Bytes.preface + HTTP2Bytes.stream(1, path: Self.healthCheck, messages: [], endsStream: false))
            let held = try #require(await exchange.answer(stream: 1))
            #expect(held.trailers.first(name: "grpc-status") == "4", "\(held)")
            #expect(held.trailers.first(name: "grpc-message")?.contains("--request-timeout") == true, "\(held)")

            let framed = try RawSocket.connect(daemon.socketPath + ".frames")
            defer { framed.close() }
            try framed.send(FramedBytes.open(stream: 1, path: String(Self.healthCheck.dropFirst())))
            let ended = await OneAtATime.AnsweredOnItsLoopTests.statuses(of: [1], on: framed)[1]
            #expect(ended?.code == 4, "\(String(describing: ended))")
            #expect(ended?.message.contains("--request-timeout") == true, "\(String(describing: ended))")
        }
    }

    /// A restore's request may take longer than the request timeout as a whole, as long as it
    /// keeps coming: messages a fifth of a second apart for nine seconds, with a timeout of four,
    /// reach the restore, which refuses bytes that are no backup (INVALID_ARGUMENT), not the
    /// timeout. They are sent from a thread of their own: a task's sleep may overrun by seconds
    /// while the rest of the suite keeps every thread of the cooperative pool busy.
    @Test func aStreamedRequestThatKeepsComingIsNotEnded() async throws {
        try await StalledClients.withDaemon(arguments: ["--request-timeout", "4"]) { daemon in
            let exchange = try HTTP2Exchange(daemon.socketPath)
            defer { exchange.close() }
            func message(_ request: Modeld_V1_RestoreStoreRequest) throws -> [UInt8] {
                let bytes: [UInt8] = try request.serializedBytes()
                return [0] + withUnsafeBytes(of: UInt32(bytes.count).bigEndian, Array.init) + bytes
            }
            try exchange.send(
                HTTP2Bytes.preface
                    + HTTP2Bytes.stream(
                        1, path: "/modeld.v1.StoreService/RestoreStore", messages: [], endsStream: false)
                    + HTTP2Bytes.frame(type: 0, flags: 0, stream: 1, try message(.with { $0.name = "restored" })))
            let chunk = HTTP2Bytes.frame(
                type: 0, flags: 0, stream: 1, try message(.with { $0.data = Data(repeating: 7, count: 100) }))
            let sent: Bool = await withCheckedContinuation { done in
                Thread.detachNewThread {
                    let end = ContinuousClock.now + .seconds(9)
                    var ok = true
                    while ContinuousClock.now < end, ok {
                        usleep(200_000)
                        ok = (try? exchange.send(chunk)) != nil
                    }
                    done.resume(
                        returning: ok
                            && (try? exchange.send(HTTP2Bytes.frame(type: 0, flags: 0x1, stream: 1, []))) != nil)
                }
            }
            #expect(sent, "the daemon stopped taking the request's frames")
            let answer = try #require(await exchange.answer(stream: 1))
            #expect(answer.trailers.first(name: "grpc-status") == "3", "\(answer)")
        }
    }

    /// A message cut short by the end of its request is said to be (before, gRPC's reader
    /// answered that no message arrived), and a message whose first byte is neither 0 nor 1 is
    /// said to be (before: "compressed"), and a `grpc-timeout` that is no timeout is refused
    /// (before, the call ran without one).
    @Test func aMessageCutShortIsSaidToBe() async throws {
        try await StalledClients.withDaemon { daemon in
            let exchange = try HTTP2Exchange(daemon.socketPath)
            defer { exchange.close() }
            try exchange.send(
                HTTP2Bytes.preface + HTTP2Bytes.stream(1, path: Self.status, messages: [[1, 2, 3]], announced: 10))
            let answer = try #require(await exchange.answer(stream: 1))
            #expect(answer.trailers.first(name: "grpc-status") == "3", "\(answer)")
            #expect(answer.trailers.first(name: "grpc-message")?.contains("cut short") == true, "\(answer)")
            #expect(answer.trailers.first(name: "grpc-message")?.contains("announced 10 bytes") == true, "\(answer)")
            // A first byte gRPC does not define is named, not taken for compression.
            try exchange.send(HTTP2Bytes.stream(3, path: Self.status, messages: [[]], flag: 2))
            let flagged = try #require(await exchange.answer(stream: 3))
            #expect(flagged.trailers.first(name: "grpc-status") == "13", "\(flagged)")
            #expect(flagged.trailers.first(name: "grpc-message")?.contains("first byte is 2") == true, "\(flagged)")
            // A grpc-timeout that is none is refused (GRPCCore would run the call without one).
            var stream: UInt32 = 5
            for timeout in ["abc", "999999999S", "5", "5s x"] {
                try exchange.send(
                    HTTP2Bytes.stream(stream, path: Self.status, headers: [("grpc-timeout", timeout)], messages: [[]]))
                let refused = try #require(await exchange.answer(stream: stream), "\(timeout)")
                #expect(refused.trailers.first(name: "grpc-status") == "3", "\(timeout): \(refused)")
                #expect(
                    refused.trailers.first(name: "grpc-message")?.contains("is not a timeout") == true, "\(refused)")
                // With modeld's error metadata, as every error a client can cause.
                #expect(refused.trailers.first(name: "modeld-error-code") == "invalidArgument", "\(refused)")
                stream += 2
            }
            try exchange.send(
                HTTP2Bytes.stream(stream, path: Self.status, headers: [("grpc-timeout", "5S")], messages: [[]]))
            #expect(await exchange.answer(stream: stream)?.trailers.first(name: "grpc-status") == "0")
        }
    }
}
