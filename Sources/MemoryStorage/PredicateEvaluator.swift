import ModelCore
import ModelStorage

/// Evaluates typed predicates (``FetchDescriptor/validated(in:storeIdentifier:)`` types them)
/// over the objects of a ``StoreReader``, with the two-valued logic of docs/storage-semantics.md:
/// every comparison is true or false, a comparison with nil is false except `==`/`!=`, and
/// `NOT p` is true exactly when `p` is false. Every comparison goes through `Value.compare` and
/// ``TextComparison``, the order SQLite uses too.
struct PredicateEvaluator {
    let reader: StoreReader
    private let predicate: CompiledPredicate?

    /// An evaluator of `predicate` (nil matches everything), whose key paths start at `entity`.
    init(reader: StoreReader, entity: ResolvedEntity, predicate: ModelCore.Predicate?) throws(ModelError) {
        self.reader = reader
        self.predicate = try predicate.map { (p) throws(ModelError) in
            try PredicateCompiler(reader: reader).compile(p, entity: entity)
        }
    }

    /// Where key paths are evaluated: the object, and the objects SUBQUERY variables are bound to.
    struct Scope {
        var object: ObjectRef
        var row: Row
        var variables: [String: ObjectRef] = [:]

        /// The object a path with `variable` starts at, and its row when it is the evaluated one.
        func start(_ variable: String?) -> (ref: ObjectRef?, row: Row?) {
            guard let variable else { return (object, row) }
            return (variables[variable], nil)
        }
    }

    /// Whether the predicate holds for the object `ref` with row `row`.
    func matches(_ ref: ObjectRef, _ row: Row) -> Bool {
        guard let predicate else { return true }
        return holds(predicate, in: Scope(object: ref, row: row))
    }

    func holds(_ predicate: CompiledPredicate, in scope: Scope) -> Bool {
        switch predicate {
        case .constant(let value):
            return value
        case .and(let parts):
            return parts.allSatisfy { holds($0, in: scope) }
        case .or(let parts):
            return parts.contains { holds($0, in: scope) }
        case .not(let inner):
            return !holds(inner, in: scope)
        case .comparison(let comparison):
            return holds(comparison, in: scope)
        }
    }

    private func holds(_ c: CompiledComparison, in scope: Scope) -> Bool {
        let lhs = evaluate(c.lhs, in: scope)
        let rhs = evaluate(c.rhs, in: scope)
        let elements: [Operand]
        if case .many(let items) = lhs { elements = items } else { elements = [lhs] }
        switch c.modifier {
        case .direct:
            return elements.count == 1 && Self.compare(elements[0], c.op, rhs, options: c.options)
        case .any:
            return elements.contains { Self.compare($0, c.op, rhs, options: c.options) }
        case .all:
            return elements.allSatisfy { Self.compare($0, c.op, rhs, options: c.options) }
        case .none:
            return !elements.contains { Self.compare($0, c.op, rhs, options: c.options) }
        }
    }
}
