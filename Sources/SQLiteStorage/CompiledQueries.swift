import ModelCore
import ModelStorage
import Synchronization

/// The objects fetches a layout has compiled, by shape: a client asks the same few fetches again
/// and again with other values (`score >= ?`), and compiling one — the SQL built as text, its
/// columns chosen — cost the daemon about 27,000 instructions a query, more than SQLite spends
/// finding ten of its rows. A fetch of a known shape takes the compiled statement and binds its
/// own values.
///
/// Only plain shapes are kept: predicates of constants, `and`, `or`, `not` and comparisons
/// (`==`, `!=`, `<`, `<=`, `>`, `>=`, without modifiers or string options) between an
/// attribute of the fetched entity, named by itself, and another or a literal that is not nil.
/// The compiler binds each such literal as it is, in the predicate's order, and then the limit
/// and the offset; that is checked when a shape is kept (``keep(_:for:literals:descriptor:)``),
/// and a shape whose compiled values differ is not kept.
final class CompiledQueries: Sendable {
    /// The most shapes kept; when full, the next shape empties the table.
    static let capacity = 128

    private let queries = Mutex<[FetchShape: ReadContext.ObjectsQuery]>([:])

    /// The compiled query for `descriptor`'s shape with `descriptor`'s values bound, if known.
    /// `shape` and `literals` come from ``FetchShape/init(_:literals:)``.
    func query(for shape: FetchShape, literals: [Value], descriptor: FetchDescriptor) -> ReadContext.ObjectsQuery? {
        guard let known = queries.withLock({ $0[shape] }) else { return nil }
        return ReadContext.ObjectsQuery(
            table: known.table, plans: known.plans, properties: known.properties, sql: known.sql,
            parameters: Self.parameters(literals, descriptor))
    }

    /// Keeps `query`, just compiled, for its shape when it bound exactly the values that
    /// ``query(for:literals:descriptor:)`` would bind.
    func keep(_ query: ReadContext.ObjectsQuery, for shape: FetchShape, literals: [Value], descriptor: FetchDescriptor)
    {
        guard query.parameters == Self.parameters(literals, descriptor) else { return }
        queries.withLock { queries in
            if queries.count >= Self.capacity { queries.removeAll() }
            queries[shape] = query
        }
    }

    /// How many shapes are kept.
    var count: Int { queries.withLock { $0.count } }

    /// Forgets every shape kept.
    func removeAll() {
        queries.withLock { $0.removeAll() }
    }

    /// The values a plain shape binds: its literals in order, then the limit and the offset
    /// (``SQLCompiler``'s paging).
    private static func parameters(_ literals: [Value], _ descriptor: FetchDescriptor) -> [Value] {
        var parameters = literals
        if let limit = descriptor.limit { parameters.append(.int(Int64(limit))) }
        if descriptor.offset > 0 { parameters.append(.int(Int64(descriptor.offset))) }
        return parameters
    }
}

/// A fetch without its values: what its compiled SQL depends on.
struct FetchShape: Hashable, Sendable {
    let entityName: String
    /// The predicate, each literal replaced by a blank value of its kind.
    let predicate: Predicate?
    let sortBy: [SortDescriptor]
    let hasLimit: Bool
    let hasOffset: Bool
    let includesSubentities: Bool
    let propertiesToFetch: [String]?

    /// The shape of `descriptor` and its literals in order, or nil when it is not plain.
    init?(_ descriptor: FetchDescriptor, literals: inout [Value]) {
        guard descriptor.resultType == .objects, descriptor.relationshipKeyPathsForPrefetching.isEmpty else {
            return nil
        }
        if let predicate = descriptor.predicate {
            guard let blank = Self.blank(predicate, literals: &literals, depth: 0) else { return nil }
            self.predicate = blank
        } else {
            self.predicate = nil
        }
        entityName = descriptor.entityName
        sortBy = descriptor.sortBy
        hasLimit = descriptor.limit != nil
        hasOffset = descriptor.offset > 0
        includesSubentities = descriptor.includesSubentities
        propertiesToFetch = descriptor.propertiesToFetch
    }

    private static func blank(_ predicate: Predicate, literals: inout [Value], depth: Int) -> Predicate? {
        guard depth < 16 else { return nil }
        switch predicate {
        case .constant: return predicate
        case .comparison(let comparison):
            guard comparison.modifier == .direct, comparison.options.isEmpty, plainOperators.contains(comparison.op),
                let lhs = blank(comparison.lhs, literals: &literals),
                let rhs = blank(comparison.rhs, literals: &literals)
            else { return nil }
            return .comparison(Comparison(lhs, comparison.op, rhs))
        case .and(let parts), .or(let parts):
            var blanks: [Predicate] = []
            blanks.reserveCapacity(parts.count)
            for part in parts {
                guard let blank = blank(part, literals: &literals, depth: depth + 1) else { return nil }
                blanks.append(blank)
            }
            if case .and = predicate { return .and(blanks) }
            return .or(blanks)
        case .not(let inner):
            return blank(inner, literals: &literals, depth: depth + 1).map { .not($0) }
        }
    }

    private static let plainOperators: [ComparisonOperator] = [
        .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual,
    ]

    /// An attribute named alone, or a literal blanked (and kept in `literals`); nil otherwise.
    private static func blank(_ expression: Expression, literals: inout [Value]) -> Expression? {
        switch expression {
        case .keyPath(let path) where path.variable == nil && path.components.count == 1:
            return expression
        case .literal(let value):
            let blank: Value
            switch value {
            case .int: blank = .int(0)
            case .double: blank = .double(0)
            case .bool: blank = .bool(false)
            case .date: blank = .date(Timestamp(microsecondsSince1970: 0))
            case .string: blank = .string("")
            default: return nil
            }
            literals.append(value)
            return .literal(blank)
        default:
            return nil
        }
    }
}
