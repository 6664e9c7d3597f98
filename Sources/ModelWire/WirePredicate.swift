import ModelCore

extension Modeld_V1_Predicate {
    /// The predicate this message carries, parsing text or reading a tree; nil when neither is
    /// set. Typing against the schema happens later, where the schema is known.
    public func model() throws(ModelError) -> Predicate? {
        switch kind {
        case nil: return nil
        case .text(let text): return try PredicateParser.parse(text)
        case .tree(let node): return try Predicate(wire: node)
        }
    }

    /// A predicate message carrying a tree.
    public init(_ predicate: Predicate) {
        self.init()
        tree = predicate.wire
    }

    /// A predicate message carrying text in NSPredicate's syntax.
    public init(text: String) {
        self.init()
        self.text = text
    }
}

extension Predicate {
    /// Reads a predicate tree. Every node must be set; operators must be known.
    public init(wire: Modeld_V1_PredicateNode) throws(ModelError) {
        switch wire.kind {
        case .constant(let value): self = .constant(value)
        case .comparison(let node): self = .comparison(try Comparison(wire: node))
        case .and(let list): self = .and(try Self.parts(list, "and"))
        case .or(let list): self = .or(try Self.parts(list, "or"))
        case .not(let inner): self = .not(try Predicate(wire: inner))
        case nil:
            throw ModelError(
                .invalidPredicate, "a predicate node has nothing set; set constant, comparison, and, or or not")
        }
    }

    private static func parts(_ list: Modeld_V1_PredicateList, _ name: String) throws(ModelError) -> [Predicate] {
        guard list.predicates.count >= 2 else {
            throw ModelError(.invalidPredicate, "'\(name)' needs at least two predicates, got \(list.predicates.count)")
        }
        var parts: [Predicate] = []
        for part in list.predicates { parts.append(try Predicate(wire: part)) }
        return parts
    }

    /// The wire form of this predicate.
    public var wire: Modeld_V1_PredicateNode {
        var node = Modeld_V1_PredicateNode()
        switch self {
        case .constant(let value): node.constant = value
        case .comparison(let comparison): node.comparison = comparison.wire
        case .and(let parts): node.and = Modeld_V1_PredicateList.with { $0.predicates = parts.map(\.wire) }
        case .or(let parts): node.or = Modeld_V1_PredicateList.with { $0.predicates = parts.map(\.wire) }
        case .not(let inner): node.not = inner.wire
        }
        return node
    }
}

extension Comparison {
    init(wire: Modeld_V1_ComparisonNode) throws(ModelError) {
        guard let op = WireTables.comparison.first(where: { $0.1 == wire.op })?.0 else {
            throw ModelError(.invalidPredicate, "a comparison has no operator (or an unknown one: \(wire.op.rawValue))")
        }
        guard wire.hasLhs, wire.hasRhs else {
            throw ModelError(.invalidPredicate, "a \(op.rawValue) comparison needs both sides")
        }
        let modifier: ComparisonModifier
        switch wire.quantifier {
        case .direct: modifier = .direct
        case .any: modifier = .any
        case .all: modifier = .all
        case .none: modifier = .none
        case .UNRECOGNIZED(let number): throw ModelError(.invalidPredicate, "unknown quantifier \(number)")
        }
        var options: StringOptions = []
        if wire.caseInsensitive { options.insert(.caseInsensitive) }
        if wire.diacriticInsensitive { options.insert(.diacriticInsensitive) }
        self.init(
            try Expression(wire: wire.lhs), op, try Expression(wire: wire.rhs), modifier: modifier, options: options)
    }

    var wire: Modeld_V1_ComparisonNode {
        var node = Modeld_V1_ComparisonNode()
        node.lhs = lhs.wire
        node.op = WireTables.comparison.first { $0.0 == op }?.1 ?? .unspecified
        node.rhs = rhs.wire
        node.quantifier =
            switch modifier {
            case .direct: .direct
            case .any: .any
            case .all: .all
            case .none: .none
            }
        node.caseInsensitive = options.contains(.caseInsensitive)
        node.diacriticInsensitive = options.contains(.diacriticInsensitive)
        return node
    }
}

