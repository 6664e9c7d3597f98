@testable import FramedTransport
import Glibc
import ModelFixtures
import GRPCCore
import NIOCore
import NIOPosix
import Testing

/// How the framed client writes a call's request and knows whether it left, which decides
/// whether a call that failed as UNAVAILABLE may be sent again on a new connection (only one the
/// daemon cannot have seen). On the connection's event loop the frames go straight into the
/// socket, what it cannot take at once after them through SwiftNIO, and no later write comes
/// between their bytes; from another thread the write is done later and its promise says. Each
/// over a real socket pair, one end a client connection, the other read or closed here.
@Suite struct CallWriteTests {
    static let status = MethodDescriptor(fullyQualifiedService: "modeld.v1.DaemonService", method: "Status")

    /// A connected pair of Unix sockets: one end a client connection on `loop`, the other a
    /// descriptor. `sendBuffer` sets the connection's socket's send buffer.
    static func connectionPair(on loop: any EventLoop, sendBuffer: Int32? = nil) async throws -> (
        connection: FramedClientConnection, peer: Int32
    ) {
        let ends = try socketPair()
        if var size = sendBuffer {
            try #require(setsockopt(ends[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0)
        }
        let connection = try await FramedClientTransport.connection(on: ends[0], eventLoop: loop).get()
        return (connection, ends[1])
    }

    /// A connected pair of Unix sockets, close-on-exec, whose second end's reads give up after
    /// 10 seconds (a write that never comes fails the test rather than hanging it).
    static func socketPair() throws -> [Int32] {
        var ends: [Int32] = [-1, -1]
        // Close-on-exec: a daemon another test spawns meanwhile would otherwise inherit the peer's
        // end, and closing it here would not close the socket (a write to it then succeeds).
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        var wait = timeval(tv_sec: 10, tv_usec: 0)
        try #require(setsockopt(ends[1], SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size)) == 0)
        return ends
    }

    static func frames(stream: UInt32, request: [UInt8] = [1, 2, 3]) -> [UInt8] {
        Array(
            FramedClientTransport.callFrames(
                stream: stream, descriptor: status, request: request, allocator: ByteBufferAllocator()
            ).readableBytesView)
    }

    static func send(_ stream: UInt32, request: [UInt8] = [1, 2, 3], on connection: FramedClientConnection)
        -> FramedClientTransport.Sent
    {
        connection.sendCall(stream: stream, descriptor: status, request: request)
    }

