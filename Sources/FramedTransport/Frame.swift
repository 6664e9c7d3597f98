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

extension Frame {
    /// A frame's header: its payload's length, its stream and its kind.
    struct Header {
        let length: Int
        let stream: UInt32
        let kind: Kind

        /// The header at the start of `buffer`'s readable bytes; nil until all 9 bytes are there.
        /// Throws for a kind that does not exist.
        init?(_ buffer: ByteBuffer) throws(FramingError) {
            guard buffer.readableBytes >= Frame.headerSize else { return nil }
            // One look at the bytes rather than three reads, each checking the buffer on its own.
            let (length, stream, raw) = buffer.withUnsafeReadableBytes { bytes in
                (
                    UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self)),
                    UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)),
                    bytes[8]
                )
            }
            guard let kind = Kind(rawValue: raw) else { throw FramingError("a frame of unknown kind \(raw)") }
            self.length = Int(length)
            self.stream = stream
            self.kind = kind
        }
    }
}

extension ByteBuffer {
    /// Reads the frame `header` begins, if all of it is here.
    mutating func readFrame(_ header: Frame.Header) -> Frame? {
        guard readableBytes >= Frame.headerSize + header.length else { return nil }
        moveReaderIndex(forwardBy: Frame.headerSize)
        // The bytes were just counted.
        return Frame(stream: header.stream, kind: header.kind, payload: readSlice(length: header.length)!)
    }
}

/// A peer that does not speak the framing; the connection is closed.
struct FramingError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension ByteBufferAllocator {
    /// A frame with its header, the payload written by `body`.
    func frame(stream: UInt32, kind: Frame.Kind, capacity: Int = 64, _ body: (inout ByteBuffer) -> Void = { _ in })
        -> ByteBuffer
    {
        var buffer = buffer(capacity: Frame.headerSize + capacity)
        buffer.writeFrame(stream: stream, kind: kind, body)
        return buffer
    }
}

extension ByteBuffer {
    /// Appends a frame: its header, then the payload `body` writes (several frames can share
    /// one buffer, and one write).
    mutating func writeFrame(stream: UInt32, kind: Frame.Kind, _ body: (inout ByteBuffer) -> Void = { _ in }) {
        let start = writerIndex
        writeInteger(UInt32(0))
        writeInteger(stream)
        writeInteger(kind.rawValue)
        body(&self)
        setInteger(UInt32(writerIndex - start - Frame.headerSize), at: start)
    }
}

extension ByteBuffer {
    mutating func writeShortString(_ text: String) {
        writeInteger(UInt32(text.utf8.count))
        writeString(text)
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
