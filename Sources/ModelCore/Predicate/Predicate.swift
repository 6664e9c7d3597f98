/// A predicate as a tree: what a fetch filters by. The text form, in NSPredicate's syntax, is read
/// by ``PredicateParser`` and written by ``description``; a tree is checked against a schema (and
/// its literals typed) by ``typed(for:in:)``.
public indirect enum Predicate: Hashable, Sendable {
    /// `TRUEPREDICATE` or `FALSEPREDICATE`.
    case constant(Bool)
    case comparison(Comparison)
    case and([Predicate])
    case or([Predicate])
    case not(Predicate)
}

/// `lhs op rhs`, with an optional quantifier over a to-many key path and string options.
public struct Comparison: Hashable, Sendable {
    public var lhs: Expression
    public var op: ComparisonOperator
    /// For `IN` a ``Expression/list(_:)``; for `BETWEEN` a list of two bounds.
    public var rhs: Expression
    /// `ANY`, `ALL` or `NONE` when `lhs` passes through a to-many relationship.
    public var modifier: ComparisonModifier
    /// `[c]`, `[d]` for string comparisons.
    public var options: StringOptions

    public init(
        _ lhs: Expression, _ op: ComparisonOperator, _ rhs: Expression,
        modifier: ComparisonModifier = .direct, options: StringOptions = []
    ) {
        self.lhs = lhs
        self.op = op
        self.rhs = rhs
        self.modifier = modifier
        self.options = options
    }
}

/// The operators of a comparison.
public enum ComparisonOperator: String, Hashable, Sendable, Codable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case between = "BETWEEN"
    case `in` = "IN"
    case contains = "CONTAINS"
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case like = "LIKE"

    /// Whether the operator works on strings only.
    public var isStringOperator: Bool {
        switch self {
        case .contains, .beginsWith, .endsWith, .like: true
        default: false
        }
    }

    /// Whether the operator needs an ordered type (`<`, `BETWEEN`…).
    public var isOrdering: Bool {
        switch self {
        case .less, .lessOrEqual, .greater, .greaterOrEqual, .between: true
        default: false
        }
    }
}

/// The quantifier of a comparison over a to-many key path.
public enum ComparisonModifier: String, Hashable, Sendable, Codable, CaseIterable {
    /// No quantifier: the key path reaches a single value.
    case direct
    /// At least one related object matches.
    case any = "ANY"
    /// Every related object matches (true when there are none).
    case all = "ALL"
    /// No related object matches.
    case none = "NONE"
}

/// A value in a predicate: a key path, a literal, an aggregate over a to-many relationship, a
/// SUBQUERY count, arithmetic, or the entity name of an object.
public indirect enum Expression: Hashable, Sendable {
    case keyPath(PropertyPath)
    case literal(Value)
    /// A reference to one object, compared with a to-one relationship or `self`.
    case object(PersistentIdentifier)
    /// `{a, b, c}`: the right side of `IN` and `BETWEEN`.
    case list([Expression])
    /// `items.@count`, `items.@sum.price`: a function over a to-many key path and, for all but
    /// `@count`, an attribute of the related objects.
    case collection(CollectionFunction, PropertyPath, attribute: String?)
    /// `SUBQUERY(articles, $a, $a.category.name == "tech").@count`.
    case subqueryCount(collection: PropertyPath, variable: String, predicate: Predicate)
    /// `price * 2`, `startDate + 86400` (seconds).
    case arithmetic(ArithmeticOperator, Expression, Expression)
    /// `@entity` (or `$a.@entity`): the name of the object's concrete entity.
    case entityName(variable: String?)
}

/// Functions over the objects of a to-many relationship.
public enum CollectionFunction: String, Hashable, Sendable, Codable, CaseIterable {
    case count = "@count"
    case sum = "@sum"
    case avg = "@avg"
    case min = "@min"
    case max = "@max"
}

/// The operators of arithmetic expressions.
public enum ArithmeticOperator: String, Hashable, Sendable, Codable, CaseIterable {
    case add = "+"
    case subtract = "-"
    case multiply = "*"
    case divide = "/"
}

extension Predicate {
    /// `lhs == rhs` for a key path and a value: a shorthand for building trees in code.
    public static func equal(_ path: PropertyPath, _ value: Value) -> Predicate {
        .comparison(Comparison(.keyPath(path), .equal, .literal(value)))
    }

    /// The conjunction of `predicates`, flattened; `TRUEPREDICATE` when empty.
    public static func all(_ predicates: [Predicate]) -> Predicate {
        predicates.isEmpty ? .constant(true) : (predicates.count == 1 ? predicates[0] : .and(predicates))
    }
}
