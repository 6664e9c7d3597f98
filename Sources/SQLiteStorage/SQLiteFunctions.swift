import CSQLite
import Foundation
import ModelCore

/// The SQL functions and the collation modeld registers on every connection, so that SQL gives
/// the very answers ModelCore defines (and the memory backend computes):
///
/// - `modeld_fold(text, options)`: ``TextComparison/fold(_:options:)``.
/// - `modeld_contains/beginswith/endswith/like(text, pattern, options)`: 1 or 0, NULL when
///   either side is NULL.
/// - `modeld_compare(a, b, op)`: two-valued comparison by ``Value/compare(_:_:)`` of numbers where
///   one side is a decimal (text); `op` is an ``ComparisonCode``.
/// - `modeld_date_add(micros, seconds, sign)`: `round(micros + sign × seconds × 1e6)`, half
///   away from zero.
/// - `modeld_f64(text)`, `modeld_unhex(text)`: a double from its bit pattern, a blob from hex,
///   for large `IN` lists passed as JSON.
/// - aggregates `modeld_sum(x, type)`, `modeld_avg(x, type)` over ``NumericAccumulator``.
/// - collation `modeld_decimal`: decimal text by value (``DecimalText``).
enum SQLiteFunctions {
    /// The name of the collation of decimal columns.
    static let decimalCollation = "modeld_decimal"

    /// The `op` argument of `modeld_compare`.
    enum ComparisonCode: Int64 {
        case equal = 0, notEqual, less, lessOrEqual, greater, greaterOrEqual
    }

    /// The `type` argument of `modeld_sum` and `modeld_avg`.
    static func typeCode(_ type: AttributeType) -> Int64 {
        switch type {
        case .int: 0
        case .decimal: 2
        default: 1
        }
    }

    static func register(on db: OpaquePointer) throws(ModelError) {
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
        func scalar(_ name: String, _ arguments: Int32, _ body: ScalarBody) throws(ModelError) {
            let code = sqlite3_create_function_v2(db, name, arguments, flags, nil, body, nil, nil, nil)
            guard code == SQLITE_OK else { throw ModelError.sqlite(code, db: db) }
        }
        try scalar("modeld_fold", 2) { context, _, argv in
            guard let text = argumentText(argv, 0) else { return sqlite3_result_null(context) }
            resultText(context, TextComparison.fold(text, options: StringOptions(rawValue: Int(argumentInt(argv, 1)))))
        }
        try scalar("modeld_contains", 3) { context, _, argv in
            matchOperator(context, argv, .contains) { TextComparison.contains($0, $1, options: $2) }
        }
        try scalar("modeld_beginswith", 3) { context, _, argv in
            matchOperator(context, argv, .prefix) { TextComparison.hasPrefix($0, $1, options: $2) }
        }
        try scalar("modeld_endswith", 3) { context, _, argv in
            matchOperator(context, argv, .suffix) { TextComparison.hasSuffix($0, $1, options: $2) }
        }
        try scalar("modeld_like", 3) { context, _, argv in
            matchText(context, argv) { TextComparison.like($0, $1, options: $2) }
        }
        try scalar("modeld_compare", 3) { context, _, argv in
            let lhs = numericArgument(argv, 0), rhs = numericArgument(argv, 1)
            let op = SQLiteFunctions.ComparisonCode(rawValue: argumentInt(argv, 2)) ?? .equal
            sqlite3_result_int64(context, SQLiteFunctions.compare(lhs, rhs, op) ? 1 : 0)
        }
        try scalar("modeld_date_add", 3) { context, _, argv in
            guard let a = argv?[0], let b = argv?[1], sqlite3_value_type(a) != SQLITE_NULL,
                sqlite3_value_type(b) != SQLITE_NULL
            else {
                return sqlite3_result_null(context)
            }
            let micros = Double(sqlite3_value_int64(a))
            let seconds = sqlite3_value_double(b) * Double(argumentInt(argv, 2))
            let result = (micros + seconds * 1_000_000).rounded(.toNearestOrAwayFromZero)
            guard let exact = Int64(exactly: result) else { return sqlite3_result_null(context) }
            sqlite3_result_int64(context, exact)
        }
        try scalar("modeld_f64", 1) { context, _, argv in
            guard let text = argumentText(argv, 0), let bits = UInt64(text) else { return sqlite3_result_null(context) }
            sqlite3_result_double(context, Double(bitPattern: bits))
        }
        try scalar("modeld_unhex", 1) { context, _, argv in
            guard let text = argumentText(argv, 0), let bytes = SQLiteFunctions.hexBytes(text) else {
                return sqlite3_result_null(context)
            }
            if bytes.isEmpty { return sqlite3_result_zeroblob(context, 0) }
            bytes.withUnsafeBytes {
                sqlite3_result_blob64(context, $0.baseAddress, sqlite3_uint64($0.count), csqlite_transient())
            }
        }
        for (name, final) in [("modeld_sum", sumFinal), ("modeld_avg", averageFinal)] {
            let code = sqlite3_create_function_v2(db, name, 2, flags, nil, nil, accumulateStep, final, nil)
            guard code == SQLITE_OK else { throw ModelError.sqlite(code, db: db) }
        }
        let code = sqlite3_create_collation_v2(
            db, SQLiteFunctions.decimalCollation, SQLITE_UTF8, nil,
            { _, count1, bytes1, count2, bytes2 in
                DecimalText.compare(
                    UnsafeRawBufferPointer(start: bytes1, count: Int(count1)),
                    UnsafeRawBufferPointer(start: bytes2, count: Int(count2)))
            }, nil)
        guard code == SQLITE_OK else { throw ModelError.sqlite(code, db: db) }
    }

