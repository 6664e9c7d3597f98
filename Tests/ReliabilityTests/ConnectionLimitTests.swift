#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import SwiftProtobuf
import Testing

/// What one client can hold of the daemon's connections and memory: file descriptors, idle
/// connections, and requests that never finish arriving (issue 37, findings 4 and 5). Against the
/// spawned `modeld`.
@Suite struct ConnectionLimitTests {
    /// Flooded with connections past what its file-descriptor limit allows, the daemon refuses
    /// the extra ones at once and says so in its log, does not spin, and its clients' reads
    /// still open the store's reader connections.
    @Test func connectionsPastTheDescriptorLimitAreRefusedCleanly() async throws {
        try await StalledClients.withDaemon(launcher: ["/usr/bin/prlimit", "--nofile=512:512"]) { daemon in
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                // Saved through the writer only: the store's readers are not open yet.
                _ = try await client.createStore("s", schema: StalledClients.schema)
                try await client.apply(
                    [
                        .insert(
                            entity: "Blob", attributes: ["name": .string("a"), "body": .string("b")],
                            relationships: [:], id: nil)
                    ],
                    in: "s")
            }
            let client = try DaemonClient.connect(socketPath: daemon.socketPath, transport: .framed)
            defer { client.close() }
            _ = try await client.status()

            var sockets: [RawSocket] = []
            defer { for socket in sockets { socket.close() } }
            var notConnected = 0
            for index in 0..<700 {
                do {
                    sockets.append(
                        try RawSocket.connect(
                            index % 2 == 0 ? daemon.socketPath : daemon.socketPath + ".frames", nonBlocking: true))
                } catch {
                    notConnected += 1
                }
            }
            // Connections past the limit are closed by the daemon, at once.
            var refused = 0
            for socket in sockets.suffix(200) where await socket.waitUntilClosed(timeout: .milliseconds(500)) {
                refused += 1
            }
            #expect(refused > 0, "no connection was refused; \(notConnected) could not connect at all")

            // A new client meanwhile is told modeld is unavailable (its connections are closed at
            // once), as gRPC says it, not with an error of the transport's own (was `UnsentCall()`).
            let turnedAway = await #expect(throws: ModelError.self) {
                try await DaemonClient.withClient(socketPath: daemon.socketPath, transport: .framed) {
                    try await $0.status()
                }
            }
            #expect(turnedAway?.code == .unavailable, "\(String(describing: turnedAway))")

