import Foundation

/// modeld's framing, written and read by hand: a 9-byte header (payload length, stream, kind)
/// and the payload (docs/daemon.md).
public enum FramedBytes {
    public static let headerSize = 9

    public enum Kind: UInt8, Sendable {
        case open = 1, message = 2, end = 3, cancel = 4, metadata = 5, status = 6
    }

    public static func header(length: Int, stream: UInt32, kind: Kind) -> [UInt8] {
        bigEndian(UInt32(length)) + bigEndian(stream) + [kind.rawValue]
    }

    public static func frame(stream: UInt32, kind: Kind, _ payload: [UInt8] = []) -> [UInt8] {
        header(length: payload.count, stream: stream, kind: kind) + payload
    }

    /// An open frame for `path` with no metadata.
    public static func open(stream: UInt32, path: String) -> [UInt8] {
        let name = Array(path.utf8)
        return frame(stream: stream, kind: .open, bigEndian(UInt32(name.count)) + name + bigEndian(UInt32(0)))
    }

    /// A unary or server-streaming call: open, the request, end.
    public static func call(stream: UInt32, path: String, request: [UInt8]) -> [UInt8] {
        open(stream: stream, path: path) + frame(stream: stream, kind: .message, request)
            + frame(stream: stream, kind: .end)
    }

    /// The statuses (code and message) of the whole frames in `bytes`, by stream.
    public static func statuses(in bytes: [UInt8]) -> [UInt32: (code: Int, message: String)] {
        var found: [UInt32: (Int, String)] = [:]
        forEachFrame(in: bytes) { stream, kind, payload in
            guard kind == Kind.status.rawValue, payload.count >= 5 else { return }
            let start = payload.lowerBound
            let count = Int(integer(bytes, at: start + 1))
            if start + 5 + count <= bytes.count {
                found[stream] = (
                    Int(bytes[start]), String(decoding: bytes[(start + 5)..<(start + 5 + count)], as: UTF8.self)
                )
            }
        }
        return found
    }

    /// The payloads of the message frames in `bytes`, by stream, in order.
    public static func messages(in bytes: [UInt8]) -> [UInt32: [[UInt8]]] {
        var found: [UInt32: [[UInt8]]] = [:]
        forEachFrame(in: bytes) { stream, kind, payload in
            if kind == Kind.message.rawValue { found[stream, default: []].append(Array(bytes[payload])) }
        }
        return found
    }

    /// Calls `body` with the stream, kind and payload's range of each whole frame in `bytes`.
    private static func forEachFrame(in bytes: [UInt8], _ body: (UInt32, UInt8, Range<Int>) -> Void) {
        var offset = 0
        while offset + headerSize <= bytes.count {
            let length = Int(integer(bytes, at: offset)), stream = integer(bytes, at: offset + 4)
            guard offset + headerSize + length <= bytes.count else { break }
            body(stream, bytes[offset + 8], (offset + headerSize)..<(offset + headerSize + length))
            offset += headerSize + length
        }
    }

    private static func integer(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}

/// HTTP/2 written by hand (RFC 9113): a client's connection preface and one gRPC call on stream 1,
/// for tests and the bench that play a client that stops halfway or never reads.
public enum HTTP2Bytes {
    /// The preface, an empty SETTINGS frame, the call's HEADERS (literal fields, no Huffman
    /// coding), and a DATA frame with a message prefix announcing `announced` bytes followed by
    /// `message` (the whole message when `announced` is its size).
    public static func call(path: String, message: [UInt8], announced: Int? = nil, endsStream: Bool = false) -> [UInt8]
    {
        preface + stream(1, path: path, messages: [message], announced: announced, endsStream: endsStream)
    }

    /// The connection preface and an empty SETTINGS frame.
    public static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + frame(type: 4, flags: 0, stream: 0, [])

    /// A call on stream `stream`: its HEADERS (a gRPC call's, with `headers` replacing or adding
    /// to them; literal fields, no Huffman coding) and a DATA frame of `messages`, each with its
    /// prefix (`flag`, then the length: `announced` for the last when given).
    public static func stream(
        _ stream: UInt32, path: String, headers extra: [(String, String)] = [], messages: [[UInt8]],
        announced: Int? = nil, flag: UInt8 = 0, endsStream: Bool = true
    ) -> [UInt8] {
        var fields = [
            (":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost"),
            ("content-type", "application/grpc"), ("te", "trailers"),
        ]
        // Replaced where they stand (pseudo-headers come first), or added at the end.
        for (name, value) in extra {
            if let index = fields.firstIndex(where: { $0.0 == name }) {
                fields[index].1 = value
            } else {
                fields.append((name, value))
            }
        }
        var headers: [UInt8] = []
        for (name, value) in fields {
            // A literal header field without indexing, new name (RFC 7541 6.2.2).
            headers +=
                [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
        }
        var data: [UInt8] = []
        for (index, message) in messages.enumerated() {
            let length = index == messages.count - 1 ? announced ?? message.count : message.count
            data += [flag] + FramedBytes.bigEndian(UInt32(length)) + message
        }
        return frame(type: 1, flags: 0x4, stream: stream, headers)
            + frame(type: 0, flags: endsStream ? 0x1 : 0, stream: stream, data)
    }

    /// A frame: 24-bit length, type, flags, stream, payload.
    public static func frame(type: UInt8, flags: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        Array(FramedBytes.bigEndian(UInt32(payload.count)).dropFirst()) + [type, flags] + FramedBytes.bigEndian(stream)
            + payload
    }
}