    /// The two-valued comparison of the semantics page: with nil on a side, `==` holds when both
    /// are nil, `!=` when one is, nothing else does.
    static func compare(_ lhs: Value, _ rhs: Value, _ op: ComparisonCode) -> Bool {
        if lhs.isNull || rhs.isNull {
            switch op {
            case .equal: return lhs.isNull && rhs.isNull
            case .notEqual: return lhs.isNull != rhs.isNull
            default: return false
            }
        }
        guard let order = Value.compare(lhs, rhs) else { return op == .notEqual }
        switch op {
        case .equal: return order == .orderedSame
        case .notEqual: return order != .orderedSame
        case .less: return order == .orderedAscending
        case .lessOrEqual: return order != .orderedDescending
        case .greater: return order == .orderedDescending
        case .greaterOrEqual: return order != .orderedAscending
        }
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            case 0x41...0x46: c - 0x41 + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

typealias ScalarBody = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void

private func argumentText(_ argv: UnsafeMutablePointer<OpaquePointer?>?, _ index: Int) -> String? {
    guard let value = argv?[index], sqlite3_value_type(value) != SQLITE_NULL, let bytes = sqlite3_value_text(value)
    else { return nil }
    return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
}

private func argumentInt(_ argv: UnsafeMutablePointer<OpaquePointer?>?, _ index: Int) -> Int64 {
    guard let value = argv?[index] else { return 0 }
    return sqlite3_value_int64(value)
}

/// A number as SQL holds it: INTEGER an int, REAL a double, TEXT a decimal.
private func numericArgument(_ argv: UnsafeMutablePointer<OpaquePointer?>?, _ index: Int) -> Value {
    guard let value = argv?[index] else { return .null }
    switch sqlite3_value_type(value) {
    case SQLITE_INTEGER: return .int(sqlite3_value_int64(value))
    case SQLITE_FLOAT: return .double(sqlite3_value_double(value))
    case SQLITE_TEXT: return argumentText(argv, index).flatMap(DecimalText.parse).map(Value.decimal) ?? .null
    default: return .null
    }
}

private func resultText(_ context: OpaquePointer?, _ text: String) {
    var text = text
    text.withUTF8 { buffer in
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            return sqlite3_result_text(context, "", 0, csqlite_transient())
        }
        base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
            sqlite3_result_text64(context, $0, sqlite3_uint64(buffer.count), csqlite_transient(), UInt8(SQLITE_UTF8))
        }
    }
}

private func matchText(
    _ context: OpaquePointer?, _ argv: UnsafeMutablePointer<OpaquePointer?>?,
    _ match: (String, String, StringOptions) -> Bool
) {
    guard let text = argumentText(argv, 0), let pattern = argumentText(argv, 1) else {
        return sqlite3_result_null(context)
    }
    sqlite3_result_int64(context, match(text, pattern, StringOptions(rawValue: Int(argumentInt(argv, 2)))) ? 1 : 0)
}

/// How `CONTAINS`, `BEGINSWITH` and `ENDSWITH` match without options: by UTF-8 bytes, which is
/// what ``TextComparison`` does once there is nothing to fold, without making Swift strings.
enum ByteMatch {
    case contains, prefix, suffix