            // A read that opens the store's readers works beside the flood.
            #expect(
                try await StalledClients.within(.seconds(20), "a count beside 700 connections") {
                    try await client.count(FetchDescriptor(entityName: "Blob"), in: "s")
                } == 1)
            // With the flood open and nothing asked, the daemon does not spin (say, retrying
            // accepts it has no descriptors for): over two idle seconds it uses well under one of CPU.
            let pid = daemon.processIdentifier
            let cpuBefore = try #require(ProcessFacts.cpuTime(of: pid))
            let window = ContinuousClock.now
            try await Task.sleep(for: .seconds(2))
            let cpu = try #require(ProcessFacts.cpuTime(of: pid)) - cpuBefore
            let elapsed = ContinuousClock.now - window
            #expect(cpu < elapsed / 2, "the daemon used \(cpu) of CPU in \(elapsed) beside idle connections")
            #expect(daemon.log.contains("refusing connections"), "\(daemon.log)")

            for socket in sockets { socket.close() }
            sockets = []
            // Once they are gone, new clients are served again.
            let count = try await StalledClients.within(.seconds(20), "a new client after the flood") {
                try await DaemonClient.withClient(socketPath: daemon.socketPath, transport: .http2) { other in
                    try await other.count(FetchDescriptor(entityName: "Blob"), in: "s")
                }
            }
            #expect(count == 1)
        }
    }

    /// A connection with no call under way is closed after `--connection-idle-timeout`, on both
    /// sockets; a client whose idle connection was closed reconnects for its next call.
    @Test func idleConnectionsAreClosed() async throws {
        try await StalledClients.withDaemon(arguments: ["--connection-idle-timeout", "3"]) { daemon in
            let client = try DaemonClient.connect(socketPath: daemon.socketPath, transport: .framed)
            defer { client.close() }
            _ = try await client.status()
            // A blocking client's connection too (its calls are short, made here).
            let blocking = try BlockingDaemonClient(socketPath: daemon.socketPath)
            defer { blocking.close() }
            let pid = try blocking.status().processIdentifier
            let framed = try RawSocket.connect(daemon.socketPath + ".frames")
            let http2 = try RawSocket.connect(daemon.socketPath)
            defer {
                framed.close()
                http2.close()
            }
            // HTTP/2's preface and an empty SETTINGS frame: a client that connected and does nothing.
            try http2.send(Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0])
            #expect(await framed.waitUntilClosed(timeout: .seconds(20)))
            #expect(await http2.waitUntilClosed(timeout: .seconds(20)))
            // The clients' connections, idle as long, were closed too; their next calls go on new ones.
            #expect(try await client.status().version.isEmpty == false)
            #expect(try blocking.status().processIdentifier == pid)
        }
    }

    /// Requests announced and never finished: past the cap on bytes held for unfinished
    /// requests (256 MiB by default), the answer is RESOURCE_EXHAUSTED at once; the others are
    /// timed out (30 s by default) and their connections closed.
    @Test func halfSentFramedRequestsAreCappedAndTimedOut() async throws {
        try await StalledClients.withDaemon { daemon in
            let announced = 15 * 1_048_576
            var sockets: [RawSocket] = []
            defer { for socket in sockets { socket.close() } }
            for _ in 0..<20 {
                let socket = try RawSocket.connect(daemon.socketPath + ".frames")
                try socket.send(
                    FramedBytes.open(stream: 1, path: "modeld.v1.QueryService/Apply")
                        + FramedBytes.header(length: announced, stream: 1, kind: .message)
                        + [UInt8](repeating: 0x0A, count: 10))
                sockets.append(socket)
            }
            // 20 × 15 MiB is over 256 MiB: at least three are refused, well before the others time
            // out. Each socket is watched at once for its first answer, so that how long the daemon
            // takes to read the flood under load does not matter, only the order of what it says.
            let answers = await withTaskGroup(of: FirstAnswer.self) { group in
                for socket in sockets { group.addTask { await FirstAnswer.read(from: socket, within: .seconds(90)) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let refused = answers.compactMap { $0.code == 8 ? $0.at : nil }
            let timedOut = answers.compactMap { $0.code == 4 ? $0.at : nil }
            #expect(refused.count >= 3, "\(refused.count) of 20 half-sent requests were refused at once: \(answers)")
            #expect(refused.count + timedOut.count == 20, "\(answers)")
            if let lastRefusal = refused.max(), let firstTimeout = timedOut.min() {
                #expect(lastRefusal < firstTimeout, "refusals came after a timeout: \(answers)")
            }
            let deadline = ContinuousClock.now + .seconds(60)
            var closed = 0
            for socket in sockets where await socket.waitUntilClosed(timeout: deadline - ContinuousClock.now) {
                closed += 1
            }
            #expect(closed == 20)
            // The daemon serves on.
            #expect(
                try await StalledClients.within(.seconds(20), "a status call") {
                    try await DaemonClient.withClient(socketPath: daemon.socketPath) { try await $0.status() }
                }.version.isEmpty == false)
        }
    }

    /// The same over HTTP/2: a gRPC message announced in its 5-byte prefix and never finished.
    @Test func halfSentHTTP2RequestsAreCappedAndTimedOut() async throws {
        try await StalledClients.withDaemon { daemon in
            var calls: [PartialHTTP2Call] = []
            defer { for call in calls { call.close() } }
            for _ in 0..<20 {
                calls.append(
                    try await PartialHTTP2Call.start(
                        socketPath: daemon.socketPath, method: "/modeld.v1.QueryService/Apply",
                        announced: 15 * 1_048_576, sent: 10))
            }
            // Each call's answer is read as it comes; what matters is their order, not how long
            // the daemon takes to read the flood under load.
            var answers: [(answer: PartialHTTP2Call.Answer, at: ContinuousClock.Instant)] = []
            let deadline = ContinuousClock.now + .seconds(90)
            for call in calls {
                let answer = await call.answer(within: max(deadline - ContinuousClock.now, .zero))
                answers.append(answer == .timedOut ? (answer, .now) : await call.answerAndArrival())
            }
            let refused = answers.filter { $0.answer == .status("8") }.map(\.at)
            let later = answers.filter { $0.answer != .status("8") }
            #expect(refused.count >= 3, "\(refused.count) of 20 half-sent requests were refused at once: \(answers)")
            #expect(!later.contains { $0.answer == .timedOut }, "\(later)")
            if let lastRefusal = refused.max(), let firstTimeout = later.map(\.at).min() {
                #expect(lastRefusal < firstTimeout, "refusals came after a timeout: \(answers)")
            }
            // A request over the message size limit is refused with RESOURCE_EXHAUSTED naming it.
            let oversized = try await PartialHTTP2Call.start(
                socketPath: daemon.socketPath, method: "/modeld.v1.QueryService/Apply",
                announced: 17 * 1_048_576, sent: 10)
            #expect(await oversized.answer(within: .seconds(10)) == .status("8"))
            oversized.close()
        }
    }
}

extension ConnectionLimitTests {
    /// Whole messages of HTTP/2 calls whose streams never end are held from the budget of
    /// requests still arriving, as the framed socket holds them: past it, more are refused at
    /// once (RESOURCE_EXHAUSTED), and what they held is given back when their connections close.
    @Test func wholeHTTP2MessagesOfUnendedCallsAreCapped() async throws {
        let arguments = ["--max-pending-request-bytes", "1M", "--max-message-size", "64K"]
        try await StalledClients.withDaemon(arguments: arguments) { daemon in
            // 75 calls of 16,000 bytes (1.2 MB), each on a connection of its own (within its
            // flow-control window), none ending its stream.
            let message = [UInt8](repeating: 7, count: 16_000)
            let exchanges = try (0..<75).map { _ in try HTTP2Exchange(daemon.socketPath) }
            defer { for exchange in exchanges { exchange.close() } }
            for exchange in exchanges {
                try exchange.send(
                    HTTP2Bytes.preface
                        + HTTP2Bytes.stream(1, path: HTTP2ProtocolTests.status, messages: [message], endsStream: false))
            }
            let answers = await withTaskGroup(of: HTTP2Exchange.Answer?.self) { group in
                for exchange in exchanges { group.addTask { await exchange.answer(stream: 1) } }
                var answers: [HTTP2Exchange.Answer?] = []
                for await answer in group { answers.append(answer) }
                return answers
            }
            let refused = answers.compactMap { $0 }.filter { $0.trailers.first(name: "grpc-status") == "8" }
            // 1 MiB holds 65 of them; the rest are refused, and none is answered otherwise.
            #expect(refused.count >= 5 && refused.count <= 15, "\(refused.count) refused: \(answers)")
            #expect(answers.compactMap { $0 }.count == refused.count, "\(answers)")
            #expect(
                refused.allSatisfy { $0.trailers.first(name: "grpc-message")?.contains("still arriving") == true },
                "\(refused)")
            for exchange in exchanges { exchange.close() }
            // Given back: a call of the same size is answered (Status refuses the bytes it cannot
            // read as its request, which it could not if they were refused first).
            let after = try HTTP2Exchange(daemon.socketPath)
            defer { after.close() }
            var status: String?
            let deadline = ContinuousClock.now + .seconds(30)
            var stream: UInt32 = 1
            repeat {
                try after.send(
                    (stream == 1 ? HTTP2Bytes.preface : [])
                        + HTTP2Bytes.stream(stream, path: HTTP2ProtocolTests.status, messages: [message]))
                status = await after.answer(stream: stream)?.trailers.first(name: "grpc-status")
                stream += 2
            } while status == "8" && ContinuousClock.now < deadline
            #expect(status != nil && status != "8", "\(String(describing: status))")
        }
    }
}

