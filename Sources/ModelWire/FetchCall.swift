import ModelCore

/// A `StoreFetchRequest` written by hand from its descriptor: the bytes SwiftProtobuf writes for
/// the message built from it (``wire``), without building that message (a storage class per
/// predicate node, each field through a generic visitor): about 19,000 of a query's client
/// instructions. Predicates of constants, comparisons, `and`, `or` and `not` over key paths,
/// literals, objects and lists are written by hand; a descriptor with any other expression is
/// written by SwiftProtobuf. `FetchCallTests` compare the two on random descriptors.
public struct FetchCall: Sendable {
    public let store: String
    public let descriptor: FetchDescriptor
    public let batchSize: Int32

    public init(store: String, descriptor: FetchDescriptor, batchSize: Int32 = 0) {
        self.store = store
        self.descriptor = descriptor
        self.batchSize = batchSize
    }

    /// The message these bytes are.
    public var wire: Modeld_V1_StoreFetchRequest {
        .with {
            $0.store = store
            $0.fetch = descriptor.wire
            $0.fetch.batchSize = batchSize
        }
    }

    /// The request's bytes.
    public func serializedBytes() throws -> [UInt8] {
        guard descriptor.predicate.map(Self.isPlain) ?? true else { return try wire.serializedBytes() }
        var writer = ProtobufWriter()
        if !store.isEmpty { writer.string(1, store) }
        writer.message(2) { fetch in Self.write(descriptor, batchSize: batchSize, to: &fetch) }
        return writer.bytes
    }

    /// A `FetchRequest`'s fields, in field order, the defaults left out as proto3 leaves them.
    private static func write(_ descriptor: FetchDescriptor, batchSize: Int32, to writer: inout ProtobufWriter) {
        if !descriptor.entityName.isEmpty { writer.string(1, descriptor.entityName) }
        if let predicate = descriptor.predicate {
            writer.message(2) { wire in wire.message(2) { node in write(predicate, to: &node) } }
        }
        for key in descriptor.sortBy {
            writer.message(3) { wire in
                let path = key.keyPath.description
                if !path.isEmpty { wire.string(1, path) }
                if !key.ascending { wire.flag(2) }
                if key.caseInsensitive { wire.flag(3) }
            }
        }
        if descriptor.offset != 0 { writer.number(4, Int64(descriptor.offset)) }
        if let limit = descriptor.limit { writer.number(5, Int64(limit)) }
        if !descriptor.includesSubentities { writer.flag(6) }
        if let names = descriptor.propertiesToFetch {
            writer.message(7) { wire in for name in names { wire.string(1, name) } }
        }
        for path in descriptor.relationshipKeyPathsForPrefetching { writer.string(8, path.description) }
        switch descriptor.resultType {
        case .objects: break
        case .identifiers: writer.number(9, 1)
        case .count: writer.number(9, 2)
        }
        if batchSize != 0 { writer.number(10, Int64(batchSize)) }
    }

    /// Whether `predicate` holds only what ``write(_:to:)-(Predicate,_)`` writes.
    static func isPlain(_ predicate: Predicate) -> Bool {
        switch predicate {
        case .constant: true
        case .comparison(let comparison): isPlain(comparison.lhs) && isPlain(comparison.rhs)
        case .and(let parts), .or(let parts): parts.allSatisfy(isPlain)
        case .not(let inner): isPlain(inner)
        }
    }

    private static func isPlain(_ expression: Expression) -> Bool {
        switch expression {
        case .keyPath, .literal, .object: true
        case .list(let items): items.allSatisfy(isPlain)
        default: false
        }
    }

    /// A `PredicateNode`'s one kind.
    private static func write(_ predicate: Predicate, to writer: inout ProtobufWriter) {
        switch predicate {
        case .constant(let value):
            writer.tag(1, 0)
            writer.varint(value ? 1 : 0)
        case .comparison(let comparison):
            writer.message(2) { wire in write(comparison, to: &wire) }
        case .and(let parts), .or(let parts):
            let field = if case .and = predicate { 3 } else { 4 }
            writer.message(field) { list in
                for part in parts { list.message(1) { node in write(part, to: &node) } }
            }
        case .not(let inner):
            writer.message(5) { node in write(inner, to: &node) }
        }
    }

    private static func write(_ comparison: Comparison, to writer: inout ProtobufWriter) {
        writer.message(1) { wire in write(comparison.lhs, to: &wire) }
        if let (_, op) = WireTables.comparison.first(where: { $0.0 == comparison.op }) {
            writer.number(2, Int64(op.rawValue))
        }
        writer.message(3) { wire in write(comparison.rhs, to: &wire) }
        switch comparison.modifier {
        case .direct: break
        case .any: writer.number(4, 1)
        case .all: writer.number(4, 2)
        case .none: writer.number(4, 3)
        }
        if comparison.options.contains(.caseInsensitive) { writer.flag(5) }
        if comparison.options.contains(.diacriticInsensitive) { writer.flag(6) }
    }

    /// An `ExpressionNode` of a plain kind (``isPlain(_:)-(Expression)``).
    private static func write(_ expression: Expression, to writer: inout ProtobufWriter) {
        switch expression {
        case .keyPath(let path):
            writer.message(1) { wire in
                if let variable = path.variable, !variable.isEmpty { wire.string(1, variable) }
                for component in path.components { wire.string(2, component) }
            }
        case .literal(let value): writer.message(2) { wire in wire.value(value) }
        case .object(let id): writer.string(3, id.uriRepresentation)
        case .list(let items):
            writer.message(4) { list in
                for item in items { list.message(1) { wire in write(item, to: &wire) } }
            }
        default: break
        }
    }
}

extension ProtobufWriter {
    /// A `bool` field that is true.
    fileprivate mutating func flag(_ field: Int) {
        tag(field, 0)
        bytes.append(1)
    }

    /// An `int64`, `int32` or enum field: negative numbers take ten bytes, as protobuf writes them.
    fileprivate mutating func number(_ field: Int, _ value: Int64) {
        tag(field, 0)
        varint(UInt64(bitPattern: value))
    }
}