    func matches(_ text: UnsafeRawBufferPointer, _ needle: UnsafeRawBufferPointer) -> Bool {
        guard needle.count <= text.count else { return false }
        guard let pin = needle.baseAddress, needle.count > 0 else { return true }
        guard let hay = text.baseAddress else { return false }
        switch self {
        case .prefix: return memcmp(hay, pin, needle.count) == 0
        case .suffix: return memcmp(hay + (text.count - needle.count), pin, needle.count) == 0
        case .contains:
            var offset = 0
            let last = text.count - needle.count
            let first = needle[0]
            while offset <= last {
                if text[offset] == first, memcmp(hay + offset, pin, needle.count) == 0 { return true }
                offset += 1
            }
            return false
        }
    }
}

/// A string operator: bytes when no options are given, ``TextComparison`` (folding) otherwise.
private func matchOperator(
    _ context: OpaquePointer?, _ argv: UnsafeMutablePointer<OpaquePointer?>?, _ bytes: ByteMatch,
    _ match: (String, String, StringOptions) -> Bool
) {
    guard argumentInt(argv, 2) == 0 else { return matchText(context, argv, match) }
    guard let a = argv?[0], let b = argv?[1], sqlite3_value_type(a) != SQLITE_NULL, sqlite3_value_type(b) != SQLITE_NULL
    else {
        return sqlite3_result_null(context)
    }
    // sqlite3_value_text before sqlite3_value_bytes, as SQLite asks.
    let textStart = sqlite3_value_text(a), textCount = Int(sqlite3_value_bytes(a))
    let needleStart = sqlite3_value_text(b), needleCount = Int(sqlite3_value_bytes(b))
    let matched = bytes.matches(
        UnsafeRawBufferPointer(start: textStart, count: textStart == nil ? 0 : textCount),
        UnsafeRawBufferPointer(start: needleStart, count: needleStart == nil ? 0 : needleCount))
    sqlite3_result_int64(context, matched ? 1 : 0)
}

/// The state of one `modeld_sum`/`modeld_avg` group, owned through the aggregate context.
private final class AccumulatorBox {
    var accumulator = NumericAccumulator()
    var type: AttributeType = .double
}

private let accumulateStep: ScalarBody = { context, _, argv in
    guard let slot = sqlite3_aggregate_context(context, Int32(MemoryLayout<UnsafeMutableRawPointer?>.size)) else {
        return sqlite3_result_error_nomem(context)
    }
    let pointer = slot.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    let box: AccumulatorBox
    if let existing = pointer.pointee {
        box = Unmanaged<AccumulatorBox>.fromOpaque(existing).takeUnretainedValue()
    } else {
        box = AccumulatorBox()
        box.type = [0: AttributeType.int, 2: .decimal][argumentInt(argv, 1)] ?? .double
        pointer.pointee = Unmanaged.passRetained(box).toOpaque()
    }
    guard let value = argv?[0] else { return }
    switch sqlite3_value_type(value) {
    case SQLITE_NULL: return
    case SQLITE_INTEGER where box.type == .int: box.accumulator.add(.int(sqlite3_value_int64(value)))
    case SQLITE_TEXT where box.type == .decimal:
        if let decimal = argumentText(argv, 0).flatMap(DecimalText.parse) { box.accumulator.add(.decimal(decimal)) }
    default: box.accumulator.add(.double(sqlite3_value_double(value)))
    }
}

/// Takes the group's box out of the aggregate context (nil when no row was stepped).
private func takeBox(_ context: OpaquePointer?) -> AccumulatorBox? {
    guard let slot = sqlite3_aggregate_context(context, 0) else { return nil }
    let pointer = slot.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    guard let raw = pointer.pointee else { return nil }
    pointer.pointee = nil
    return Unmanaged<AccumulatorBox>.fromOpaque(raw).takeRetainedValue()
}

private func resultValue(_ context: OpaquePointer?, _ value: Value) {
    switch value {
    case .int(let v): sqlite3_result_int64(context, v)
    case .double(let v): sqlite3_result_double(context, v)
    case .decimal(let v): resultText(context, v.canonicalText)
    default: sqlite3_result_null(context)
    }
}

private let sumFinal: @convention(c) (OpaquePointer?) -> Void = { context in
    guard let box = takeBox(context) else { return sqlite3_result_null(context) }
    resultValue(context, box.accumulator.sum(as: box.type))
}

private let averageFinal: @convention(c) (OpaquePointer?) -> Void = { context in
    guard let box = takeBox(context) else { return sqlite3_result_null(context) }
    resultValue(context, box.accumulator.average(as: box.type))
}
