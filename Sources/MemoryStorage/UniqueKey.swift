import Foundation
import ModelCore

/// The values of one unique constraint of one object, hashable so that equal keys meet in one
/// bucket. Values equal by `Value.compare` always give equal keys (strings hash their UTF-8 bytes,
/// numbers their value as a double); a bucket may still hold unequal values, so a match is
/// confirmed with `Value.compare`.
struct UniqueKey: Hashable, Sendable {
    private enum Part: Hashable, Sendable {
        case bytes([UInt8])
        case number(UInt64)
        case micros(Int64)
        case data(Data)
        case bool(Bool)
    }

    private let parts: [Part]

    /// The key of `values`, or nil when a part is nil (a key with a nil part never conflicts).
    init?(_ values: [Value]) {
        var parts: [Part] = []
        for value in values {
            switch value {
            case .null: return nil
            case .string(let s), .json(let s): parts.append(.bytes(Array(s.utf8)))
            case .url(let u): parts.append(.bytes(Array(u.absoluteString.utf8)))
            case .uuid(let u): parts.append(.bytes(Array(u.uuidString.lowercased().utf8)))
            case .int, .double, .decimal:
                let number = value.numericValue ?? 0
                parts.append(.number(number.isNaN ? Double.nan.bitPattern : (number == 0 ? 0 : number.bitPattern)))
            case .date(let t): parts.append(.micros(t.microsecondsSince1970))
            case .data(let d): parts.append(.data(d))
            case .bool(let b): parts.append(.bool(b))
            }
        }
        self.parts = parts
    }

    /// The name of the index of one constraint within one hierarchy.
    static func slot(root: String, constraint: [String]) -> String {
        "\(root)|\(constraint.joined(separator: ","))"
    }

    /// The entity's unique constraints (its own and inherited ones), each once.
    static func constraints(of entity: ResolvedEntity) -> [[String]] {
        var seen = Set<[String]>()
        return entity.uniqueConstraints.filter { seen.insert($0).inserted }
    }

    /// Whether two lists of values are equal part by part, as predicates see equality.
    static func sameValues(_ a: [Value], _ b: [Value]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { Value.compare($0, $1) == .orderedSame }
    }
}
