import Foundation

/// Decimals are stored as their canonical text; this reads them back and orders them by value,
/// for the `modeld_decimal` collation. Plain `[-]digits[.digits]` text (what
/// `Decimal.canonicalText` writes) compares digit by digit without parsing; anything else
/// (an exponent, say) is parsed as a `Decimal`.
enum DecimalText {
    private static let posix = Locale(identifier: "en_US_POSIX")

    /// The decimal that `text` spells, or nil.
    static func parse(_ text: String) -> Decimal? {
        Decimal(string: text, locale: posix)
    }

    /// Orders two decimal texts by value: negative, zero or positive like `memcmp`. Text that is
    /// not a number sorts after every number, by its bytes.
    static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int32 {
        if let x = Plain(a), let y = Plain(b) { return x.compare(y) }
        let x = parse(String(decoding: a, as: UTF8.self)), y = parse(String(decoding: b, as: UTF8.self))
        switch (x, y) {
        case let (x?, y?): return x < y ? -1 : (y < x ? 1 : 0)
        case (nil, .some): return 1
        case (.some, nil): return -1
        case (nil, nil): return a.lexicographicallyPrecedes(b) ? -1 : (b.lexicographicallyPrecedes(a) ? 1 : 0)
        }
    }

    /// `[-]digits[.digits]` split into sign, integer digits without leading zeros and fraction
    /// digits without trailing zeros.
    private struct Plain {
        var negative: Bool
        var integer: UnsafeRawBufferPointer.SubSequence
        var fraction: UnsafeRawBufferPointer.SubSequence

        init?(_ bytes: UnsafeRawBufferPointer) {
            var start = bytes.startIndex
            negative = start < bytes.endIndex && bytes[start] == UInt8(ascii: "-")
            if negative || (start < bytes.endIndex && bytes[start] == UInt8(ascii: "+")) { start += 1 }
            var dot = bytes.endIndex
            var sawDigit = false
            for i in start..<bytes.endIndex {
                let byte = bytes[i]
                if byte == UInt8(ascii: "."), dot == bytes.endIndex {
                    dot = i
                } else if byte >= 0x30, byte <= 0x39 {
                    sawDigit = true
                } else {
                    return nil
                }
            }
            guard sawDigit else { return nil }
            var intStart = start
            while intStart < dot, bytes[intStart] == 0x30 { intStart += 1 }
            integer = bytes[intStart..<dot]
            var fracEnd = bytes.endIndex
            let fracStart = dot == bytes.endIndex ? dot : dot + 1
            while fracEnd > fracStart, bytes[fracEnd - 1] == 0x30 { fracEnd -= 1 }
            fraction = bytes[fracStart..<fracEnd]
            if integer.isEmpty, fraction.isEmpty { negative = false }
        }

        func compare(_ other: Plain) -> Int32 {
            if negative != other.negative { return negative ? -1 : 1 }
            let magnitude = compareMagnitude(other)
            return negative ? -magnitude : magnitude
        }

        private func compareMagnitude(_ other: Plain) -> Int32 {
            if integer.count != other.integer.count { return integer.count < other.integer.count ? -1 : 1 }
            for (x, y) in zip(integer, other.integer) where x != y { return x < y ? -1 : 1 }
            for (x, y) in zip(fraction, other.fraction) where x != y { return x < y ? -1 : 1 }
            if fraction.count != other.fraction.count { return fraction.count < other.fraction.count ? -1 : 1 }
            return 0
        }
    }
}
