import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import ModelWire
import SwiftProtobuf
import Synchronization
import Testing

/// A framed connection's point reads are read, run and answered by the connection's own handler
/// on its event loop, in the turn that read them, with no task, pipeline or other thread between
/// (``ServerConnectionHandler``). That path keeps the transport's limits: the message size,
/// cancellation, back-pressure on a client that does not read its answers. (A call with a
/// deadline goes through GRPCCore, which enforces it: `LimitsTests.deadlinesCancelQueriesMidway`.)
/// One at a time with the other suites that load the machine on purpose.
extension OneAtATime {
    @Suite(.timeLimit(.minutes(5)))
    struct AnsweredOnItsLoopTests {
        static let getObjects = "modeld.v1.QueryService/GetObjects"

        /// A point read's request bytes.
        static func pointRead(_ uri: String, store: String = "big") throws -> [UInt8] {
            try Modeld_V1_GetObjectsRequest.with {
                $0.store = store
                $0.uris = [uri]
            }.serializedBytes()
        }

        /// Makes the store "big" of `rows` blobs of `bytes` on `daemon`, and returns their URIs.
        static func blobURIs(on daemon: ModeldProcess, rows: Int, bytes: Int) async throws -> [String] {
            try await StalledClients.makeStore("big", on: daemon, rows: rows, bytes: bytes)
            return try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                try await client.fetch(FetchDescriptor(entityName: "Blob", resultType: .identifiers), in: "big")
                    .identifiers.map(\.uriRepresentation)
            }
        }

        /// Reads `socket` until every stream of `streams` has its status (or `timeout` passes).
        static func statuses(
            of streams: Set<UInt32>, on socket: RawSocket, timeout: Duration = .seconds(30)
        ) async -> [UInt32: (code: Int, message: String)] {
            FramedBytes.statuses(in: await received(until: streams, on: socket, timeout: timeout))
        }

        /// What `socket` sent until every stream of `streams` had its status (or `timeout` passed).
        static func received(
            until streams: Set<UInt32>, on socket: RawSocket, timeout: Duration = .seconds(30)
        ) async -> [UInt8] {
            let deadline = ContinuousClock.now + timeout
            var received: [UInt8] = []
            while true {
                let left = deadline - ContinuousClock.now
                guard !streams.isSubset(of: Set(FramedBytes.statuses(in: received).keys)), left > .zero else {
                    return received
                }
                guard case .bytes(let bytes) = await socket.read(timeout: left) else { return received }
                received += bytes
            }
        }

        /// A request over the message size is refused on its stream (RESOURCE_EXHAUSTED) and its
        /// bytes skipped; a call cancelled before its request ends gets no answer; and the same
        /// connection answers the point reads around them.
        @Test func oversizedAndCancelledPointReadsLeaveTheConnectionServing() async throws {
            try await StalledClients.withDaemon(arguments: ["--max-message-size", "64K"]) { daemon in
                let uri = try #require(try await Self.blobURIs(on: daemon, rows: 10, bytes: 100).first)
                let socket = try RawSocket.connect(daemon.socketPath + ".frames")
                defer { socket.close() }
                let oversized = try Self.pointRead(String(repeating: "x", count: 70 * 1024))
                try socket.send(
                    FramedBytes.call(stream: 1, path: Self.getObjects, request: oversized)
                        + FramedBytes.call(stream: 3, path: Self.getObjects, request: try Self.pointRead(uri))
                        + FramedBytes.open(stream: 5, path: Self.getObjects)
                        + FramedBytes.frame(stream: 5, kind: .message, try Self.pointRead(uri))
                        + FramedBytes.frame(stream: 5, kind: .cancel)
                        + FramedBytes.frame(stream: 5, kind: .end)
                        + FramedBytes.call(stream: 7, path: Self.getObjects, request: try Self.pointRead(uri)))
                let found = await Self.statuses(of: [1, 3, 7], on: socket)
                #expect(found[1]?.code == 8, "the oversized request: \(String(describing: found[1]))")
                #expect(found[1]?.message.contains("maximum message size") == true)
                #expect(found[3]?.code == 0, "the point read after it: \(String(describing: found[3]))")
                #expect(found[5] == nil, "the cancelled call was answered: \(String(describing: found[5]))")
                #expect(found[7]?.code == 0, "the point read after the cancelled one: \(String(describing: found[7]))")
            }
        }

