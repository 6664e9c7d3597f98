/// The text form of predicates, in NSPredicate's syntax. ``PredicateParser`` reads back exactly
/// what this writes: for any tree the parser produced, parsing its description gives the same tree.
///
/// Literals that are not plain strings, numbers, booleans or nil print as casts, so their type
/// survives the round trip: `CAST("2026-01-31T00:00:00.000000Z", "date")`,
/// `CAST("modeld://…/Trip/p1", "object")`.
extension Predicate: CustomStringConvertible {
    public var description: String { PredicatePrinter.print(self, nested: false) }
}

extension Expression: CustomStringConvertible {
    public var description: String { PredicatePrinter.print(self) }
}

enum PredicatePrinter {
    static func print(_ predicate: Predicate, nested: Bool) -> String {
        switch predicate {
        case .constant(let value):
            return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .comparison(let c):
            let modifier = c.modifier == .direct ? "" : c.modifier.rawValue + " "
            return "\(modifier)\(print(c.lhs)) \(c.op.rawValue)\(c.options.suffix) \(print(c.rhs))"
        case .and(let parts):
            let text = parts.map { print($0, nested: true) }.joined(separator: " AND ")
            return nested ? "(\(text))" : text
        case .or(let parts):
            let text = parts.map { print($0, nested: true) }.joined(separator: " OR ")
            return nested ? "(\(text))" : text
        case .not(let inner):
            return "NOT (\(print(inner, nested: false)))"
        }
    }

    static func print(_ expression: Expression) -> String {
        switch expression {
        case .keyPath(let path):
            return path.description
        case .literal(let value):
            return literal(value)
        case .object(let id):
            return "CAST(\(quote(id.uriRepresentation)), \"object\")"
        case .list(let items):
            return "{" + items.map(print).joined(separator: ", ") + "}"
        case .collection(let function, let path, let attribute):
            return "\(path).\(function.rawValue)" + (attribute.map { ".\($0)" } ?? "")
        case .subqueryCount(let collection, let variable, let predicate):
            return "SUBQUERY(\(collection), $\(variable), \(print(predicate, nested: false))).@count"
        case .arithmetic(let op, let a, let b):
            return "(\(print(a)) \(op.rawValue) \(print(b)))"
        case .entityName(let variable):
            return variable.map { "$\($0).@entity" } ?? "@entity"
        }
    }

    static func literal(_ value: Value) -> String {
        switch value {
        case .null: return "nil"
        case .string(let s): return quote(s)
        case .int(let i): return String(i)
        case .double(let d):
            guard d.isFinite else { return "CAST(\(quote("\(d)")), \"double\")" }
            return "\(d)"
        case .bool(let b): return b ? "true" : "false"
        default:
            // Every other type has a canonical text form, and its type name says how to read it.
            return "CAST(\(quote(value.textForm ?? "")), \(quote(value.type?.rawValue ?? "")))"
        }
    }

    /// A double-quoted string with `\"`, `\\`, `\n`, `\r`, `\t` and `\u{…}` escapes.
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
