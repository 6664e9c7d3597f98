import Foundation
import ModelCore

extension PredicateEvaluator {
    /// Evaluates one expression of a typed predicate in `scope`.
    func evaluate(_ expression: ModelCore.Expression, in scope: Scope) throws(ModelError) -> Operand {
        switch expression {
        case .literal(let value):
            return .value(value)
        case .object(let id):
            return .object(reader.reference(to: id))
        case .list(let items):
            var operands: [Operand] = []
            for item in items { operands.append(try evaluate(item, in: scope)) }
            return .list(operands)
        case .keyPath(let path):
            let (resolved, start) = try resolve(path, in: scope)
            return reader.walk(resolved, from: start)
        case .entityName(let variable):
            let object = variable.flatMap { scope.variables[$0]?.object } ?? scope.object
            return .value(reader.state.row(object).map { .string($0.entity) } ?? .null)
        case .arithmetic(let op, let a, let b):
            guard case .value(let x) = try evaluate(a, in: scope), case .value(let y) = try evaluate(b, in: scope) else {
                return .value(.null)
            }
            return .value(ValueArithmetic.apply(op, x, y))
        case .collection(let function, let path, let attribute):
            let (resolved, start) = try resolve(path, in: scope)
            let related = reader.objects(along: resolved, from: start)
            return .value(Self.collect(function, attribute.flatMap(resolved.end.attribute), related.compactMap(reader.state.row)))
        case .subqueryCount(let collection, let variable, let predicate):
            let (resolved, start) = try resolve(collection, in: scope)
            var inner = scope
            var count: Int64 = 0
            for object in reader.objects(along: resolved, from: start) {
                inner.variables[variable] = (object, resolved.end)
                if try holds(predicate, in: inner) { count += 1 }
            }
            return .value(.int(count))
        }
    }

    /// `@count`, `@sum`, `@avg`, `@min`, `@max` over related rows: `@count` counts objects, the
    /// others ignore nils; `@sum` of nothing is 0 of the attribute's type, `@avg`, `@min` and
    /// `@max` of nothing are nil.
    static func collect(_ function: CollectionFunction, _ attribute: AttributeDescription?, _ rows: [Row]) -> Value {
        guard function != .count else { return .int(Int64(rows.count)) }
        guard let attribute else { return .null }
        let values = rows.map { $0.value(attribute.name) }
        switch function {
        case .count:
            return .int(Int64(rows.count))
        case .sum:
            var accumulator = NumericAccumulator()
            for value in values { accumulator.add(value) }
            let sum = accumulator.sum(as: attribute.type)
            return sum.isNull ? zero(of: attribute.type) : sum
        case .avg:
            var accumulator = NumericAccumulator()
            for value in values { accumulator.add(value) }
            return accumulator.average(as: attribute.type)
        case .min:
            return extreme(values, keeping: .orderedAscending)
        case .max:
            return extreme(values, keeping: .orderedDescending)
        }
    }

    /// The least (`.orderedAscending`) or greatest (`.orderedDescending`) non-nil value, or nil.
    static func extreme(_ values: [Value], keeping direction: ComparisonResult) -> Value {
        var best = Value.null
        for value in values where !value.isNull {
            if best.isNull || Value.compare(value, best) == direction { best = value }
        }
        return best
    }

    static func zero(of type: AttributeType) -> Value {
        switch type {
        case .int: .int(0)
        case .decimal: .decimal(0)
        default: .double(0)
        }
    }
}