extension ConnectionLimitTests {
    /// A call whose whole message came but whose request never ends is ended DEADLINE_EXCEEDED
    /// after the request timeout, on both sockets, and its connection serves on: it held its
    /// message (from the shared budget) and its place among the connection's calls for good.
    @Test func callsOpenedAndNeverEndedAreTimedOut() async throws {
        try await StalledClients.withDaemon(arguments: ["--request-timeout", "1"]) { daemon in
            let message = [UInt8](repeating: 7, count: 1_000)
            let socket = try RawSocket.connect(daemon.socketPath + ".frames")
            defer { socket.close() }
            let status = "modeld.v1.DaemonService/Status"
            try socket.send(
                FramedBytes.open(stream: 1, path: status) + FramedBytes.frame(stream: 1, kind: .message, message))
            let framed = await FirstAnswer.read(from: socket, within: .seconds(20))
            #expect(framed.code == 4, "\(framed)")
            // The connection serves its next call.
            try socket.send(FramedBytes.call(stream: 3, path: status, request: []))
            var received: [UInt8] = []
            let deadline = ContinuousClock.now + .seconds(20)
            while FramedBytes.statuses(in: received)[3] == nil,
                case .bytes(let bytes) = await socket.read(timeout: max(deadline - ContinuousClock.now, .zero))
            {
                received += bytes
            }
            #expect(FramedBytes.statuses(in: received)[3]?.code == 0, "\(FramedBytes.statuses(in: received))")

            let exchange = try HTTP2Exchange(daemon.socketPath)
            defer { exchange.close() }
            try exchange.send(
                HTTP2Bytes.preface
                    + HTTP2Bytes.stream(1, path: HTTP2ProtocolTests.status, messages: [message], endsStream: false))
            let answer = await exchange.answer(stream: 1)
            #expect(answer?.trailers.first(name: "grpc-status") == "4", "\(String(describing: answer))")
            #expect(
                answer?.trailers.first(name: "grpc-message")?.contains("did not end within 1 s") == true,
                "\(String(describing: answer))")
            #expect(
                answer?.trailers.first(name: "modeld-error-code") == "deadlineExceeded", "\(String(describing: answer))"
            )
            try exchange.send(HTTP2Bytes.stream(3, path: HTTP2ProtocolTests.status, messages: [[]]))
            #expect(await exchange.answer(stream: 3)?.trailers.first(name: "grpc-status") == "0")
        }
    }
}

/// The first status a half-sent framed call (stream 1) hears, and when it arrived.
private struct FirstAnswer: Sendable, CustomStringConvertible {
    /// The status code, or nil if the connection closed or nothing came in time.
    var code: Int?
    var at: ContinuousClock.Instant?

    var description: String { code.map { "status \($0)" } ?? "no status" }

    static func read(from socket: RawSocket, within timeout: Duration) async -> FirstAnswer {
        let deadline = ContinuousClock.now + timeout
        var received: [UInt8] = []
        while case .bytes(let bytes) = await socket.read(timeout: max(deadline - ContinuousClock.now, .zero)) {
            received += bytes
            if let status = FramedBytes.statuses(in: received)[1] {
                return FirstAnswer(code: status.code, at: ContinuousClock.now)
            }
        }
        return FirstAnswer(code: nil, at: nil)
    }
}