extension Expression {
    init(wire: Modeld_V1_ExpressionNode) throws(ModelError) {
        switch wire.kind {
        case .keyPath(let path): self = .keyPath(try PropertyPath(wire: path))
        case .literal(let value): self = .literal(try Value(wire: value))
        case .object(let uri): self = .object(try PersistentIdentifier(uri: uri))
        case .list(let list):
            var items: [Expression] = []
            for item in list.expressions { items.append(try Expression(wire: item)) }
            self = .list(items)
        case .collection(let node):
            guard let function = WireTables.collection.first(where: { $0.1 == node.function })?.0 else {
                throw ModelError(
                    .invalidPredicate,
                    "a collection expression has no function (or an unknown one); use count, sum, avg, min or max")
            }
            self = .collection(
                function, try PropertyPath(wire: node.collection),
                attribute: node.attribute.isEmpty ? nil : node.attribute)
        case .subqueryCount(let node):
            guard !node.variable.isEmpty else {
                throw ModelError(.invalidPredicate, "a SUBQUERY needs a variable name")
            }
            guard node.hasPredicate else { throw ModelError(.invalidPredicate, "a SUBQUERY needs a predicate") }
            self = .subqueryCount(
                collection: try PropertyPath(wire: node.collection), variable: node.variable,
                predicate: try Predicate(wire: node.predicate))
        case .arithmetic(let node):
            guard let op = WireTables.arithmetic.first(where: { $0.1 == node.op })?.0 else {
                throw ModelError(.invalidPredicate, "an arithmetic expression has no operator (or an unknown one)")
            }
            guard node.hasLhs, node.hasRhs else {
                throw ModelError(.invalidPredicate, "arithmetic \(op.rawValue) needs both sides")
            }
            self = .arithmetic(op, try Expression(wire: node.lhs), try Expression(wire: node.rhs))
        case .entityName(let node):
            self = .entityName(variable: node.variable.isEmpty ? nil : node.variable)
        case nil:
            throw ModelError(.invalidPredicate, "an expression node has nothing set")
        }
    }

    var wire: Modeld_V1_ExpressionNode {
        var node = Modeld_V1_ExpressionNode()
        switch self {
        case .keyPath(let path): node.keyPath = path.wire
        case .literal(let value): node.literal = value.wire
        case .object(let id): node.object = id.uriRepresentation
        case .list(let items): node.list = Modeld_V1_ExpressionList.with { $0.expressions = items.map(\.wire) }
        case .collection(let function, let path, let attribute):
            node.collection = Modeld_V1_CollectionNode.with {
                $0.function = WireTables.collection.first { $0.0 == function }?.1 ?? .unspecified
                $0.collection = path.wire
                $0.attribute = attribute ?? ""
            }
        case .subqueryCount(let collection, let variable, let predicate):
            node.subqueryCount = Modeld_V1_SubqueryNode.with {
                $0.collection = collection.wire
                $0.variable = variable
                $0.predicate = predicate.wire
            }
        case .arithmetic(let op, let lhs, let rhs):
            node.arithmetic = Modeld_V1_ArithmeticNode.with {
                $0.op = WireTables.arithmetic.first { $0.0 == op }?.1 ?? .unspecified
                $0.lhs = lhs.wire
                $0.rhs = rhs.wire
            }
        case .entityName(let variable):
            node.entityName = Modeld_V1_EntityNameNode.with { $0.variable = variable ?? "" }
        }
        return node
    }
}

extension PropertyPath {
    /// Reads a key path; every component must be a well-formed name.
    public init(wire: Modeld_V1_KeyPath) throws(ModelError) {
        for name in wire.components + (wire.variable.isEmpty ? [] : [wire.variable])
        where !SchemaNames.isWellFormed(name) {
            throw ModelError(
                .invalidPredicate, "'\(name)' is not a valid name in a key path: use letters, digits and underscores")
        }
        self.init(wire.components, variable: wire.variable.isEmpty ? nil : wire.variable)
    }

    /// Reads a dotted key path (`trip.destination`); every component must be a well-formed name.
    public init(dotted text: String) throws(ModelError) {
        let components = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !text.isEmpty, components.allSatisfy(SchemaNames.isWellFormed) else {
            throw ModelError(
                .invalidArgument, "'\(text)' is not a key path: write property names joined by dots, such as trip.name",
                context: ["keyPath": text])
        }
        self.init(components)
    }

    var wire: Modeld_V1_KeyPath {
        Modeld_V1_KeyPath.with {
            $0.variable = variable ?? ""
            $0.components = components
        }
    }
}

/// The one-to-one maps between ModelCore's enums and the wire's.
enum WireTables {
    static let comparison: [(ComparisonOperator, Modeld_V1_ComparisonOperator)] = [
        (.equal, .equal), (.notEqual, .notEqual), (.less, .less), (.lessOrEqual, .lessOrEqual), (.greater, .greater),
        (.greaterOrEqual, .greaterOrEqual), (.between, .between), (.in, .in), (.contains, .contains),
        (.beginsWith, .beginsWith), (.endsWith, .endsWith), (.like, .like),
    ]
    static let collection: [(CollectionFunction, Modeld_V1_CollectionFunction)] = [
        (.count, .count), (.sum, .sum), (.avg, .avg), (.min, .min), (.max, .max),
    ]
    static let arithmetic: [(ArithmeticOperator, Modeld_V1_ArithmeticOperator)] = [
        (.add, .add), (.subtract, .subtract), (.multiply, .multiply), (.divide, .divide),
    ]
}
