import Foundation
import FramedTransport
import GRPCCore
import NIOCore
import NIOHPACK

/// A gRPC call's request headers on HTTP/2, checked as gRPC's HTTP/2 protocol asks
/// (`PROTOCOL-HTTP2.md`) and as grpc-swift's server checks them.
struct HTTP2Request {
    /// The method's path without its leading slash (`modeld.v1.DaemonService/Status`), as
    /// ``DirectMethods`` names methods.
    let method: String
    let headers: HPACKHeaders

    /// Whether the client set a deadline (`grpc-timeout`).
    var hasDeadline: Bool { headers.contains(name: "grpc-timeout") }

    /// The method as GRPCCore names it (a path without a slash names no method of any service).
    var descriptor: MethodDescriptor {
        guard let slash = method.utf8.lastIndex(of: UInt8(ascii: "/")) else {
            return MethodDescriptor(fullyQualifiedService: "", method: method)
        }
        return MethodDescriptor(
            fullyQualifiedService: String(method[..<slash]), method: String(method[method.index(after: slash)...]))
    }

    /// The headers as GRPCCore's metadata: every header, `-bin` ones decoded from base64, as
    /// grpc-swift's transport hands them over, except the caller's credentials, which only the
    /// transport sets (``PeerCredentials/current``).
    var metadata: Metadata {
        var metadata = Metadata()
        metadata.reserveCapacity(headers.count)
        for (name, value, _) in headers where !name.hasPrefix("modeld-peer-") {
            if name.hasSuffix("-bin"), let bytes = Data(base64Encoded: Self.padded(value)) {
                metadata.addBinary(Array(bytes), forKey: name)
            } else {
                metadata.addString(value, forKey: name)
            }
        }
        return metadata
    }

    /// gRPC sends base64 without padding; Foundation wants it.
    private static func padded(_ value: String) -> String {
        let remainder = value.utf8.count % 4
        return remainder == 0 ? value : value + String(repeating: "=", count: 4 - remainder)
    }

    /// Why a request cannot be a call: the headers that answer it.
    struct Refusal: Error {
        var headers: HPACKHeaders
    }

    static func parse(_ headers: HPACKHeaders) -> Result<HTTP2Request, Refusal> {
        guard let contentType = headers.first(name: "content-type"), contentType.hasPrefix("application/grpc") else {
            // Not gRPC at all: HTTP's Unsupported Media Type, as grpc-swift answers.
            return .failure(Refusal(headers: [":status": "415"]))
        }
        guard headers.first(name: ":method") == "POST" else {
            return .failure(
                refusal(.invalidArgument, ":method header is expected to be present and have a value of \"POST\"."))
        }
        guard let path = headers.first(name: ":path"), path.utf8.first == UInt8(ascii: "/") else {
            return .failure(refusal(.invalidArgument, "No :path header naming a method has been set."))
        }
        let encodings = headers[canonicalForm: "grpc-encoding"]
        if let encoding = encodings.first, encodings.count > 1 || encoding != "identity" {
            var refused = refusal(
                .unimplemented,
                "\(encoding) compression is not supported; supported algorithms are listed in grpc-accept-encoding")
            refused.headers.add(name: "grpc-accept-encoding", value: "identity")
            return .failure(refused)
        }
        if let timeout = headers.first(name: "grpc-timeout"), !isTimeout(timeout) {
            // GRPCCore ignores a timeout it cannot read, so the call would run without one.
            return .failure(
                refusal(
                    .invalidArgument,
                    "grpc-timeout '\(timeout.prefix(40))' is not a timeout: it is 1 to 8 digits and a unit, H, M, S, m, u or n (gRPC's PROTOCOL-HTTP2.md)"
                ))
        }
        return .success(HTTP2Request(method: String(path.dropFirst()), headers: headers))
    }

    /// Whether `value` is a `grpc-timeout` as gRPC's HTTP/2 protocol writes one: 1 to 8 ASCII
    /// digits, then one of the units.
    static func isTimeout(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard (2...9).contains(bytes.count), let unit = bytes.last, "HMSmun".utf8.contains(unit) else { return false }
        return bytes.dropLast().allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// A refusal with modeld's error metadata, as every error a client can cause carries.
    private static func refusal(_ code: Status.Code, _ message: String) -> Refusal {
        let status = Status(code: code, message: message)
        return Refusal(headers: .trailers(status: status, metadata: ErrorMetadata.metadata(of: status)))
    }
}

extension HPACKHeaders {
    /// A call's status and trailing metadata as trailers; with `only` (the default), a whole
    /// answer of trailers alone (`:status` and `content-type` first).
    static func trailers(status: Status, metadata: Metadata = [:], only: Bool = true) -> HPACKHeaders {
        var headers: HPACKHeaders = only ? [":status": "200", "content-type": "application/grpc"] : [:]
        headers.add(name: "grpc-status", value: String(status.code.rawValue))
        if !status.message.isEmpty {
            headers.add(name: "grpc-message", value: HTTP2RequestGuard.percentEncoded(status.message))
        }
        headers.add(metadata)
        return headers
    }

    /// Adds `metadata`'s entries, names lowercased and binary values in base64.
    mutating func add(_ metadata: Metadata) {
        for (key, value) in metadata {
            switch value {
            case .string(let text): add(name: key.lowercased(), value: text)
            case .binary(let bytes): add(name: key.lowercased(), value: Data(bytes).base64EncodedString())
            }
        }
    }
}

/// Reads gRPC's length-prefixed messages out of a stream's DATA frames: a flag byte (0, as no
/// compression is agreed), a 4-byte big-endian length, then the message.
struct GRPCMessageReader {
    private var buffer: ByteBuffer?

    mutating func append(_ bytes: ByteBuffer) {
        if buffer == nil || buffer?.readableBytes == 0 {
            buffer = bytes
        } else {
            var bytes = bytes
            buffer?.writeBuffer(&bytes)
        }
    }

    /// The next whole message, or nil until more has come.
    mutating func next(maximumSize: Int) throws(RPCError) -> [UInt8]? {
        guard let buffer, buffer.readableBytes >= 5,
            let (flag, length) = buffer.getMultipleIntegers(at: buffer.readerIndex, as: (UInt8, UInt32).self)
        else { return nil }
        guard flag == 0 else {
            throw RPCError(
                code: .internalError,
                message: flag == 1
                    ? "a message arrived compressed, but the call named no compression"
                    : "a message's first byte is \(flag), which gRPC does not define (0: not compressed; 1: compressed)"
            )
        }
        guard Int(length) <= maximumSize else {
            throw RPCError(
                code: .resourceExhausted,
                message: "the request is \(length) bytes, over modeld's maximum message size of \(maximumSize) bytes")
        }
        guard buffer.readableBytes >= 5 + Int(length) else { return nil }
        self.buffer?.moveReaderIndex(forwardBy: 5)
        return self.buffer?.readBytes(length: Int(length))
    }

    /// `message` with its prefix, as a DATA frame's payload.
    static func framed(_ message: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 5 + message.count)
        buffer.writeMultipleIntegers(UInt8(0), UInt32(message.count))
        buffer.writeBytes(message)
        return buffer
    }
}
