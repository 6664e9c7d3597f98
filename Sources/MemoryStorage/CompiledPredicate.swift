import ModelCore
import ModelStorage

/// A typed predicate with every key path resolved once, so that evaluating it over many objects
/// does no schema lookups.
indirect enum CompiledPredicate {
    case constant(Bool)
    case comparison(CompiledComparison)
    case and([CompiledPredicate])
    case or([CompiledPredicate])
    case not(CompiledPredicate)
}

/// `lhs op rhs` with its quantifier and string options.
struct CompiledComparison {
    let lhs: CompiledExpression
    let op: ComparisonOperator
    let rhs: CompiledExpression
    let modifier: ComparisonModifier
    let options: StringOptions
}

/// An expression with its key paths resolved. `variable` names the SUBQUERY variable a path
/// starts at (nil for the evaluated object).
indirect enum CompiledExpression {
    case path(ResolvedPath, variable: String?)
    case value(Value)
    case object(ObjectRef)
    case list([CompiledExpression])
    case collection(CollectionFunction, ResolvedPath, variable: String?, attribute: AttributeDescription?)
    /// `SUBQUERY(collection, $binds, predicate).@count`.
    case subqueryCount(ResolvedPath, variable: String?, binds: String, predicate: CompiledPredicate)
    case arithmetic(ArithmeticOperator, CompiledExpression, CompiledExpression)
    case entityName(variable: String?)
}

/// Resolves the key paths of a typed predicate against a schema.
struct PredicateCompiler {
    let reader: StoreReader

    /// Compiles `predicate`, whose key paths without a variable start at `entity`.
    func compile(
        _ predicate: Predicate, entity: ResolvedEntity,
        variables: [String: ResolvedEntity] = [:]
    ) throws(ModelError) -> CompiledPredicate {
        switch predicate {
        case .constant(let value):
            return .constant(value)
        case .and(let parts):
            return .and(
                try parts.map { (part) throws(ModelError) in try compile(part, entity: entity, variables: variables) })
        case .or(let parts):
            return .or(
                try parts.map { (part) throws(ModelError) in try compile(part, entity: entity, variables: variables) })
        case .not(let inner):
            return .not(try compile(inner, entity: entity, variables: variables))
        case .comparison(let c):
            return .comparison(
                CompiledComparison(
                    lhs: try compile(c.lhs, entity: entity, variables: variables), op: c.op,
                    rhs: try compile(c.rhs, entity: entity, variables: variables), modifier: c.modifier,
                    options: c.options))
        }
    }

    private func compile(
        _ expression: Expression, entity: ResolvedEntity,
        variables: [String: ResolvedEntity]
    ) throws(ModelError) -> CompiledExpression {
        switch expression {
        case .keyPath(let path):
            return .path(try resolve(path, entity, variables), variable: path.variable)
        case .literal(let value):
            return .value(value)
        case .object(let id):
            return .object(reader.reference(to: id))
        case .list(let items):
            return .list(
                try items.map { (item) throws(ModelError) in try compile(item, entity: entity, variables: variables) })
        case .collection(let function, let path, let attributeName):
            let resolved = try resolve(path, entity, variables)
            return .collection(
                function, resolved, variable: path.variable, attribute: attributeName.flatMap(resolved.end.attribute))
        case .subqueryCount(let collection, let variable, let predicate):
            let resolved = try resolve(collection, entity, variables)
            var inner = variables
            inner[variable] = resolved.end
            return .subqueryCount(
                resolved, variable: collection.variable, binds: variable,
                predicate: try compile(predicate, entity: entity, variables: inner))
        case .arithmetic(let op, let a, let b):
            return .arithmetic(
                op, try compile(a, entity: entity, variables: variables),
                try compile(b, entity: entity, variables: variables))
        case .entityName(let variable):
            return .entityName(variable: variable)
        }
    }

    private func resolve(
        _ path: PropertyPath, _ entity: ResolvedEntity,
        _ variables: [String: ResolvedEntity]
    ) throws(ModelError) -> ResolvedPath {
        try reader.schema.resolve(path, from: entity, variables: variables)
    }
}
