import ModelCore
import ModelStorage

/// What an expression evaluates to for one object.
enum Operand {
    /// An attribute value (``Value/null`` for nil).
    case value(Value)
    /// A reference to an object, or nil. A stored key whose object is gone still counts as a
    /// reference (it compares by key, as in SQL).
    case object(ObjectRef?)
    /// One operand per object reached through a to-many relationship (for ANY, ALL, NONE).
    case many([Operand])
    /// A `{…}` list (the right side of IN and BETWEEN).
    case list([Operand])

    /// Whether this is a nil value or no object.
    var isNil: Bool {
        switch self {
        case .value(let v): v.isNull
        case .object(let ref): ref == nil
        case .many, .list: false
        }
    }
}

extension StoreReader {
    /// Walks `path` from `start` (the object the path starts at, or nil). Through to-one
    /// relationships the result is one operand: an attribute value, nil when a relationship on the
    /// way is nil or dangles, or an object reference at the end. Through a to-many relationship
    /// it is ``Operand/many(_:)``, one operand per related object, in key order.
    func walk(_ path: ResolvedPath, from start: ObjectRef?, row: Row? = nil) -> Operand {
        step(path, 0, start, row ?? start.flatMap(state.row))
    }

    private func step(_ path: ResolvedPath, _ index: Int, _ ref: ObjectRef?, _ row: Row?) -> Operand {
        if index == path.relationships.count {
            if let attribute = path.attribute { return .value(row?.value(attribute.name) ?? .null) }
            return .object(ref)
        }
        guard let ref, let row else {
            if let toMany = path.toManyIndex, toMany >= index { return .many([]) }
            return path.attribute == nil ? .object(nil) : .value(.null)
        }
        let relationship = path.relationships[index]
        if relationship.isToMany {
            return .many(toMany(ref, relationship).map { step(path, index + 1, $0, state.row($0)) })
        }
        let target = toOne(ref, row, relationship)
        return step(path, index + 1, target, target.flatMap(state.row))
    }

    /// The single value `path` (an attribute path through to-one relationships only) reaches
    /// from `ref`: what sorts and group keys use.
    func value(of path: ResolvedPath, from ref: ObjectRef) -> Value {
        if case .value(let value) = walk(path, from: ref) { return value }
        return .null
    }

    /// The existing objects reached along a relationship path from `ref` (the end of the path),
    /// in key order within each to-many step.
    func objects(along path: ResolvedPath, from ref: ObjectRef?, row: Row? = nil) -> [ObjectRef] {
        func collect(_ operand: Operand) -> [ObjectRef] {
            switch operand {
            case .object(let target?): state.row(target) == nil ? [] : [target]
            case .many(let items): items.flatMap(collect)
            default: []
            }
        }
        return collect(walk(path, from: ref, row: row))
    }
}