    /// Reads `count` bytes from `descriptor` (blocking), or fewer if it closes first.
    static func read(_ count: Int, from descriptor: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: count)
        while bytes.count < count {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, count - bytes.count) }
            guard got > 0 else { break }
            bytes += buffer.prefix(got)
        }
        return bytes
    }

    @Test func aRequestWrittenOnTheLoopKnowsAtOnceWhetherItLeft() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let (connection, peer) = try await Self.connectionPair(on: loop)
        let channel = connection.channel
        defer { channel.close(promise: nil) }

        // The peer open: written on the loop, at once, and the peer reads every byte.
        let sent = try await loop.submit { Self.send(1, on: connection) }.get()
        guard case .atOnce(left: true) = sent else {
            Issue.record("a write on the loop to an open peer was \(sent)")
            return
        }
        #expect(await sent.left())
        let first = Self.frames(stream: 1)
        #expect(Self.read(first.count, from: peer) == first)

        // The peer closed just before, in the same turn of the loop, so that the loop cannot
        // have seen it: the write fails (EPIPE), the channel closes, and the request did not leave.
        let unsent = try await loop.submit {
            close(peer)
            return Self.send(3, on: connection)
        }.get()
        guard case .atOnce(left: false) = unsent else {
            Issue.record("a write on the loop to a closed peer was \(unsent)")
            return
        }
        #expect(await !unsent.left())
        #expect(!channel.isActive)

        // On a channel already closed, the same.
        let third = try await loop.submit { Self.send(5, on: connection) }.get()
        #expect(await !third.left())
    }

    @Test func aRequestWrittenFromAnotherThreadWaitsForItsWrite() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let (connection, peer) = try await Self.connectionPair(on: loop)
        let channel = connection.channel
        defer { channel.close(promise: nil) }
        #expect(!loop.inEventLoop)

        let sent = Self.send(1, on: connection)
        guard case .later = sent else {
            Issue.record("a write from another thread was \(sent)")
            return
        }
        #expect(await sent.left())
        let first = Self.frames(stream: 1)
        #expect(Self.read(first.count, from: peer) == first)

        // Once the channel has closed, a write from another thread fails, and its promise says so.
        close(peer)
        try await channel.closeFuture.get()
        #expect(await !Self.send(3, on: connection).left())
    }

    /// A request larger than the socket takes at once: its first bytes go straight in, the rest
    /// through SwiftNIO, and the calls written after it (on the loop, and a cancel from another
    /// thread) wait behind it, so that the peer reads each call's frames whole and in order.
    /// Once SwiftNIO has written everything, the next call goes straight in again.
    @Test func aRequestTheSocketCannotTakeAtOnceIsNotOvertaken() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let (connection, peer) = try await Self.connectionPair(on: loop, sendBuffer: 16 * 1024)
        let channel = connection.channel
        defer { channel.close(promise: nil) }
        defer { close(peer) }
        var random = SeededRandom(seed: 44)
        let large = (0..<(1024 * 1024)).map { _ in UInt8.random(in: 0...255, using: &random) }

        // In one turn of the loop: the large request, then the peer reads some of it (so that
        // the socket has room again before SwiftNIO could write its rest), then a small call.
        let (first, inNIO, drained, second) = try await loop.submit {
            let first = Self.send(1, request: large, on: connection)
            let inNIO = connection.writesInNIO.load(ordering: .relaxed)
            var drained = [UInt8](repeating: 0, count: 256 * 1024)
            let got = drained.withUnsafeMutableBytes { Glibc.read(peer, $0.baseAddress, $0.count) }
            drained.removeSubrange(max(got, 0)...)
            return (first, inNIO, drained, Self.send(3, on: connection))
        }.get()
        guard case .atOnce(left: true) = first, case .atOnce(left: true) = second else {
            Issue.record("the writes on the loop were \(first) and \(second)")
            return
        }
        #expect(inNIO == 1, "the large request's rest was not handed to SwiftNIO")
        channel.writeAndFlush(channel.allocator.frame(stream: 1, kind: .cancel), promise: nil)
        var expected = Self.frames(stream: 1, request: large) + Self.frames(stream: 3)
        expected += Array(channel.allocator.frame(stream: 1, kind: .cancel).readableBytesView)
        #expect(!drained.isEmpty)
        let read = drained + Self.read(expected.count - drained.count, from: peer)
        #expect(read.count == expected.count)
        let firstDifference = read.indices.first { read[$0] != expected[$0] }
        #expect(firstDifference == nil, "the peer read the calls' frames mixed or out of order")

        // Everything written: SwiftNIO holds nothing, and a call goes straight in again.
        try await channel.writeAndFlush(ByteBuffer()).get()
        let afterwards = try await loop.submit {
            (connection.writesInNIO.load(ordering: .relaxed), Self.send(5, on: connection))
        }.get()
        #expect(afterwards.0 == 0)
        guard case .atOnce(left: true) = afterwards.1 else {
            Issue.record("the write after the large one was \(afterwards.1)")
            return
        }
        let fifth = Self.frames(stream: 5)
        #expect(Self.read(fifth.count, from: peer) == fifth)
    }

    /// A small call (its frames made on the stack) onto a socket that takes nothing more: the
    /// frames wait in SwiftNIO, whole, behind what the socket holds, and leave when the peer
    /// reads.
    @Test func aSmallCallOntoAFullSocketWaitsInSwiftNIO() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let (connection, peer) = try await Self.connectionPair(on: loop, sendBuffer: 16 * 1024)
        let channel = connection.channel
        defer { channel.close(promise: nil) }
        defer { close(peer) }
        let (filled, sent, inNIO) = try await loop.submit {
            // The socket filled behind SwiftNIO's back, with zeros, until it takes no more.
            var filled = 0
            let zeros = [UInt8](repeating: 0, count: 4096)
            while true {
                let result = zeros.withUnsafeBytes {
                    Glibc.send(connection.socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
                }
                guard result > 0 else { break }
                filled += result
            }
            let sent = Self.send(3, on: connection)
            return (filled, sent, connection.writesInNIO.load(ordering: .relaxed))
        }.get()
        #expect(filled > 0)
        guard case .atOnce(left: true) = sent else {
            Issue.record("a small call onto a full socket was \(sent)")
            return
        }
        #expect(inNIO == 1, "the frames were not handed to SwiftNIO")
        let frames = Self.frames(stream: 3)
        let read = Self.read(filled + frames.count, from: peer)
        #expect(read.count == filled + frames.count)
        #expect(read.prefix(filled).allSatisfy { $0 == 0 })
        #expect(Array(read.dropFirst(filled)) == frames)
    }
}

/// The client's table of calls under way (one in a slot of its own, any others in a table)
/// answers as a plain table would, over a long random run of calls opening and ending, several
/// at once, on one connection.
@Suite struct OpenCallsTests {
    static func call(_ sink: FramedClientConnection.Sink?) -> UnaryCall? {
        if case .unary(let call) = sink { call } else { nil }
    }

    @Test func answersAsATableWould() {
        var random = SeededRandom(seed: 38)
        var calls = OpenCalls()
        var model: [UInt32: UnaryCall] = [:]
        var next: UInt32 = 1
        for step in 0..<5_000 {
            let id = UInt32.random(in: 1...max(next, 2), using: &random) | 1
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                let call = UnaryCall()
                calls.insert(.unary(call), for: next)
                model[next] = call
                next += 2
            case 1:
                #expect(Self.call(calls.remove(id)) === model.removeValue(forKey: id), "step \(step)")
            default:
                #expect(Self.call(calls.sink(for: id)) === model[id], "step \(step)")
            }
        }
        #expect(!model.isEmpty)
        let left = calls.removeAll().compactMap(Self.call)
        #expect(Set(left.map(ObjectIdentifier.init)) == Set(model.values.map(ObjectIdentifier.init)))
        #expect(left.count == model.count)
        #expect(calls.removeAll().isEmpty && calls.sink(for: 1) == nil)
    }
}
