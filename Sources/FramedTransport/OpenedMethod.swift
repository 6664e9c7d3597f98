import Foundation
import GRPCCore
import NIOCore

/// A method path as an open frame names it, and what the transport found for it. A class, kept
/// as the connection's last method: each call's open frame takes it with one retain, where
/// copying its fields (two strings, a descriptor, a handler's closures) cost about a thousand
/// instructions a call.
final class OpenedMethod {
    /// The path's UTF-8 bytes, as they come.
    let bytes: [UInt8]
    let path: String
    /// Where the service's name ends.
    let slash: String.Index
    /// The method's direct handler, if it has one (``DirectMethods``).
    let direct: (descriptor: MethodDescriptor, handler: DirectMethods.Handler)?

    init(
        bytes: [UInt8], path: String, slash: String.Index,
        direct: (descriptor: MethodDescriptor, handler: DirectMethods.Handler)?
    ) {
        self.bytes = bytes
        self.path = path
        self.slash = slash
        self.direct = direct
    }
}

extension ByteBuffer {
    /// Whether the readable bytes begin with `bytes` as a short string (their count, then them).
    func startsWith(shortString bytes: [UInt8]) -> Bool {
        guard readableBytes >= 4 + bytes.count, getInteger(at: readerIndex, as: UInt32.self) == UInt32(bytes.count)
        else { return false }
        // Both `!`s: `readable` holds at least 4 bytes, and `bytes` a path, which is never empty.
        return withUnsafeReadableBytes { readable in
            bytes.withUnsafeBytes { memcmp(readable.baseAddress! + 4, $0.baseAddress!, bytes.count) == 0 }
        }
    }
}
