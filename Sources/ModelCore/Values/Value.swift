import Foundation

/// One attribute value. Every case round-trips exactly through every backend and over the wire:
/// dates are whole microseconds (``Timestamp``), decimals stay decimals, JSON stays its text.
public enum Value: Hashable, Sendable {
    case null
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case date(Timestamp)
    case data(Data)
    case uuid(UUID)
    case url(URL)
    case decimal(Decimal)
    /// JSON text (an encoded `Codable` value, say). Compared and sorted as text.
    case json(String)

    /// The attribute type this value belongs to, or nil for ``null``.
    public var type: AttributeType? {
        switch self {
        case .null: nil
        case .string: .string
        case .int: .int
        case .double: .double
        case .bool: .bool
        case .date: .date
        case .data: .data
        case .uuid: .uuid
        case .url: .url
        case .decimal: .decimal
        case .json: .json
        }
    }

    /// Whether this is ``null``.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A convenience for ``date(_:)`` from a Foundation date, rounded to the microsecond.
    public static func date(_ date: Date) -> Value { .date(Timestamp(date)) }

    /// The value as a Double, for numbers (int, double, decimal) and dates (seconds since 1970).
    public var numericValue: Double? {
        switch self {
        case .int(let v): Double(v)
        case .double(let v): v
        case .decimal(let v): NSDecimalNumber(decimal: v).doubleValue
        default: nil
        }
    }
}

extension Value {
    /// Whether this value, a conversion of `original` (``converted(to:)``), is not `original`
    /// as it was: of another type, or a zero whose sign the conversion dropped. Most
    /// conversions give their value back, and a table of values can then be kept as it is.
    public func isChanged(from original: Value) -> Bool {
        if case .double(let new) = self, case .double(let old) = original { return new.bitPattern != old.bitPattern }
        return type != original.type
    }
}

extension Value {
    /// This value converted to `type` where the conversion loses nothing (an int for a double
    /// attribute, an ISO 8601 string for a date…), or an error naming what was expected.
    /// ``null`` converts to any type; whether null is allowed is the schema's business.
    ///
    /// Doubles are checked on the way in, whatever the target: NaN is refused (SQLite would keep
    /// it as NULL, and it equals nothing, itself included), and negative zero becomes zero
    /// (SQLite keeps no sign on zero), so every backend stores and returns the same value.
    public func converted(to type: AttributeType) throws(ModelError) -> Value {
        if case .double(let d) = self {
            if d.isNaN {
                throw ModelError(
                    .typeMismatch, "expected a value of type \(type.rawValue), got NaN, which no store can keep",
                    context: ["expected": type.rawValue])
            }
            if d == 0, d.sign == .minus { return try Value.double(0).converted(to: type) }
        }
        if self.type == type || isNull { return self }
        switch (self, type) {
        case (.int(let v), .double) where Double(exactly: v) != nil:
            return .double(Double(v))
        case (.int(let v), .decimal):
            return .decimal(Decimal(v))
        case (.double(let v), .int):
            // Every whole double an Int64 holds, -2^63 included (2^63 is not one).
            if let whole = Int64(exactly: v) { return .int(whole) }
        case (.double(let v), .decimal) where v.isFinite:
            if let decimal = Decimal(string: "\(v)", locale: Locale(identifier: "en_US_POSIX")) {
                return .decimal(decimal)
            }
        case (.string(let text), _):
            // Checked as any double is: the text of a NaN is refused as NaN itself is.
            if let value = Value(parsing: text, as: type) { return try value.converted(to: type) }
        case (.int(let v), .bool) where v == 0 || v == 1:
            return .bool(v == 1)
        default:
            break
        }
        throw ModelError(
            .typeMismatch, "expected a value of type \(type.rawValue), got \(self.debugText)",
            context: ["expected": type.rawValue])
    }

