import GRPCCore
import NIOCore

/// One frame of modeld's framed transport: a gRPC call's parts, multiplexed by stream number on
/// one Unix socket connection, with none of HTTP/2's machinery (no HPACK, no flow-control
/// windows, no settings). Each frame is a 9-byte header — payload length (UInt32), stream
/// (UInt32), kind (UInt8) — and the payload.
struct Frame: Sendable {
    enum Kind: UInt8, Sendable {
        /// Client: starts a call; the payload is the method path and the request metadata.
        case open = 1
        /// Either side: one serialized message.
        case message = 2
        /// Client: no more request messages.
        case end = 3
        /// Client: the caller gave up on the call.
        case cancel = 4
        /// Server: the response metadata.
        case metadata = 5
        /// Server: the call's status and trailing metadata; the stream is over.
        case status = 6
    }

    static let headerSize = 9

    var stream: UInt32
    var kind: Kind
    var payload: ByteBuffer
}

/// Reads frames; a frame over `maximumPayload` is not buffered but skipped, and reported as
/// `.oversized` so that its call can fail with a clear status while the connection goes on.
struct FrameDecoder: ByteToMessageDecoder {
    enum Item: Sendable {
        case frame(Frame)
        case oversized(stream: UInt32, size: Int)
    }
    typealias InboundOut = Item

    let maximumPayload: Int
    private var skipping = 0

    init(maximumPayload: Int) {
        self.maximumPayload = maximumPayload
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if skipping > 0 {
            let skipped = min(skipping, buffer.readableBytes)
            buffer.moveReaderIndex(forwardBy: skipped)
            skipping -= skipped
            return skipping > 0 ? .needMoreData : .continue
        }
        guard buffer.readableBytes >= Frame.headerSize,
              let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self),
              let stream = buffer.getInteger(at: buffer.readerIndex + 4, as: UInt32.self),
              let kind = buffer.getInteger(at: buffer.readerIndex + 8, as: UInt8.self) else { return .needMoreData }
        guard let parsed = Frame.Kind(rawValue: kind) else {
            throw FramingError("a frame of unknown kind \(kind)")
        }
        if Int(length) > maximumPayload {
            buffer.moveReaderIndex(forwardBy: Frame.headerSize)
            skipping = Int(length)
            context.fireChannelRead(wrapInboundOut(.oversized(stream: stream, size: Int(length))))
            return .continue
        }
        guard buffer.readableBytes >= Frame.headerSize + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: Frame.headerSize)
        let payload = buffer.readSlice(length: Int(length))!
        context.fireChannelRead(wrapInboundOut(.frame(Frame(stream: stream, kind: parsed, payload: payload))))
        return .continue
    }
}

/// A peer that does not speak the framing; the connection is closed.
struct FramingError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension ByteBufferAllocator {
    /// A frame with its header, the payload written by `body`.
    func frame(stream: UInt32, kind: Frame.Kind, capacity: Int = 64, _ body: (inout ByteBuffer) -> Void = { _ in }) -> ByteBuffer {
        var buffer = buffer(capacity: Frame.headerSize + capacity)
        buffer.writeInteger(UInt32(0))
        buffer.writeInteger(stream)
        buffer.writeInteger(kind.rawValue)
        body(&buffer)
        buffer.setInteger(UInt32(buffer.writerIndex - Frame.headerSize), at: 0)
        return buffer
    }
}

extension ByteBuffer {
    mutating func writeShortString(_ text: String) {
        let bytes = Array(text.utf8)
        writeInteger(UInt32(bytes.count))
        writeBytes(bytes)
    }

    mutating func readShortString() throws -> String {
        guard let count = readInteger(as: UInt32.self), let text = readString(length: Int(count)) else {
            throw FramingError("a truncated string")
        }
        return text
    }

    /// Metadata: a count, then each key, a kind (0 text, 1 binary) and the value.
    mutating func writeMetadata(_ metadata: Metadata) {
        writeInteger(UInt32(metadata.count))
        for (key, value) in metadata {
            writeShortString(key)
            switch value {
            case .string(let text):
                writeInteger(UInt8(0))
                writeShortString(text)
            case .binary(let bytes):
                writeInteger(UInt8(1))
                writeInteger(UInt32(bytes.count))
                writeBytes(bytes)
            }
        }
    }

    mutating func readMetadata() throws -> Metadata {
        guard let count = readInteger(as: UInt32.self), count <= 10_000 else { throw FramingError("bad metadata") }
        var metadata = Metadata()
        for _ in 0..<count {
            let key = try readShortString()
            guard let kind = readInteger(as: UInt8.self) else { throw FramingError("truncated metadata") }
            if kind == 0 {
                metadata.addString(try readShortString(), forKey: key)
            } else {
                guard let size = readInteger(as: UInt32.self), let bytes = readBytes(length: Int(size)) else {
                    throw FramingError("truncated metadata")
                }
                metadata.addBinary(bytes, forKey: key)
            }
        }
        return metadata
    }
}
