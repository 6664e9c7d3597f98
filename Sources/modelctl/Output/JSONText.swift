import Foundation
import ModelCore

/// JSON text written by hand: fast enough for millions of rows, and exact for every value type.
enum JSONText {
    /// A JSON string literal.
    static func string(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20 || c.value == 0x7F || c.value == 0x2028 || c.value == 0x2029:
                out += String(format: "\\u%04x", c.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// A value as JSON: numbers and booleans as themselves; dates as ISO 8601, data as base64,
    /// decimals as strings (to keep every digit), JSON attributes as the string of their text,
    /// non-finite doubles as the strings "inf", "-inf".
    static func value(_ value: Value) -> String {
        switch value {
        case .null: "null"
        case .int(let number): String(number)
        case .double(let number) where number.isFinite: "\(number)"
        case .double(let number): string(number > 0 ? "inf" : "-inf")
        case .bool(let flag): flag ? "true" : "false"
        case .string(let text): string(text)
        default: string(value.textForm ?? "")
        }
    }

    /// A JSON object from keys and JSON texts, in the order given.
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { string($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    static func array(_ items: [String]) -> String {
        "[" + items.joined(separator: ",") + "]"
    }
}
