import Foundation
import ModelCore

extension PredicateEvaluator {
    /// Evaluates one compiled expression in `scope`.
    func evaluate(_ expression: CompiledExpression, in scope: Scope) -> Operand {
        switch expression {
        case .value(let value):
            return .value(value)
        case .object(let ref):
            return .object(ref)
        case .list(let items):
            return .list(items.map { evaluate($0, in: scope) })
        case .path(let path, let variable):
            let start = scope.start(variable)
            return reader.walk(path, from: start.ref, row: start.row)
        case .entityName(let variable):
            let start = scope.start(variable)
            return .value((start.row ?? start.ref.flatMap(reader.state.row)).map { .string($0.entity) } ?? .null)
        case .arithmetic(let op, let a, let b):
            guard case .value(let x) = evaluate(a, in: scope), case .value(let y) = evaluate(b, in: scope) else {
                return .value(.null)
            }
            return .value(ValueArithmetic.apply(op, x, y))
        case .collection(let function, let path, let variable, let attribute):
            let start = scope.start(variable)
            let related = reader.objects(along: path, from: start.ref, row: start.row)
            return .value(Self.collect(function, attribute, related.compactMap(reader.state.row)))
        case .subqueryCount(let collection, let variable, let binds, let predicate):
            let start = scope.start(variable)
            var inner = scope
            var count: Int64 = 0
            for object in reader.objects(along: collection, from: start.ref, row: start.row) {
                inner.variables[binds] = object
                if holds(predicate, in: inner) { count += 1 }
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
