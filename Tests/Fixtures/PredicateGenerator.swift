import Foundation
import ModelCore

/// Generates random parser-normal predicate trees: every node kind, nested SUBQUERYs, lists, and
/// literals of every type. "Parser-normal" means a tree the parser can produce: AND and OR have
/// at least two children and never directly contain their own kind, lists appear only as
/// comparison operands and do not nest, names are well-formed and not reserved, and no double is NaN.
public struct PredicateGenerator {
    public var random: SeededRandom
    /// How many nodes of each kind were generated, to check that every kind was exercised.
    public var tally: [String: Int] = [:]

    public init(seed: UInt64) { random = SeededRandom(seed: seed) }

    public static let names = [
        "name", "title", "price", "count", "items", "trip", "startDate", "a", "b2", "x_y", "Zeta",
        "first", "size", "nothing", "selfie", "AND_", "z" + String(repeating: "q", count: 63),
    ]
    static let variables = ["v", "a", "item", "and", "self", "x1", "Nil"]
    static let entities = ["Trip", "Item", "A", "nil", "Entity_2"]

    private mutating func count(_ kind: String) { tally[kind, default: 0] += 1 }

    // MARK: Predicates

    public mutating func predicate(depth: Int) -> ModelCore.Predicate {
        let choice = depth <= 0 ? random.int(0...5) : random.int(0...9)
        switch choice {
        case 0:
            count("constant")
            return .constant(random.chance(0.5))
        case 1...5:
            return comparison(depth: depth)
        case 6, 7:
            return junction(isAnd: choice == 6, depth: depth)
        default:
            count("not")
            return .not(predicate(depth: depth - 1))
        }
    }

    private mutating func junction(isAnd: Bool, depth: Int) -> ModelCore.Predicate {
        count(isAnd ? "and" : "or")
        var parts: [ModelCore.Predicate] = []
        for _ in 0..<random.int(2...4) {
            var part = predicate(depth: depth - 1)
            // A child of the same kind would be spliced by the parser; wrap it in NOT instead.
            if case .and = part, isAnd { part = .not(part) }
            if case .or = part, !isAnd { part = .not(part) }
            parts.append(part)
        }
        return isAnd ? .and(parts) : .or(parts)
    }

    private mutating func comparison(depth: Int) -> ModelCore.Predicate {
        count("comparison")
        let op = random.pick(ComparisonOperator.allCases)
        let modifier = random.pick(ComparisonModifier.allCases)
        var options: StringOptions = []
        if random.chance(0.3) { options.insert(.caseInsensitive) }
        if random.chance(0.3) { options.insert(.diacriticInsensitive) }
        let lhs = random.chance(0.05) ? list(depth: depth - 1) : expression(depth: depth - 1)
        let rhs: ModelCore.Expression
        if op == .in || op == .between {
            rhs = random.chance(0.9) ? list(depth: depth - 1) : expression(depth: depth - 1)
        } else {
            rhs = random.chance(0.05) ? list(depth: depth - 1) : expression(depth: depth - 1)
        }
        return .comparison(Comparison(lhs, op, rhs, modifier: modifier, options: options))
    }

    // MARK: Expressions

    private mutating func list(depth: Int) -> ModelCore.Expression {
        count("list")
        return .list((0..<random.int(0...4)).map { _ in expression(depth: depth) })
    }

    public mutating func path() -> PropertyPath {
        let variable = random.chance(0.25) ? random.pick(Self.variables) : nil
        let components = (0..<random.int(0...3)).map { _ in random.pick(Self.names) }
        return PropertyPath(components, variable: variable)
    }

    /// An expression that is not a list.
    public mutating func expression(depth: Int) -> ModelCore.Expression {
        let choice = depth <= 0 ? random.int(0...6) : random.int(0...9)
        switch choice {
        case 0, 1:
            count("keyPath")
            return .keyPath(path())
        case 2, 3:
            count("literal")
            return .literal(value())
        case 4:
            count("object")
            return .object(identifier())
        case 5:
            count("collection")
            let attribute = random.chance(0.6) ? random.pick(Self.names) : nil
            return .collection(random.pick(CollectionFunction.allCases), path(), attribute: attribute)
        case 6:
            count("entityName")
            return .entityName(variable: random.chance(0.5) ? random.pick(Self.variables) : nil)
        case 7, 8:
            count("arithmetic")
            return .arithmetic(
                random.pick(ArithmeticOperator.allCases), expression(depth: depth - 1), expression(depth: depth - 1))
        default:
            count("subqueryCount")
            return .subqueryCount(
                collection: path(), variable: random.pick(Self.variables), predicate: predicate(depth: depth - 1))
        }
    }

