import Foundation
import ModelCore
import ModelFixtures

/// One random request of the differential test: a fetch, maybe an aggregate with the same
/// entity and predicate, and maybe a context's pending changes to answer them over.
struct DifferentialCase {
    var fetch: FetchDescriptor
    var aggregate: AggregateDescriptor?
    var overlay: ChangeSet?
}

/// Generates random requests over ``Workshop``'s schema: mostly well-typed predicates of every
/// kind (so that they run and match something), now and then an ill-typed one (so that both
/// backends must fail alike). Two generators with the same seed generate the same requests,
/// each naming objects in its own store.
struct QueryGenerator {
    var random: SeededRandom
    let store: TestStore
    /// How many of each kind of comparison were generated, to check every kind ran.
    private(set) var tally: [String: Int] = [:]

    init(seed: UInt64, store: TestStore) {
        random = SeededRandom(seed: seed)
        self.store = store
    }

    /// Where key paths start: the fetched object, or a SUBQUERY variable bound to an entity.
    struct Root {
        var entity: String
        var variable: String?
    }

    mutating func next() -> DifferentialCase {
        let entity = random.pick(["Thing", "Thing", "Thing", "Gadget", "Gizmo", "Box", "Tag"])
        let predicate = random.chance(0.92) ? predicate([Root(entity: entity)], depth: random.int(0...3)) : nil
        var fetch = FetchDescriptor(entityName: entity, predicate: predicate)
        fetch.sortBy = (0..<random.int(0...3)).map { _ in sort(entity) }
        if random.chance(0.2) { fetch.offset = random.int(0...10) }
        if random.chance(0.25) { fetch.limit = random.int(0...20) }
        if random.chance(0.15) { fetch.includesSubentities = false }
        fetch.resultType = random.pick([.objects, .objects, .objects, .objects, .identifiers, .count])
        if random.chance(0.1) {
            let names =
                Workshop.attributes(of: entity).map(\.name) + Workshop.toOne(of: entity).map(\.name)
                + Workshop.toMany(of: entity).map(\.name)
            fetch.propertiesToFetch = names.filter { _ in random.chance(0.4) }
        }
        if random.chance(0.1) {
            let paths =
                Workshop.toOne(of: entity).map(\.name) + Workshop.toMany(of: entity).map(\.name)
                + (Workshop.root(of: entity) == "Thing" ? ["box.parent"] : [])
            fetch.relationshipKeyPathsForPrefetching = paths.filter { _ in random.chance(0.5) }.map {
                PropertyPath(stringLiteral: $0)
            }
        }
        let aggregate = random.chance(0.3) ? aggregate(entity, predicate: predicate) : nil
        let overlay = random.chance(0.2) ? overlay() : nil
        return DifferentialCase(fetch: fetch, aggregate: aggregate, overlay: overlay)
    }

    // MARK: Predicates

    /// A predicate whose key paths start at any of `roots` (innermost SUBQUERY variable first).
    private mutating func predicate(_ roots: [Root], depth: Int) -> Predicate {
        let choice = depth <= 0 ? random.int(0...7) : random.int(0...11)
        switch choice {
        case 0...6:
            return comparison(roots, depth: depth)
        case 7:
            return .constant(random.chance(0.5))
        case 8, 9:
            let parts = (0..<random.int(2...3)).map { _ in predicate(roots, depth: depth - 1) }
            return choice == 8 ? .and(parts) : .or(parts)
        default:
            return .not(predicate(roots, depth: depth - 1))
        }
    }

    private mutating func pickRoot(_ roots: [Root]) -> Root {
        roots.count > 1 && random.chance(0.7) ? roots[0] : random.pick(roots)
    }

    private mutating func comparison(_ roots: [Root], depth: Int) -> Predicate {
        let root = pickRoot(roots)
        switch random.int(0...19) {
        case 0...6: return scalarComparison(root)
        case 7: return nilTest(root)
        case 8: return pathComparison(root)
        case 9: return listComparison(root)
        case 10, 11: return arithmetic(root)
        case 12, 13: return quantified(root)
        case 14, 15: return collection(root)
        case 16, 17: return subquery(roots, from: root, depth: depth)
        case 18: return entityTest(root)
        default: return objectComparison(root)
        }
    }

