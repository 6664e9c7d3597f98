import ModelCore

/// What part of a `#Predicate` translates to, on the way to a predicate tree.
indirect enum Term {
    case predicate(ModelCore.Predicate)
    /// A Swift value captured by the predicate (or computed from one).
    case value(Any)
    case nilLiteral
    /// A key path: the object itself, through to-one relationships, to an attribute or a
    /// to-many relationship.
    case path(PathTerm)
    /// Arithmetic, `@count`, a SUBQUERY count.
    case expression(ModelCore.Expression)
    /// `path ?? fallback`.
    case coalesce(PathTerm, Term)
    /// `collection.filter { … }`, which only `.count` and `.isEmpty` can follow (these key
    /// paths, of the filtered array's type).
    case filter(
        collection: PropertyPath, variable: String, predicate: ModelCore.Predicate,
        countKeyPath: AnyKeyPath, isEmptyKeyPath: AnyKeyPath)
    /// A range (`a...b`, `a..<b`) of values.
    case range(lower: Term, upper: Term, isClosed: Bool)
}

/// A key path in a predicate, and what it reaches.
struct PathTerm {
    enum Reach {
        /// An object: the evaluated one, a SUBQUERY variable, or a to-one relationship's target.
        case object(ModelTypeInfo)
        case toMany(PropertyInfo)
        case attribute(PropertyInfo)
    }

    var path: PropertyPath
    var reach: Reach

    func appending(_ name: String, _ reach: Reach) -> PathTerm {
        PathTerm(path: PropertyPath(path.components + [name], variable: path.variable), reach: reach)
    }
}

/// Translates Foundation's `#Predicate` into modeld's predicate tree: each kind of node of
/// `PredicateExpressions` that has a meaning in the store knows its translation
/// (``TranslatableExpression``); anything else is an error naming the construct.
final class PredicateTranslator {
    let types: ModelTypes
    private var bindings: [PredicateExpressions.VariableID: Term] = [:]
    private var variables = 0

    init(types: ModelTypes) {
        self.types = types
    }

    static func translate<T>(_ predicate: Foundation.Predicate<T>, root: ModelTypeInfo, types: ModelTypes)
        throws(ModelError) -> ModelCore.Predicate
    {
        let translator = PredicateTranslator(types: types)
        translator.bind(predicate.variable.key, to: .path(PathTerm(path: PropertyPath([]), reach: .object(root))))
        return try translator.predicate(predicate.expression)
    }

    func bind(_ key: PredicateExpressions.VariableID, to term: Term) {
        bindings[key] = term
    }

    func binding(_ key: PredicateExpressions.VariableID) throws(ModelError) -> Term {
        guard let term = bindings[key] else {
            throw ModelError(.invalidPredicate, "#Predicate refers to a variable outside its scope")
        }
        return term
    }

    /// A fresh SUBQUERY variable name.
    func newVariable() -> String {
        variables += 1
        return "v\(variables)"
    }

    func term(_ expression: Any) throws(ModelError) -> Term {
        guard let translatable = expression as? any TranslatableExpression else { throw Self.unsupported(expression) }
        return try translatable.term(in: self)
    }

    func predicate(_ expression: Any) throws(ModelError) -> ModelCore.Predicate {
        try predicate(of: term(expression), from: expression)
    }

    /// A term used as a condition: a predicate, a Boolean key path (`== true`), a Boolean value.
    func predicate(of term: Term, from expression: Any) throws(ModelError) -> ModelCore.Predicate {
        switch term {
        case .predicate(let predicate):
            return predicate
        case .path(let path):
            if case .attribute(let property) = path.reach, property.codec?.type == .bool {
                return .comparison(Comparison(.keyPath(path.path), .equal, .literal(.bool(true))))
            }
        case .value(let value):
            if let bool = unwrap(value) as? Bool { return .constant(bool) }
        default:
            break
        }
        throw ModelError(
            .invalidPredicate,
            "#Predicate uses \(Self.describe(expression)) as a condition, but it is not a Boolean the store can test")
    }