    public mutating func identifier() -> PersistentIdentifier {
        let store = uuid()
        let key: PersistentIdentifier.Key =
            random.chance(0.5)
            ? .permanent(Int64.random(in: 1...Int64.max, using: &random))
            : .temporary(uuid())
        return PersistentIdentifier(storeIdentifier: store, entityName: random.pick(Self.entities), key: key)
    }

    mutating func uuid() -> UUID {
        let a = random.next(), b = random.next()
        return withUnsafeBytes(of: (a, b)) { raw in
            UUID(
                uuid: (
                    raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
                    raw[8], raw[9], raw[10], raw[11], raw[12], raw[13], raw[14], raw[15]
                ))
        }
    }

    // MARK: Values

    static let stringPieces = [
        "a", "Z", "é", "e\u{301}", "\u{301}", "\"", "'", "\\", "\n", "\r", "\t", "\u{0}", "\u{7F}",
        "\u{1F}", "😀", "👩‍👩‍👧", "日本", " ", "*", "?", "{", "}", "(", ")", "$", "@", "\u{200B}",
        "\u{FEFF}", "\\u{41}", "AND", "nil", "\u{10FFFF}",
    ]
    static let urls = [
        "https://example.com/a?b=1#c", "file:///tmp/x%20y", "mailto:a@b.c", "http://[::1]:8080/",
        "urn:isbn:0451450523", "https://example.com/%E2%82%AC",
    ]
    static let jsonTexts = [
        "{}", "[1,2]", "\"x\"", "null", "{\"a\":{\"b\":[true,false,null,1.5e3]}}", " 1 ", "[\"\\u00e9\"]",
    ]

    public mutating func value() -> Value {
        switch random.int(0...10) {
        case 0:
            count("null")
            return .null
        case 1:
            count("string")
            return .string((0..<random.int(0...6)).map { _ in random.pick(Self.stringPieces) }.joined())
        case 2:
            count("int")
            return .int(
                random.chance(0.3)
                    ? random.pick([0, 1, -1, .max, .min]) : Int64(bitPattern: random.next()) >> random.int(0...62))
        case 3:
            count("double")
            return .double(double())
        case 4:
            count("bool")
            return .bool(random.chance(0.5))
        case 5:
            count("date")
            let micros =
                random.chance(0.2)
                ? random.pick([Int64.min, .max, 0, -1, 1, -86_400_000_000])
                : Int64(bitPattern: random.next()) >> random.int(0...40)
            return .date(Timestamp(microsecondsSince1970: micros))
        case 6:
            count("data")
            return .data(Data((0..<random.int(0...10)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        case 7:
            count("uuid")
            return .uuid(uuid())
        case 8:
            count("url")
            // valid literals
            return .url(URL(string: random.pick(Self.urls) + (random.chance(0.5) ? "" : "x\(random.int(0...999))"))!)
        case 9:
            count("decimal")
            return .decimal(decimal())
        default:
            count("json")
            return .json(random.pick(Self.jsonTexts))
        }
    }

    mutating func double() -> Double {
        if random.chance(0.3) {
            return random.pick([
                0.0, -0.0, 0.5, -1.5, 1e16, 1e-300, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -1e300,
                .infinity, -.infinity, 0.1, 100.0,
            ])
        }
        while true {
            let d = Double(bitPattern: random.next())
            if !d.isNaN { return d }
        }
    }

    mutating func decimal() -> Decimal {
        let significand = Decimal(UInt64.random(in: 0...999_999_999_999_999_999, using: &random))
        let exponent = random.int(-20...20)
        return Decimal(sign: random.chance(0.5) ? .minus : .plus, exponent: exponent, significand: significand)
    }
}
