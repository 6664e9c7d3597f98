import Foundation
import ModelCore
import ModelFixtures

// Foundation has types of these names too; in this module they mean ModelCore's.
typealias Predicate = ModelCore.Predicate
typealias Expression = ModelCore.Expression

/// Shorthands for building predicate trees in tests.
enum P {
    static func path(_ text: String, _ variable: String? = nil) -> PropertyPath {
        PropertyPath(text.isEmpty ? [] : text.split(separator: ".").map(String.init), variable: variable)
    }

    static func key(_ text: String, _ variable: String? = nil) -> Expression { .keyPath(path(text, variable)) }
    static func value(_ v: Value) -> Expression { .literal(v) }
    static func int(_ v: Int64) -> Expression { .literal(.int(v)) }
    static func double(_ v: Double) -> Expression { .literal(.double(v)) }
    static func string(_ v: String) -> Expression { .literal(.string(v)) }
    static let null = Expression.literal(.null)

    static func cmp(
        _ lhs: Expression, _ op: ComparisonOperator, _ rhs: Expression,
        _ modifier: ComparisonModifier = .direct, _ options: StringOptions = []
    ) -> Predicate {
        .comparison(Comparison(lhs, op, rhs, modifier: modifier, options: options))
    }

    static func arith(_ op: ArithmeticOperator, _ a: Expression, _ b: Expression) -> Expression {
        .arithmetic(op, a, b)
    }

    /// `key == rhs`.
    static func eq(_ key: String, _ rhs: Expression) -> Predicate { cmp(self.key(key), .equal, rhs) }
}

/// Fixed identifiers for tests.
enum Fixed {
    static let store = UUID(uuidString: "11111111-2222-3333-4444-555555555555")! // a valid literal
    static let otherStore = UUID(uuidString: "99999999-8888-7777-6666-555555555555")! // a valid literal
    static let temporaryKey = UUID(uuidString: "AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE")! // a valid literal

    static func id(_ entity: String, _ pk: Int64, store: UUID = Fixed.store) -> PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: store, entityName: entity, key: .permanent(pk))
    }

    static func uri(_ entity: String, _ pk: Int64, store: UUID = Fixed.store) -> String {
        id(entity, pk, store: store).uriRepresentation
    }
}

extension Timestamp {
    /// A timestamp from ISO text known to be valid in a test (Int64.min micros if it is not, which
    /// no expectation uses, so the test fails visibly).
    static func iso(_ text: String) -> Timestamp {
        Timestamp(iso8601: text) ?? Timestamp(microsecondsSince1970: .min)
    }
}
