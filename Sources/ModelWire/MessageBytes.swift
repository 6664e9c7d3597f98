import GRPCCore

/// A message as its bytes, neither read nor written: for a call whose messages are written and
/// read by hand (`Apply`'s, ``ApplyCall``, ``ApplyRequestFields``, ``SaveResponse``) over
/// GRPCCore, on either side.
public struct MessageBytes: MessageSerializer, MessageDeserializer {
    public init() {}

    public func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes {
        Bytes(message)
    }

    public func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
        serializedMessageBytes.withUnsafeBytes { Array($0) }
    }
}