    /// Parses the text form of a value of `type` (the form ``textForm`` prints), or nil.
    public init?(parsing text: String, as type: AttributeType) {
        switch type {
        case .string:
            self = .string(text)
        case .int:
            guard let v = Int64(text) else { return nil }
            self = .int(v)
        case .double:
            // NaN is no value a store keeps; a number too large for a double is refused rather
            // than made infinite (infinity is written "inf").
            guard let v = Double(text), !text.isEmpty, !v.isNaN else { return nil }
            if v.isInfinite, !["inf", "infinity"].contains(text.lowercased().trimmingCharacters(in: ["+", "-"])) {
                return nil
            }
            self = .double(v)
        case .bool:
            switch text.lowercased() {
            case "true", "yes", "1": self = .bool(true)
            case "false", "no", "0": self = .bool(false)
            default: return nil
            }
        case .date:
            guard let t = Timestamp(iso8601: text) else { return nil }
            self = .date(t)
        case .data:
            guard let d = Data(base64Encoded: text) else { return nil }
            self = .data(d)
        case .uuid:
            guard let u = UUID(text: text) else { return nil }
            self = .uuid(u)
        case .url:
            guard let u = URL(string: text), u.scheme != nil else { return nil }
            self = .url(u)
        case .decimal:
            guard Self.isDecimalText(text),
                let d = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
            else { return nil }
            self = .decimal(d)
        case .json:
            guard let bytes = text.data(using: .utf8),
                (try? JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed])) != nil
            else { return nil }
            self = .json(text)
        }
    }

    /// The canonical text of the value: what ``init(parsing:as:)`` reads back to the same value.
    /// Dates are ISO 8601 with microseconds, data is base64, null is nil.
    public var textForm: String? {
        switch self {
        case .null: nil
        case .string(let v): v
        case .int(let v): String(v)
        case .double(let v): "\(v)"
        case .bool(let v): v ? "true" : "false"
        case .date(let v): v.iso8601
        case .data(let v): v.base64EncodedString()
        case .uuid(let v): v.lowercasedText
        case .url(let v): v.absoluteString
        case .decimal(let v): v.canonicalText
        case .json(let v): v
        }
    }

    /// A short description for error messages: the type and the value.
    public var debugText: String {
        guard let type, let text = textForm else { return "nil" }
        let shown = text.count > 60 ? String(text.prefix(57)) + "..." : text
        return "\(type.rawValue) \"\(shown)\""
    }

    /// The most significant digits a decimal keeps (Foundation's `Decimal`): a text with more
    /// would be cut, not rounded, so it is refused.
    public static let maximumDecimalDigits = 38

    /// Whether `text` is a plain decimal number: `[+-]digits[.digits][(e|E)[+-]digits]`, with at
    /// least one digit before the exponent and at most ``maximumDecimalDigits`` significant ones
    /// (from the first digit that is not zero to the last). Foundation's reader would otherwise
    /// take "1.2.3" as 1.2, and cut the digits past its 38th.
    static func isDecimalText(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        var significant = 0, zerosSinceNonZero = 0
        func digits() -> Int {
            let run = bytes.prefix { $0 >= 0x30 && $0 <= 0x39 }
            for digit in run {
                if digit != 0x30 {
                    significant += (significant > 0 ? zerosSinceNonZero : 0) + 1
                    zerosSinceNonZero = 0
                } else if significant > 0 {
                    zerosSinceNonZero += 1
                }
            }
            bytes = bytes.dropFirst(run.count)
            return run.count
        }
        if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        var mantissaDigits = digits()
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            mantissaDigits += digits()
        }
        guard mantissaDigits > 0, significant <= maximumDecimalDigits else { return false }
        if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                bytes = bytes.dropFirst()
            }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }
}

extension Decimal {
    /// The decimal's text in the POSIX locale: `-12.5`, `0.001`.
    public var canonicalText: String {
        var copy = self
        return NSDecimalString(&copy, Locale(identifier: "en_US_POSIX"))
    }
}
