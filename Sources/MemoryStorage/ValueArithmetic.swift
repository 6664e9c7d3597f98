import ModelCore

/// Arithmetic in predicates, as docs/storage-semantics.md defines it: int op int is int (a
/// result that overflows becomes a double), except `/`, which is always a double; int with double
/// is double; division by zero, and a NaN result, is nil; nil in, nil out. `date ± seconds` is a date,
/// `round(micros + seconds × 1e6)` half away from zero; `date − date` is seconds as a double.
enum ValueArithmetic {
    static func apply(_ op: ArithmeticOperator, _ lhs: Value, _ rhs: Value) -> Value {
        switch (lhs, rhs) {
        case (.null, _), (_, .null):
            return .null
        case (.int(let a), .int(let b)):
            return integer(op, a, b)
        case (.date(let t), .int), (.date(let t), .double):
            guard op == .add || op == .subtract, let seconds = rhs.numericValue else { return .null }
            return shifted(t, by: op == .add ? seconds : -seconds)
        case (.int, .date(let t)), (.double, .date(let t)):
            guard op == .add, let seconds = lhs.numericValue else { return .null }
            return shifted(t, by: seconds)
        case (.date(let a), .date(let b)):
            guard op == .subtract else { return .null }
            let (difference, overflow) = a.microsecondsSince1970.subtractingReportingOverflow(b.microsecondsSince1970)
            let micros =
                overflow ? Double(a.microsecondsSince1970) - Double(b.microsecondsSince1970) : Double(difference)
            return .double(micros / 1_000_000)
        default:
            guard let a = lhs.numericValue, let b = rhs.numericValue else { return .null }
            return floating(op, a, b)
        }
    }

    private static func integer(_ op: ArithmeticOperator, _ a: Int64, _ b: Int64) -> Value {
        let result: (partialValue: Int64, overflow: Bool)
        switch op {
        case .add: result = a.addingReportingOverflow(b)
        case .subtract: result = a.subtractingReportingOverflow(b)
        case .multiply: result = a.multipliedReportingOverflow(by: b)
        case .divide: return floating(.divide, Double(a), Double(b))
        }
        return result.overflow ? floating(op, Double(a), Double(b)) : .int(result.partialValue)
    }

    /// Double arithmetic; a NaN result (`inf - inf`, `inf * 0`, `inf / inf`) is nil, as in
    /// SQLite and on PostgreSQL (`modeld_arith`).
    private static func floating(_ op: ArithmeticOperator, _ a: Double, _ b: Double) -> Value {
        let result: Double
        switch op {
        case .add: result = a + b
        case .subtract: result = a - b
        case .multiply: result = a * b
        case .divide:
            guard b != 0 else { return .null }
            result = a / b
        }
        return result.isNaN ? .null : .double(result)
    }

    private static func shifted(_ t: Timestamp, by seconds: Double) -> Value {
        let micros = (Double(t.microsecondsSince1970) + seconds * 1_000_000).rounded(.toNearestOrAwayFromZero)
        guard let exact = Int64(exactly: micros) else { return .null }
        return .date(Timestamp(microsecondsSince1970: exact))
    }
}
