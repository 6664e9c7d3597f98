import Foundation
import GRPCCore
import Synchronization
import NIOCore

/// Writes a call's response parts as frames. The response metadata waits to go out with the
/// first message or the status, so that a unary answer is one write.
final class ServerFrameWriter: ClosableRPCWriterProtocol, Sendable {
    typealias Element = RPCResponsePart<[UInt8]>

    private let channel: any Channel
    private let stream: UInt32
    private let outbound: OutboundQueue
    private let pending = Mutex<(metadata: ByteBuffer?, ended: Bool)>((nil, false))

    init(channel: any Channel, stream: UInt32, outbound: OutboundQueue) {
        self.channel = channel
        self.stream = stream
        self.outbound = outbound
    }

    func write(_ part: RPCResponsePart<[UInt8]>) async throws {
        let allocator = channel.allocator
        switch part {
        case .metadata(let metadata):
            let frame = allocator.frame(stream: stream, kind: .metadata) { $0.writeMetadata(metadata) }
            pending.withLock { $0.metadata = frame }
        case .message(let bytes):
            var frame = takeMetadata() ?? allocator.buffer(capacity: Frame.headerSize + bytes.count)
            var message = Self.messageFrame(bytes, stream: stream, allocator: allocator)
            frame.writeBuffer(&message)
            try await outbound.write(ServerOutbound(bytes: frame, ends: nil), on: channel)
        case .status(let status, let metadata):
            var outbound = ServerConnectionHandler.statusFrame(
                stream: stream, status: status, metadata: metadata, allocator: allocator)
            if var head = takeMetadata() {
                head.writeBuffer(&outbound.bytes)
                outbound.bytes = head
            }
            pending.withLock { $0.ended = true }
            // The status is not held back: it ends the stream however full the queue is.
            try self.outbound.enqueue(outbound, on: channel)
        }
    }

    func write(contentsOf elements: some Sequence<RPCResponsePart<[UInt8]>>) async throws {
        for element in elements { try await write(element) }
    }

    func finish() async {}

    func finish(throwing error: any Error) async {
        guard !pending.withLock({ $0.ended }) else { return }
        try? await write(.status(ServerCalls.status(closing: error), [:]))
    }

    private func takeMetadata() -> ByteBuffer? {
        pending.withLock { state in
            defer { state.metadata = nil }
            return state.metadata
        }
    }

    static func messageFrame(_ bytes: [UInt8], stream: UInt32, allocator: ByteBufferAllocator) -> ByteBuffer {
        allocator.frame(stream: stream, kind: .message, capacity: bytes.count) { $0.writeBytes(bytes) }
    }
}