    /// The store expression of a term that is a value: a key path, a literal, arithmetic.
    func expression(_ term: Term, codec: AttributeCodec?, from source: Any) throws(ModelError) -> ModelCore.Expression {
        switch term {
        case .path(let path): return .keyPath(path.path)
        case .expression(let expression): return expression
        case .nilLiteral: return .literal(.null)
        case .value(let value): return try literal(value, codec: codec)
        case .predicate, .coalesce, .filter, .range:
            throw ModelError(
                .invalidPredicate, "#Predicate uses \(Self.describe(source)) where the store needs a value")
        }
    }

    /// A captured value as a literal: models and identifiers as objects, everything else as its
    /// attribute would store it (an enum as its raw value, a Codable value as JSON).
    func literal(_ value: Any, codec: AttributeCodec?) throws(ModelError) -> ModelCore.Expression {
        try Self.literal(value, codec: codec)
    }

    static func literal(_ value: Any, codec: AttributeCodec?) throws(ModelError) -> ModelCore.Expression {
        guard let unwrapped = unwrap(value) else { return .literal(.null) }
        if let model = unwrapped as? any PersistentModel { return .object(model.persistentModelID) }
        if let id = unwrapped as? PersistentIdentifier { return .object(id) }
        if let codec, type(of: unwrapped) == codec.valueType { return .literal(try codec.encode(unwrapped)) }
        guard let own = AttributeCodec.make(for: type(of: unwrapped), isOptional: false) else {
            throw ModelError(
                .invalidPredicate, "#Predicate compares with a \(type(of: unwrapped)), which the store can't hold")
        }
        return .literal(try own.encode(unwrapped))
    }

    /// The codec of the attribute a term reaches, if it reaches one.
    static func codec(of term: Term) -> AttributeCodec? {
        switch term {
        case .path(let path):
            if case .attribute(let property) = path.reach { return property.codec }
        case .coalesce(let path, _):
            if case .attribute(let property) = path.reach { return property.codec }
        default:
            break
        }
        return nil
    }

    // MARK: Errors

    static func unsupported(_ expression: Any) -> ModelError {
        ModelError(
            .invalidPredicate,
            "#Predicate uses \(describe(expression)), which modeld can't translate into a store query (it never filters in memory): rewrite the predicate without it, or use a StorePredicate",
            context: ["construct": constructName(expression)])
    }

    static func constructName(_ expression: Any) -> String {
        let full = String(describing: type(of: expression))
        return String(full.prefix { $0 != "<" })
    }

    static func describe(_ expression: Any) -> String {
        let name = constructName(expression)
        let readable: [String: String] = [
            "IntRemainder": "the % operator",
            "IntDivision": "integer division (/ between integers truncates; the store's / doesn't)",
            "Conditional": "a ternary (?:) expression",
            "SequenceMaximum": "max()",
            "SequenceMinimum": "min()",
            "CollectionIndexSubscript": "a collection subscript",
            "CollectionRangeSubscript": "a range subscript",
            "DictionaryKeySubscript": "a dictionary subscript",
            "StringContainsRegex": "a regular expression",
            "PredicateEvaluate": "another predicate's evaluate(_:)",
            "ExpressionEvaluate": "an expression's evaluate(_:)",
            "StringCaseInsensitiveCompare": "caseInsensitiveCompare(_:)",
            "StringLocalizedCompare": "localizedCompare(_:)",
            "StringLocalizedStandardContains": "localizedStandardContains(_:)",
        ]
        return readable[name].map { "\($0) (PredicateExpressions.\(name))" } ?? "PredicateExpressions.\(name)"
    }
}

/// A node of `PredicateExpressions` the store can evaluate.
protocol TranslatableExpression {
    func term(in translator: PredicateTranslator) throws(ModelError) -> Term
}