    mutating func count(_ kind: String) { tally[kind, default: 0] += 1 }

    /// A path from `root` through up to two to-one relationships to an attribute.
    mutating func scalarPath(_ root: Root) -> (path: PropertyPath, type: AttributeType) {
        var entity = root.entity
        var components: [String] = []
        while components.count < 2, !Workshop.toOne(of: entity).isEmpty, random.chance(0.25) {
            let relationship = random.pick(Workshop.toOne(of: entity))
            components.append(relationship.name)
            entity = relationship.destination
        }
        let attribute = random.pick(Workshop.attributes(of: entity))
        return (PropertyPath(components + [attribute.name], variable: root.variable), attribute.type)
    }

    private mutating func op(for type: AttributeType) -> ComparisonOperator {
        switch type {
        case .string:
            random.pick([
                .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual,
                .contains, .beginsWith, .endsWith, .like, .like,
            ])
        case .int, .double, .decimal, .date, .uuid, .url:
            random.pick([.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual])
        default: random.pick([.equal, .notEqual])
        }
    }

    /// A literal to compare with a value of `type` under `op`: mostly of that type, sometimes a
    /// number of another numeric type or a date as text, rarely nil or a value of a wrong type.
    private mutating func literal(_ type: AttributeType, _ op: ComparisonOperator) -> Value {
        if random.chance(0.03) { return .null }
        if random.chance(0.02) { return ValuePools.value(random.pick(AttributeType.allCases), &random) }
        switch type {
        case .string where [.contains, .beginsWith, .endsWith].contains(op):
            return .string(random.chance(0.6) ? random.pick(ValuePools.fragments) : random.pick(ValuePools.strings))
        case .string where op == .like:
            return .string(random.pick(ValuePools.patterns))
        case .int where random.chance(0.2), .decimal where random.chance(0.3):
            return .double(random.pick(ValuePools.doubles))
        case .double where random.chance(0.3), .decimal where random.chance(0.3):
            return .int(ValuePools.int(&random))
        case .date where random.chance(0.2):
            return .string(ValuePools.date(&random).iso8601)
        default:
            return ValuePools.value(type, &random)
        }
    }

    private mutating func options(_ type: AttributeType) -> StringOptions {
        guard type == .string else { return [] }
        var options: StringOptions = []
        if random.chance(0.3) { options.insert(.caseInsensitive) }
        if random.chance(0.3) { options.insert(.diacriticInsensitive) }
        return options
    }

    private mutating func scalarComparison(_ root: Root) -> Predicate {
        count("scalar")
        let (path, type) = scalarPath(root)
        let op = op(for: type)
        let value = literal(type, op)
        let comparison = Comparison(.keyPath(path), op, .literal(value), options: options(type))
        // Now and then the literal on the left, as NSPredicate allows.
        if random.chance(0.1), !op.isStringOperator {
            return .comparison(Comparison(.literal(value), op, .keyPath(path), options: comparison.options))
        }
        return .comparison(comparison)
    }

    private mutating func nilTest(_ root: Root) -> Predicate {
        count("nil")
        let op: ComparisonOperator = random.pick([.equal, .notEqual])
        let toOne = Workshop.toOne(of: root.entity)
        if !toOne.isEmpty, random.chance(0.3) {
            let path = PropertyPath([random.pick(toOne).name], variable: root.variable)
            return .comparison(Comparison(.keyPath(path), op, .literal(.null)))
        }
        return .comparison(Comparison(.keyPath(scalarPath(root).path), op, .literal(.null)))
    }

    /// Two key paths of the same (or both numeric) type.
    private mutating func pathComparison(_ root: Root) -> Predicate {
        count("paths")
        let (left, type) = scalarPath(root)
        var candidates: [(PropertyPath, AttributeType)] = []
        for _ in 0..<8 {
            let other = scalarPath(root)
            if other.type == type
                || (other.type.isNumeric && type.isNumeric && other.type != .decimal && type != .decimal)
            {
                candidates.append(other)
            }
        }
        let right = candidates.first ?? (left, type)
        let op = op(for: type)
        return .comparison(Comparison(.keyPath(left), op, .keyPath(right.0), options: options(type)))
    }

