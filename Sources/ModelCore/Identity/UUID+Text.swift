import Foundation

extension UUID {
    /// The lowercase text form, `0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9`: how modeld writes UUIDs
    /// in URIs, on the wire and in SQLite. Written digit by digit (on Linux, Foundation's
    /// `uuidString` goes through a C format call, a cost every object URI paid).
    public var lowercasedText: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
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
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Parses the 8-4-4-4-12 hexadecimal form, in either case, and nothing else (what
    /// `UUID(uuidString:)` accepts, without its C scan call).
    public init?(text: some StringProtocol) {
        guard text.utf8.count == 36 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var high: UInt8?
        for (position, character) in text.utf8.enumerated() {
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard character == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        self.init(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                         bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
