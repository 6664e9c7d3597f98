/// One attribute's value as a row hands it over, before a ``Value`` is made of it: what a sink
/// that writes bytes (the daemon's answer) takes without making a string or a table per value
/// (``ObjectRowSink/add(id:version:shape:toOne:cells:)``). The bytes of `text` are valid only
/// while the sink's `add` runs.
public enum RowCell {
    case null
    case int(Int64)
    case double(Double)
    case bool(Bool)
    /// A date, as microseconds since 1970 (``Timestamp``).
    case date(microseconds: Int64)
    /// A string attribute's UTF-8 bytes, checked to be ASCII (so valid UTF-8) by the reader.
    case text(UnsafeBufferPointer<UInt8>)
    /// Any other value, made as it is for a snapshot.
    case value(Value)

    /// The value this cell holds.
    public var value: Value {
        switch self {
        case .null: .null
        case .int(let number): .int(number)
        case .double(let number): .double(number)
        case .bool(let flag): .bool(flag)
        case .date(let microseconds): .date(Timestamp(microsecondsSince1970: microseconds))
        case .text(let bytes): .string(String(decoding: bytes, as: UTF8.self))
        case .value(let value): value
        }
    }
}

/// Bytes checked for being text without decoding them.
public enum UTF8Bytes {
    /// Whether every byte is ASCII (below 0x80), eight at a time.
    @inlinable public static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let raw = UnsafeRawBufferPointer(bytes)
        while index + 8 <= bytes.count {
            if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            index += 8
        }
        while index < bytes.count {
            if bytes[index] >= 0x80 { return false }
            index += 1
        }
        return true
    }
}
