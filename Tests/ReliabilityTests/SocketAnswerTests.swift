@testable import FramedTransport
import Foundation
import GRPCCore
import Glibc
import ModelFixtures
import ModelTesting
import NIOCore
import NIOPosix
import Testing

/// A framed server connection writes its answers straight into the socket it accepted
/// (``SocketAnswers``), what the socket cannot take at once after them through SwiftNIO, and a
/// stream's messages through SwiftNIO: whatever the mix, and however slowly the client reads,
/// every answer arrives whole, and no answer's bytes come between another's. Over a real socket,
/// the client a raw one that stops reading, then reads a little at a time while it calls again.
@Suite struct SocketAnswerTests {
    static let sized = MethodDescriptor(fullyQualifiedService: "test.Answers", method: "Sized")
    static let streamed = MethodDescriptor(fullyQualifiedService: "test.Answers", method: "Streamed")

    /// A request for `count` bytes of `fill` (as one message, or `messages` of them).
    static func request(count: Int, fill: UInt8, messages: Int = 1) -> [UInt8] {
        withUnsafeBytes(of: UInt32(count).bigEndian, Array.init) + [fill, UInt8(messages)]
    }

    static func parse(_ request: [UInt8]) -> (count: Int, fill: UInt8, messages: Int) {
        let count = request.prefix(4).reduce(0) { $0 << 8 | Int($1) }
        return (count, request[4], Int(request[5]))
    }

    /// `Sized` calls answered where they are read; `Streamed` calls run in tasks that write each
    /// message through the connection's queue.
    static let methods = {
        var methods = DirectMethods()
        methods.register(
            sized,
            immediately: { request, _ in
                let (count, fill, _) = parse(request)
                return [UInt8](repeating: fill, count: count)
            }, otherwise: { _, _ in [] })
        methods.registerServerStreaming(streamed) { request, _, writer in
            let (count, fill, messages) = parse(request)
            for _ in 0..<messages { try await writer.write([UInt8](repeating: fill, count: count)) }
        }
        return methods
    }()

