import Foundation

extension UUID {
    /// Whether `other` is the same UUID, its 16 bytes compared as two words: `==` put each
    /// UUID's bytes together one by one, 80 instructions a comparison (every URI a daemon writes
    /// and a client reads compares its store's).
    @inline(__always)
    package func isSame(as other: UUID) -> Bool {
        withUnsafeBytes(of: uuid) { mine in
            withUnsafeBytes(of: other.uuid) { theirs in
                mine.loadUnaligned(as: UInt64.self) == theirs.loadUnaligned(as: UInt64.self)
                    && mine.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                        == theirs.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            }
        }
    }

    /// The lowercase text form, `0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9`: how modeld writes UUIDs
    /// in URIs, on the wire and in SQLite. Written digit by digit (on Linux, Foundation's
    /// `uuidString` goes through a C format call, a cost every object URI paid).
    public var lowercasedText: String {
        String(unsafeUninitializedCapacity: 36) { writeLowercased(into: $0) }
    }

    /// Writes ``lowercasedText``'s 36 bytes at the start of `text`; returns 36.
    package func writeLowercased(into text: UnsafeMutableBufferPointer<UInt8>) -> Int {
        withUnsafeBytes(of: uuid) { bytes in
            var position = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[position] = UInt8(ascii: "-")
                    position += 1
                }
                text[position] = Self.hexDigits[Int(byte >> 4)]
                text[position + 1] = Self.hexDigits[Int(byte & 0x0f)]
                position += 2
            }
            return position
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Parses the 8-4-4-4-12 hexadecimal form, in either case, and nothing else (what
    /// `UUID(uuidString:)` accepts, without its C scan call).
    public init?(text: some StringProtocol) {
        let parsed =
            text.utf8.withContiguousStorageIfAvailable { UUID(utf8: $0) }
            ?? Array(text.utf8).withUnsafeBufferPointer { UUID(utf8: $0) }
        guard let parsed else { return nil }
        self = parsed
    }

    /// ``init(text:)`` over the text's UTF-8 bytes.
    init?(utf8 text: UnsafeBufferPointer<UInt8>) {
        guard text.count == 36 else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &value) { bytes -> Bool in
            var position = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    guard text[position] == UInt8(ascii: "-") else { return false }
                    position += 1
                }
                guard let high = Self.nibble(text[position]), let low = Self.nibble(text[position + 1]) else {
                    return false
                }
                bytes[index] = high << 4 | low
                position += 2
            }
            return true
        }
        guard parsed else { return nil }
        self.init(uuid: value)
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