    private mutating func listComparison(_ root: Root) -> Predicate {
        count("list")
        let (path, type) = scalarPath(root)
        if random.chance(0.6) || [.bool, .data, .json].contains(type) {
            let items = (0..<random.int(0...4)).map { _ in
                Expression.literal(random.chance(0.1) ? .null : literal(type, .equal))
            }
            return .comparison(Comparison(.keyPath(path), .in, .list(items), options: options(type)))
        }
        let bounds = [literal(type, .less), literal(type, .less)].map { Expression.literal($0) }
        return .comparison(Comparison(.keyPath(path), .between, .list(bounds), options: options(type)))
    }

    private mutating func arithmetic(_ root: Root) -> Predicate {
        count("arithmetic")
        let numeric: [PropertyPath] = {
            var prefix: [String] = []
            if Workshop.root(of: root.entity) == "Box" { return [PropertyPath(["weight"], variable: root.variable)] }
            if root.entity == "Tag" { return [] }
            if random.chance(0.2) { prefix = ["box"] }
            return prefix.isEmpty
                ? ["qty", "price"].map { PropertyPath([$0], variable: root.variable) }
                : [PropertyPath(["box", "weight"], variable: root.variable)]
        }()
        let dateOnly =
            root.entity == "Tag"
            ? [] : [PropertyPath([Workshop.root(of: root.entity) == "Box" ? "opened" : "at"], variable: root.variable)]
        if !dateOnly.isEmpty, random.chance(0.35) {
            let at = Expression.keyPath(dateOnly[0])
            if random.chance(0.5) {
                // date ± seconds compared with a date
                let seconds = Expression.literal(
                    random.chance(0.5)
                        ? .int(Int64(random.int(-5...5)) * 86_400) : .double(Double(random.int(-100...100)) * 1234.5))
                let sum = Expression.arithmetic(random.pick([.add, .subtract]), at, seconds)
                return .comparison(
                    Comparison(
                        sum, random.pick([.less, .greater, .equal, .lessOrEqual]),
                        .literal(.date(ValuePools.date(&random)))))
            }
            // date − date compared with seconds
            let other = Expression.literal(.date(ValuePools.date(&random)))
            let difference = Expression.arithmetic(.subtract, at, other)
            return .comparison(
                Comparison(
                    difference, random.pick([.less, .greater]), .literal(.double(Double(random.int(-30...30)) * 86_400))
                ))
        }
        guard !numeric.isEmpty else { return scalarComparison(root) }
        let left = Expression.keyPath(random.pick(numeric))
        let right: Expression =
            random.chance(0.3)
            ? .keyPath(random.pick(numeric))
            : .literal(random.chance(0.5) ? .int(ValuePools.int(&random)) : .double(random.pick(ValuePools.doubles)))
        let expression = Expression.arithmetic(random.pick(ArithmeticOperator.allCases), left, right)
        let bound: Value = random.chance(0.5) ? .int(ValuePools.int(&random)) : .double(random.pick(ValuePools.doubles))
        return .comparison(Comparison(expression, op(for: .double), .literal(bound)))
    }

    /// `ANY`/`ALL`/`NONE` over a to-many relationship: an attribute of the related objects (maybe
    /// through a to-one), or the related objects themselves.
    private mutating func quantified(_ root: Root) -> Predicate {
        count("quantified")
        let relationship = random.pick(Workshop.toMany(of: root.entity))
        let modifier = random.pick([ComparisonModifier.any, .any, .all, .none])
        if random.chance(0.15) {
            let path = PropertyPath([relationship.name], variable: root.variable)
            let target = object(relationship.destination)
            return .comparison(
                Comparison(.keyPath(path), random.pick([.equal, .notEqual]), .object(target), modifier: modifier))
        }
        let (inner, type) = scalarPath(Root(entity: relationship.destination))
        let path = PropertyPath([relationship.name] + inner.components, variable: root.variable)
        let op = random.chance(0.15) ? ComparisonOperator.in : op(for: type)
        let rhs: Expression =
            op == .in
            ? .list((0..<random.int(1...3)).map { _ in .literal(literal(type, .equal)) })
            : .literal(literal(type, op))
        return .comparison(Comparison(.keyPath(path), op, rhs, modifier: modifier, options: options(type)))
    }