    /// A server of ``methods`` on its own socket.
    private func withServer(_ body: (String) async throws -> Void) async throws {
        let directory = try TemporaryDirectory.make(prefix: "answers")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("framed").path
        let transport = FramedServerTransport(
            path: path, limits: ConnectionLimits(maximumMessageSize: 4 * 1024 * 1024), directMethods: Self.methods)
        let server = GRPCServer(transport: transport, services: [])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            try await transport.waitUntilListening()
            try await body(path)
            server.beginGracefulShutdown()
            try await group.waitForAll()
        }
    }

    static func callFrames(stream: UInt32, _ method: MethodDescriptor, request: [UInt8]) -> [UInt8] {
        Array(
            FramedClientTransport.callFrames(
                stream: stream, descriptor: method, request: request, allocator: ByteBufferAllocator()
            ).readableBytesView)
    }

    /// What a client read of each call's answer, frame by frame.
    struct Answers {
        var bytes: [UInt32: [UInt8]] = [:]
        var statuses: [UInt32: UInt8] = [:]
        var unread = ByteBuffer()

        /// Takes the frames whole in `unread`; throws at a frame no call could have been sent.
        mutating func take(_ read: [UInt8], streams: Set<UInt32>) throws {
            unread.writeBytes(read)
            while let header = try Frame.Header(unread) {
                guard streams.contains(header.stream), [.message, .metadata, .status].contains(header.kind),
                    statuses[header.stream] == nil
                else {
                    throw FramingError("a frame no answer could hold: stream \(header.stream), kind \(header.kind)")
                }
                guard let frame = unread.readFrame(header) else { break }
                if frame.kind == .message { bytes[frame.stream, default: []] += frame.payload.readableBytesView }
                if frame.kind == .status { statuses[frame.stream] = frame.payload.readableBytesView.first }
            }
            unread.discardReadBytes()
        }
    }

    @Test func answersTheSocketCannotTakeAtOnceArriveWholeAndInOrder() async throws {
        try await withServer { path in
            let socket = try RawSocket.connect(path)
            defer { socket.close() }
            var expected: [UInt32: (count: Int, fill: UInt8)] = [:]
            var calls: [UInt8] = []
            // Far more than the socket holds, none read yet: 40 answers of 64 KiB, beside a
            // stream of 20 messages of 32 KiB written through the connection's queue.
            for index in 0..<40 {
                let stream = UInt32(2 * index + 1)
                expected[stream] = (65_536, UInt8(index + 1))
                calls += Self.callFrames(
                    stream: stream, Self.sized, request: Self.request(count: 65_536, fill: UInt8(index + 1)))
            }
            expected[1_001] = (20 * 32_768, 201)
            calls += Self.callFrames(
                stream: 1_001, Self.streamed, request: Self.request(count: 32_768, fill: 201, messages: 20))
            try socket.send(calls)
            // Read a little at a time, calling again after each read: small answers made while
            // the socket has room and SwiftNIO still holds the rest of earlier ones.
            var answers = Answers()
            var next: UInt32 = 2_001
            while answers.statuses.count < expected.count {
                if next < 2_401 {
                    expected[next] = (100, UInt8(next % 200))
                    try socket.send(
                        Self.callFrames(
                            stream: next, Self.sized, request: Self.request(count: 100, fill: UInt8(next % 200))))
                    next += 2
                }
                guard case .bytes(let read) = await socket.read(maximum: 8_192, timeout: .seconds(20)) else {
                    Issue.record("the answers stopped with \(answers.statuses.count) of \(expected.count) whole")
                    return
                }
                try answers.take(read, streams: Set(expected.keys))
            }
            for (stream, (count, fill)) in expected {
                #expect(answers.statuses[stream] == 0, "stream \(stream)'s status")
                let bytes = answers.bytes[stream] ?? []
                #expect(bytes.count == count && bytes.allSatisfy { $0 == fill }, "stream \(stream)'s answer")
            }
        }
    }

    /// The same on one loop's turn, without waiting on the machine: a 1 MiB answer fills the
    /// socket and leaves its rest in SwiftNIO; the client then reads 64 KiB, and in the same turn
    /// (before SwiftNIO hears the socket has room) a small call is answered. Its answer must wait
    /// behind the rest in SwiftNIO rather than go into the room at once.
    @Test func aSmallAnswerWaitsBehindWhatSwiftNIOHolds() async throws {
        let transport = FramedServerTransport(
            path: "/nonexistent/unused", limits: ConnectionLimits(maximumMessageSize: 4 * 1024 * 1024),
            directMethods: Self.methods)
        let ends = try CallWriteTests.socketPair()
        defer { Glibc.close(ends[1]) }
        // A loop of its own: a connection alone on its loop flushes a read's answers at the
        // read's end, inside the task below.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ServerConnectionHandler(transport: transport, peer: nil, socket: ends[0]))
                }
            }
            .withConnectedSocket(ends[0]).get()
        let peer = ends[1]
        let readEarly = try await loop.submit {
            let pipeline = channel.pipeline
            let large = Self.callFrames(stream: 1, Self.sized, request: Self.request(count: 1 << 20, fill: 7))
            pipeline.fireChannelRead(NIOAny(ByteBuffer(bytes: large)))
            pipeline.fireChannelReadComplete()
            let early = Self.receive(from: peer)
            let small = Self.callFrames(stream: 3, Self.sized, request: Self.request(count: 100, fill: 9))
            pipeline.fireChannelRead(NIOAny(ByteBuffer(bytes: small)))
            pipeline.fireChannelReadComplete()
            return early
        }.get()
        var answers = Answers()
        try answers.take(readEarly, streams: [1, 3])
        while answers.statuses.count < 2 {
            let read = Self.receive(from: peer)
            guard !read.isEmpty else {
                Issue.record("the answers stopped with \(answers.statuses.count) of 2 whole")
                return
            }
            try answers.take(read, streams: [1, 3])
        }
        #expect(answers.bytes[1]?.count == 1 << 20 && answers.bytes[1]?.allSatisfy { $0 == 7 } == true)
        #expect(answers.bytes[3] == [UInt8](repeating: 9, count: 100))
        try await channel.close()
        try await group.shutdownGracefully()
    }

    /// What one `recv` of at most 64 KiB gets from `descriptor` (nothing once it closes or its
    /// receive timeout passes).
    static func receive(from descriptor: Int32) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(buffer.prefix(count)) : []
    }
}
