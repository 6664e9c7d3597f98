@testable import FramedTransport
import Glibc
import ModelFixtures
import GRPCCore
import NIOCore
import NIOPosix
import Testing

/// How the framed client knows whether a call's request left, which decides whether a call
/// that failed as UNAVAILABLE may be sent again on a new connection (only one the daemon cannot
/// have seen). On the connection's event loop the write is done at once, without a promise; from
/// another thread it is done later and its promise says. Each over a real socket pair, one end a
/// NIO channel, the other read or closed here.
@Suite struct CallWriteTests {
    static let status = MethodDescriptor(fullyQualifiedService: "modeld.v1.DaemonService", method: "Status")

    /// A connected pair of Unix sockets: one end a NIO channel on `loop`, the other a descriptor.
    static func channelPair(on loop: any EventLoop) async throws -> (channel: any Channel, peer: Int32) {
        var ends: [Int32] = [-1, -1]
        // Close-on-exec: a daemon another test spawns meanwhile would otherwise inherit the peer's
        // end, and closing it here would not close the socket (a write to it then succeeds).
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        let channel = try await ClientBootstrap(group: loop).withConnectedSocket(ends[0]).get()
        return (channel, ends[1])
    }

    static func frames(stream: UInt32, on channel: any Channel) -> ByteBuffer {
        FramedClientTransport.callFrames(
            stream: stream, descriptor: status, request: [1, 2, 3], allocator: channel.allocator)
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
        let (channel, peer) = try await Self.channelPair(on: loop)
        defer { channel.close(promise: nil) }

        // The peer open: written on the loop, at once, and the peer reads every byte.
        let first = Self.frames(stream: 1, on: channel)
        let sent = try await loop.submit { FramedClientTransport.send(first, on: channel) }.get()
        guard case .atOnce(left: true) = sent else {
            Issue.record("a write on the loop to an open peer was \(sent)")
            return
        }
        #expect(await sent.left())
        #expect(Self.read(first.readableBytes, from: peer) == Array(first.readableBytesView))

        // The peer closed just before, in the same turn of the loop, so that the loop cannot
        // have seen it: the write fails (EPIPE), the channel closes, and the request did not leave.
        let second = Self.frames(stream: 3, on: channel)
        let unsent = try await loop.submit {
            close(peer)
            return FramedClientTransport.send(second, on: channel)
        }.get()
        guard case .atOnce(left: false) = unsent else {
            Issue.record("a write on the loop to a closed peer was \(unsent)")
            return
        }
        #expect(await !unsent.left())
        #expect(!channel.isActive)

        // On a channel already closed, the same.
        let third = try await loop.submit {
            FramedClientTransport.send(Self.frames(stream: 5, on: channel), on: channel)
        }
        .get()
        #expect(await !third.left())
    }

    @Test func aRequestWrittenFromAnotherThreadWaitsForItsWrite() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let (channel, peer) = try await Self.channelPair(on: loop)
        defer { channel.close(promise: nil) }
        #expect(!loop.inEventLoop)

        let first = Self.frames(stream: 1, on: channel)
        let sent = FramedClientTransport.send(first, on: channel)
        guard case .later = sent else {
            Issue.record("a write from another thread was \(sent)")
            return
        }
        #expect(await sent.left())
        #expect(Self.read(first.readableBytes, from: peer) == Array(first.readableBytesView))

        // Once the channel has closed, a write from another thread fails, and its promise says so.
        close(peer)
        try await channel.closeFuture.get()
        #expect(await !FramedClientTransport.send(Self.frames(stream: 3, on: channel), on: channel).left())
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
