import GRPCCore
import NIOCore

/// A frame the server sends, and whether it ends its stream (a status).
struct ServerOutbound: Sendable {
    var bytes: ByteBuffer
    var ends: UInt32?
}

extension ServerConnectionHandler {
    /// The answer to a call that arrives while the daemon stops.
    static func stoppingFrame(stream: UInt32, allocator: ByteBufferAllocator) -> ServerOutbound {
        statusFrame(stream: stream, status: ServerCalls.stopping, allocator: allocator)
    }

    static func statusFrame(stream: UInt32, status: Status, metadata: Metadata = [:], allocator: ByteBufferAllocator)
        -> ServerOutbound
    {
        let bytes = allocator.frame(stream: stream, kind: .status, capacity: 16 + status.message.utf8.count) { buffer in
            buffer.writeInteger(UInt8(status.code.rawValue))
            buffer.writeShortString(status.message)
            buffer.writeMetadata(metadata)
        }
        return ServerOutbound(bytes: bytes, ends: stream)
    }
}
