import NIOCore
import Synchronization

/// Sends a direct server-streaming call's responses as they are written; the response metadata
/// leaves with the first. A message is held back until the handler writes another (both leave
/// together), ends, or pauses (the event loop's next turn), so that a short stream's last
/// message leaves in the same write as the status: one wake-up of the client, not two. A write
/// waits only when the socket is not keeping up (``OutboundQueue``), so that a big stream cannot
/// pile up in memory.
public final class DirectResponseWriter: Sendable {
    private let channel: any Channel
    private let stream: UInt32
    private let outbound: OutboundQueue
    private let state = Mutex(State())

    private struct State {
        var started = false
        var held: ByteBuffer?
        /// Counts holds: a turn of the loop sends only the hold it was queued for, which every
        /// write taken out before it had been queued ahead of.
        var holds = 0
    }

    init(channel: any Channel, stream: UInt32, outbound: OutboundQueue) {
        self.channel = channel
        self.stream = stream
        self.outbound = outbound
    }

    /// Sends one response message.
    public func write(_ message: [UInt8]) async throws {
        let allocator = channel.allocator
        var frame = ServerFrameWriter.messageFrame(message, stream: stream, allocator: allocator)
        // Whatever goes out takes everything held, and every write is queued on the loop in
        // turn, so messages leave in the order they were written.
        let (ready, hold) = state.withLock { state -> (ByteBuffer?, Int) in
            var frames =
                state.started
                ? allocator.buffer(capacity: frame.readableBytes)
                : allocator.frame(stream: stream, kind: .metadata) { $0.writeMetadata([:]) }
            frames.writeBuffer(&frame)
            state.started = true
            guard var held = state.held else {
                state.held = frames
                state.holds += 1
                return (nil, state.holds)
            }
            held.writeBuffer(&frames)
            state.held = nil
            return (held, 0)
        }
        guard let ready else {
            channel.eventLoop.execute { self.sendHeld(hold) }
            // Messages held and sent on the loop's turn count too.
            try await outbound.waitForRoom()
            return
        }
        try await outbound.write(ServerOutbound(bytes: ready, ends: nil), on: channel)
    }

    private func sendHeld(_ hold: Int) {
        guard let bytes = takeUnsent(onlyHold: hold) else { return }
        _ = try? outbound.enqueue(ServerOutbound(bytes: bytes, ends: nil), on: channel)
    }

    /// What has not gone out yet, to lead the status: the held message (with the response
    /// metadata, if it was the first). With `onlyHold`, nothing unless it is still that hold.
    func takeUnsent(onlyHold hold: Int? = nil) -> ByteBuffer? {
        state.withLock { state in
            guard hold == nil || state.holds == hold else { return nil }
            defer { state.held = nil }
            return state.held
        }
    }

    /// What must go out before an OK status: the held message (with the response metadata, if
    /// it was the first), the metadata alone for a stream of no messages, or nothing when every
    /// message has gone (the metadata with the first: a second set would be a client's error).
    func takeLeadingFrames() -> ByteBuffer? {
        state.withLock { state in
            defer {
                state.held = nil
                state.started = true
            }
            if let held = state.held { return held }
            return state.started
                ? nil : channel.allocator.frame(stream: stream, kind: .metadata) { $0.writeMetadata([:]) }
        }
    }
}