        /// A point read by a URI whose store's UUID is written in capitals reads the object (a
        /// URI's UUID reads in either case); the answers of one-object saves after it, which
        /// start from the URI the store's last answer wrote, still spell URIs as the daemon
        /// does, in small letters, whether they answer a run or a remapped URI.
        @Test func savesAfterAReadByACapitalisedURIAnswerInSmallLetters() async throws {
            try await StalledClients.withDaemon { daemon in
                let uri = try #require(try await Self.blobURIs(on: daemon, rows: 1, bytes: 10).first)
                let scheme = "modeld://"
                let store = String(uri.dropFirst(scheme.count).prefix(36))
                #expect(store == store.lowercased() && store != store.uppercased())
                let capitalised = scheme + store.uppercased() + uri.dropFirst(scheme.count + 36)
                let socket = try RawSocket.connect(daemon.socketPath + ".frames")
                defer { socket.close() }
                try socket.send(
                    FramedBytes.call(stream: 1, path: Self.getObjects, request: try Self.pointRead(capitalised)))
                #expect(await Self.statuses(of: [1], on: socket)[1]?.code == 0, "the read by \(capitalised)")

                let insert = ObjectEdit.insert(
                    entity: "Blob", attributes: ["name": .string("new"), "body": .string("b")], relationships: [:],
                    id: nil)
                var calls: [UInt8] = []
                for (stream, answerRuns) in [(3, true), (5, false)] as [(UInt32, Bool)] {
                    let request =
                        try Modeld_V1_ApplyRequest.with {
                            $0.store = "big"
                            $0.changes = [insert.wire]
                            $0.answerRuns = answerRuns
                        }.serializedBytes() as [UInt8]
                    calls += FramedBytes.call(stream: stream, path: "modeld.v1.QueryService/Apply", request: request)
                }
                try socket.send(calls)
                let received = await Self.received(until: [3, 5], on: socket)
                let statuses = FramedBytes.statuses(in: received), messages = FramedBytes.messages(in: received)
                #expect(statuses[3]?.code == 0 && statuses[5]?.code == 0, "\(statuses)")
                let run = try Modeld_V1_SaveResult(serializedBytes: try #require(messages[3]?.first))
                let remapped = try Modeld_V1_SaveResult(serializedBytes: try #require(messages[5]?.first))
                let answered = run.insertedRuns.map(\.firstUri) + remapped.remapped.values
                #expect(answered.count == 2)
                for answer in answered {
                    #expect(answer.hasPrefix(scheme + store + "/Blob/"), "answered \(answer)")
                }
            }
        }

        /// Direct calls whose frames interleave on one connection (several pending at once, as
        /// a client may send them) are each answered on their own stream with their own objects;
        /// one cancelled among them gets no answer.
        @Test func interleavedPointReadsAreAnsweredEachOnItsStream() async throws {
            try await StalledClients.withDaemon { daemon in
                let uris = try await Self.blobURIs(on: daemon, rows: 4, bytes: 10)
                try #require(uris.count == 4)
                let socket = try RawSocket.connect(daemon.socketPath + ".frames")
                defer { socket.close() }
                // Stream 1 reads the first object, 3 the second, 5 the third, 7 (cancelled) the fourth.
                var bytes: [UInt8] = []
                for stream in [1, 3, 5, 7] as [UInt32] {
                    bytes += FramedBytes.open(stream: stream, path: Self.getObjects)
                }
                for (stream, uri) in [(3, uris[1]), (7, uris[3]), (1, uris[0]), (5, uris[2])] as [(UInt32, String)] {
                    bytes += FramedBytes.frame(stream: stream, kind: .message, try Self.pointRead(uri))
                }
                bytes += FramedBytes.frame(stream: 7, kind: .cancel)
                for stream in [5, 7, 1, 3] as [UInt32] { bytes += FramedBytes.frame(stream: stream, kind: .end) }
                // A call after them on the same connection, to know when everything was answered.
                bytes += FramedBytes.call(stream: 9, path: Self.getObjects, request: try Self.pointRead(uris[0]))
                try socket.send(bytes)
                var received: [UInt8] = []
                let deadline = ContinuousClock.now + .seconds(30)
                while !Set(FramedBytes.statuses(in: received).keys).isSuperset(of: [1, 3, 5, 9]),
                    case .bytes(let more) = await socket.read(timeout: deadline - ContinuousClock.now)
                {
                    received += more
                }
                let statuses = FramedBytes.statuses(in: received)
                for stream in [1, 3, 5, 9] as [UInt32] {
                    #expect(statuses[stream]?.code == 0, "stream \(stream): \(String(describing: statuses[stream]))")
                }
                #expect(statuses[7] == nil, "the cancelled call was answered: \(String(describing: statuses[7]))")
                let messages = FramedBytes.messages(in: received)
                for (stream, index) in [(1, 0), (3, 1), (5, 2), (9, 0)] as [(UInt32, Int)] {
                    let answer = try #require(messages[stream]?.first, "no answer on stream \(stream)")
                    let objects = try Modeld_V1_GetObjectsResponse(serializedBytes: answer).objects
                    #expect(objects.map(\.uri) == [uris[index]], "stream \(stream) answered \(objects.map(\.uri))")
                }
            }
        }

        /// Connections that share an event loop have the answers of a turn flushed by one task at
        /// its end (``LoopConnections``): twelve connections (six or more a loop) each send a
        /// point read at once, five rounds, and each is answered on its own connection with its
        /// own object.
        @Test func pointReadsOfConnectionsSharingALoopAreEachAnswered() async throws {
            try await StalledClients.withDaemon { daemon in
                let uris = try await Self.blobURIs(on: daemon, rows: 12, bytes: 10)
                try #require(uris.count == 12)
                let sockets = try (0..<12).map { _ in try RawSocket.connect(daemon.socketPath + ".frames") }
                defer { for socket in sockets { socket.close() } }
                for round in 0..<5 {
                    let stream = UInt32(2 * round + 1)
                    for (index, socket) in sockets.enumerated() {
                        try socket.send(
                            FramedBytes.call(
                                stream: stream, path: Self.getObjects, request: try Self.pointRead(uris[index])))
                    }
                    for (index, socket) in sockets.enumerated() {
                        let received = await Self.received(until: [stream], on: socket)
                        let status = FramedBytes.statuses(in: received)[stream]
                        #expect(status?.code == 0, "round \(round), connection \(index): \(String(describing: status))")
                        let answer = try #require(FramedBytes.messages(in: received)[stream]?.first)
                        let objects = try Modeld_V1_GetObjectsResponse(serializedBytes: answer).objects
                        #expect(objects.map(\.uri) == [uris[index]], "round \(round), connection \(index)")
                    }
                }
            }
        }

        /// Answers leave at the end of the event loop's turn (``TurnEndFlush``), and the daemon
        /// closes a connection whose client ended its sending side once it reads that end:
        /// calls sent before the end are answered all the same, one alone and 400 sent in one
        /// go (more than a read's buffer holds).
        @Test func callsSentBeforeTheClientEndsItsSendingSideAreAnswered() async throws {
            try await StalledClients.withDaemon { daemon in
                let uri = try #require(try await Self.blobURIs(on: daemon, rows: 4, bytes: 10).first)
                for calls in [1, 400] {
                    let socket = try RawSocket.connect(daemon.socketPath + ".frames")
                    defer { socket.close() }
                    let streams = (0..<calls).map { UInt32(2 * $0 + 1) }
                    var bytes: [UInt8] = []
                    for stream in streams {
                        bytes += FramedBytes.call(
                            stream: stream, path: Self.getObjects, request: try Self.pointRead(uri))
                    }
                    try socket.send(bytes)
                    socket.shutdownSending()
                    var received: [UInt8] = []
                    while case .bytes(let more) = await socket.read(timeout: .seconds(30)) { received += more }
                    let statuses = FramedBytes.statuses(in: received)
                    #expect(statuses.count == calls, "\(calls) calls sent, \(statuses.count) answered")
                    #expect(statuses.values.allSatisfy { $0.code == 0 })
                    let messages = FramedBytes.messages(in: received)
                    for stream in streams {
                        let answer = try #require(messages[stream]?.first, "no answer on stream \(stream)")
                        #expect(try Modeld_V1_GetObjectsResponse(serializedBytes: answer).objects.map(\.uri) == [uri])
                    }
                }
            }
        }

        /// A call answered at once and then bytes that are no frame, in one write: the daemon
        /// closes the connection for the bad bytes, and the answer, made before them, is sent
        /// first.
        @Test func aCallAnsweredBeforeBadBytesIsAnsweredBeforeTheConnectionCloses() async throws {
            try await StalledClients.withDaemon { daemon in
                let uri = try #require(try await Self.blobURIs(on: daemon, rows: 4, bytes: 10).first)
                let socket = try RawSocket.connect(daemon.socketPath + ".frames")
                defer { socket.close() }
                // A frame header of no kind the protocol has (0xEE) on stream 3.
                let badFrame: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 3, 0xEE]
                try socket.send(
                    FramedBytes.call(stream: 1, path: Self.getObjects, request: try Self.pointRead(uri)) + badFrame)
                var received: [UInt8] = []
                var closed = false
                while case .bytes(let more) = await socket.read(timeout: .seconds(30)) { received += more }
                closed = await socket.waitUntilClosed(timeout: .seconds(30))
                #expect(closed, "the daemon kept the connection open after bytes that are no frame")
                #expect(FramedBytes.statuses(in: received)[1]?.code == 0)
                let answer = try #require(FramedBytes.messages(in: received)[1]?.first, "no answer on stream 1")
                #expect(try Modeld_V1_GetObjectsResponse(serializedBytes: answer).objects.map(\.uri) == [uri])
            }
        }

        /// A client that sends point reads as fast as it can and never reads the answers is no
        /// longer read once its answers back up: its sends block, the daemon holds a bounded part of
        /// its answers, and another client's point reads are answered meanwhile.
        @Test func aClientThatDoesNotReadItsAnswersStopsBeingRead() async throws {
            try await StalledClients.withDaemon { daemon in
                // Answers of about 2.6 KB: 40,000 of them would be 100 MB held if the daemon kept reading.
                try await StalledClients.makeStore("big", on: daemon, rows: 100, bytes: 2_500)
                let ids = try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                    try await client.fetch(FetchDescriptor(entityName: "Blob", resultType: .identifiers), in: "big")
                        .identifiers
                }
                let pid = daemon.processIdentifier
                let baseline = try await StarvationTests.settledResidentBytes(of: pid)
                let flood = 40_000
                let stalled = try RawSocket.connect(daemon.socketPath + ".frames")
                defer { stalled.close() }
                let requests = try ids.map { try Self.pointRead($0.uriRepresentation) }
                let sent = Atomic<Int>(0)
                let sender = Thread {
                    for index in 0..<flood {
                        // Odd stream numbers, as a client's.
                        let call = FramedBytes.call(
                            stream: UInt32(2 * index + 1), path: Self.getObjects,
                            request: requests[index % requests.count])
                        guard (try? stalled.send(call)) != nil else { return }
                        sent.add(1, ordering: .relaxed)
                    }
                }
                sender.start()
                // The sender is blocked once its count stops moving. No event says that a peer stopped
                // reading (the daemon holding back its reads is the very thing under test), so the
                // count is looked at until it holds still; a daemon that kept reading would let it
                // reach the end, and the expectation below would fail.
                var last = -1
                while sent.load(ordering: .relaxed) != last {
                    last = sent.load(ordering: .relaxed)
                    try await Task.sleep(for: .milliseconds(500))
                }
                #expect(last < flood, "every one of \(flood) requests was read while none of their answers was")
                try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                    for id in ids.prefix(50) {
                        let found = try await client.objects([id], in: "big")
                        #expect(found.map(\.id) == [id])
                    }
                }
                let growth = try await StarvationTests.settledResidentBytes(of: pid) - baseline
                #expect(
                    growth < 32 * 1_048_576,
                    "a client not reading its point reads' answers grew the daemon by \(growth / 1_048_576) MiB")
                stalled.shutdown()
            }
        }
    }
}