    /// `@count`, `@sum`, `@avg`, `@min`, `@max` over a to-many relationship.
    private mutating func collection(_ root: Root) -> Predicate {
        count("collection")
        let relationship = random.pick(Workshop.toMany(of: root.entity))
        let path = PropertyPath([relationship.name], variable: root.variable)
        let function = random.pick(CollectionFunction.allCases)
        if function == .count {
            return .comparison(
                Comparison(
                    .collection(.count, path, attribute: nil), op(for: .int), .literal(.int(Int64(random.int(0...4))))))
        }
        var attributes = Workshop.attributes(of: relationship.destination).filter {
            $0.type.isNumeric || (function != .sum && function != .avg && ($0.type == .date || $0.type == .string))
        }
        // Tag: ill-typed for @sum/@avg, which must fail alike
        if attributes.isEmpty { attributes = [("name", .string)] }
        let attribute = random.pick(attributes)
        let type: AttributeType = function == .avg && attribute.type == .int ? .double : attribute.type
        return .comparison(
            Comparison(
                .collection(function, path, attribute: attribute.name), op(for: type == .string ? .int : type),
                .literal(literal(type, .less))))
    }

    private mutating func subquery(_ roots: [Root], from root: Root, depth: Int) -> Predicate {
        count("subquery")
        let relationship = random.pick(Workshop.toMany(of: root.entity))
        let variable = "v\(roots.count)"
        let inner = predicate(
            [Root(entity: relationship.destination, variable: variable)] + roots, depth: max(depth - 1, 0))
        let expression = Expression.subqueryCount(
            collection: PropertyPath([relationship.name], variable: root.variable),
            variable: variable, predicate: inner)
        return .comparison(Comparison(expression, op(for: .int), .literal(.int(Int64(random.int(0...3))))))
    }

    private mutating func entityTest(_ root: Root) -> Predicate {
        count("entity")
        let names = ["Thing", "Gadget", "Gizmo", "Box"]
        if random.chance(0.3) {
            let items = (0..<random.int(1...3)).map { _ in Expression.literal(.string(random.pick(names))) }
            return .comparison(Comparison(.entityName(variable: root.variable), .in, .list(items)))
        }
        return .comparison(
            Comparison(
                .entityName(variable: root.variable), random.pick([.equal, .notEqual]),
                .literal(.string(random.pick(names)))))
    }

    /// A to-one relationship, `self`, or a to-one through a to-one, compared with an object.
    private mutating func objectComparison(_ root: Root) -> Predicate {
        count("object")
        let op: ComparisonOperator = random.pick([.equal, .notEqual])
        let toOne = Workshop.toOne(of: root.entity)
        if toOne.isEmpty || random.chance(0.3) {
            return .comparison(
                Comparison(.keyPath(PropertyPath([], variable: root.variable)), op, .object(object(root.entity))))
        }
        let relationship = random.pick(toOne)
        let components = random.chance(0.3) ? [relationship.name, "parent"] : [relationship.name]
        return .comparison(
            Comparison(.keyPath(PropertyPath(components, variable: root.variable)), op, .object(object("Box"))))
    }

    /// An object of `entity`'s hierarchy, by a key that may name a deleted object or none.
    private mutating func object(_ entity: String) -> PersistentIdentifier {
        let count =
            Workshop.root(of: entity) == "Thing"
            ? Workshop.thingCount : Workshop.root(of: entity) == "Box" ? Workshop.boxCount : Workshop.tagCount
        return store.id(entity, Int64(random.int(1...(count + 1))))
    }
}
