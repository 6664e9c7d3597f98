import ModelCore

/// A `StoreFetchRequest` read by hand into a ``FetchDescriptor``, as the daemon reads a fetch it
/// answers at once: SwiftProtobuf's reading of the message (a storage class per node of the
/// predicate, each field through a generic visitor) and then its conversion cost the daemon
/// about 26,000 instructions a query, more than writing fifty objects' URIs.
///
/// Only the plain form is read here, the form every client writes: each singular field at most
/// once, one kind set in each `oneof`, predicates of constants, comparisons, `and`, `or` and
/// `not` over key paths, literals, object URIs and lists, nested no deeper than
/// ``maximumDepth``. Anything else, and anything the conversion would refuse, gives nil, for
/// the caller to read with SwiftProtobuf and ``FetchDescriptor/init(wire:)``, which accept and
/// refuse as they always have: the two readings give the same descriptor wherever both read
/// (`FetchRequestFieldsTests`).
public struct FetchRequestFields: Sendable {
    /// The store's name (field 1).
    public let store: String
    /// The fetch (field 2), as ``FetchDescriptor/init(wire:)`` makes it.
    public let descriptor: FetchDescriptor
    /// The fetch's `batch_size`.
    public let batchSize: Int32

    /// How deeply predicates and expressions may nest here: deeper ones are left to
    /// SwiftProtobuf, whose own limit then applies.
    static let maximumDepth = 32

    public init?(serialized bytes: [UInt8]) {
        let read = try? ProtobufReader.reading(bytes) { (reader) throws(ModelError) -> FetchRequestFields? in
            var store: String?, fetch: (FetchDescriptor, Int32)?
            while let (field, type) = try reader.tag() {
                switch (field, type) {
                case (1, 2) where store == nil: store = try reader.string()
                case (2, 2) where fetch == nil:
                    guard let read = try Self.fetch(reader.message()) else { return nil }
                    fetch = read
                default: return nil
                }
            }
            // No fetch reads as an empty one, as SwiftProtobuf's default message does.
            if fetch == nil { fetch = try Self.fetch(.empty) }
            guard let (descriptor, batchSize) = fetch else { return nil }
            return FetchRequestFields(store: store ?? "", descriptor: descriptor, batchSize: batchSize)
        }
        guard let read = read ?? nil else { return nil }
        self = read
    }

    private init(store: String, descriptor: FetchDescriptor, batchSize: Int32) {
        self.store = store
        self.descriptor = descriptor
        self.batchSize = batchSize
    }

    /// A `FetchRequest`, or nil when it is not in the plain form.
    private static func fetch(_ message: ProtobufReader) throws(ModelError) -> (FetchDescriptor, Int32)? {
        var reader = message
        var seen: UInt16 = 0
        var entity = "", predicate: Predicate?, sort: [SortDescriptor] = [], offset: Int64 = 0, limit: Int64?
        var excludeSubentities = false, properties: [String]?, prefetch: [PropertyPath] = []
        var resultType = FetchDescriptor.ResultType.objects, batchSize: Int32 = 0
        while let (field, type) = try reader.tag() {
            // Repeated fields may come again; a singular one that comes twice is left to SwiftProtobuf.
            if field != 3, field != 8 {
                guard field <= 10, seen & (1 << field) == 0 else { return nil }
                seen |= 1 << field
            }
            switch (field, type) {
            case (1, 2): entity = try reader.string()
            case (2, 2):
                guard let read = try Self.predicate(reader.message()) else { return nil }
                predicate = read
            case (3, 2):
                guard let key = try Self.sortKey(reader.message()) else { return nil }
                sort.append(key)
            case (4, 0): offset = Int64(bitPattern: try reader.varint())
            case (5, 0): limit = Int64(bitPattern: try reader.varint())
            case (6, 0): excludeSubentities = try reader.varint() != 0
            case (7, 2):
                var names: [String] = [], selection = try reader.message()
                while let (field, type) = try selection.tag() {
                    guard (field, type) == (1, 2) else { return nil }
                    names.append(try selection.string())
                }
                properties = names
            case (8, 2): prefetch.append(try PropertyPath(dotted: try reader.string()))
            case (9, 0):
                switch try reader.varint() {
                case 0: resultType = .objects
                case 1: resultType = .identifiers
                case 2: resultType = .count
                default: return nil
                }
            case (10, 0): batchSize = Int32(truncatingIfNeeded: try reader.varint())
            default: return nil
            }
        }
        let descriptor = FetchDescriptor(
            entityName: entity, predicate: predicate, sortBy: sort, offset: try WireNumbers.int(offset, "offset"),
            limit: try limit.map { (limit) throws(ModelError) in try WireNumbers.int(limit, "limit") },
            includesSubentities: !excludeSubentities, propertiesToFetch: properties,
            relationshipKeyPathsForPrefetching: prefetch, resultType: resultType)
        return (descriptor, batchSize)
    }

    private static func sortKey(_ message: ProtobufReader) throws(ModelError) -> SortDescriptor? {
        var reader = message
        var path: String?, descending = false, caseInsensitive = false, seen: UInt8 = 0
        while let (field, type) = try reader.tag() {
            guard field <= 3, seen & (1 << field) == 0 else { return nil }
            seen |= 1 << field
            switch (field, type) {
            case (1, 2): path = try reader.string()
            case (2, 0): descending = try reader.varint() != 0
            case (3, 0): caseInsensitive = try reader.varint() != 0
            default: return nil
            }
        }
        return SortDescriptor(
            try PropertyPath(dotted: path ?? ""), ascending: !descending, caseInsensitive: caseInsensitive)
    }

    /// A `Predicate` message: text, parsed as ``Modeld_V1_Predicate/model()`` parses it, or a
    /// tree; an empty message is no predicate (`.some(nil)`). Nil when it is not in the plain form.
    private static func predicate(_ message: ProtobufReader) throws(ModelError) -> Predicate?? {
        var reader = message
        guard let (field, type) = try reader.tag() else { return .some(nil) }
        let predicate: Predicate
        switch (field, type) {
        case (1, 2): predicate = try PredicateParser.parse(try reader.string())
        case (2, 2):
            guard let node = try node(reader.message(), depth: 0) else { return nil }
            predicate = node
        default: return nil
        }
        guard try reader.tag() == nil else { return nil }
        return .some(predicate)
    }

    /// A `PredicateNode`: exactly one kind set.
    private static func node(_ message: ProtobufReader, depth: Int) throws(ModelError) -> Predicate? {
        guard depth < maximumDepth else { return nil }
        var reader = message
        guard let (field, type) = try reader.tag() else { return nil }
        let predicate: Predicate
        switch (field, type) {
        case (1, 0): predicate = .constant(try reader.varint() != 0)
        case (2, 2):
            guard let comparison = try comparison(reader.message(), depth: depth + 1) else { return nil }
            predicate = .comparison(comparison)
        case (3, 2), (4, 2):
            var list = try reader.message(), parts: [Predicate] = []
            while let (field, type) = try list.tag() {
                guard (field, type) == (1, 2), let part = try node(list.message(), depth: depth + 1) else { return nil }
                parts.append(part)
            }
            guard parts.count >= 2 else { return nil }
            predicate = field == 3 ? .and(parts) : .or(parts)
        case (5, 2):
            guard let inner = try node(reader.message(), depth: depth + 1) else { return nil }
            predicate = .not(inner)
        default: return nil
        }
        guard try reader.tag() == nil else { return nil }
        return predicate
    }

    private static func comparison(_ message: ProtobufReader, depth: Int) throws(ModelError) -> Comparison? {
        var reader = message
        var lhs: Expression?, rhs: Expression?, op: ComparisonOperator?, modifier = ComparisonModifier.direct
        var options: StringOptions = [], seen: UInt8 = 0
        while let (field, type) = try reader.tag() {
            guard field <= 6, seen & (1 << field) == 0 else { return nil }
            seen |= 1 << field
            switch (field, type) {
            case (1, 2), (3, 2):
                guard let side = try expression(reader.message(), depth: depth + 1) else { return nil }
                if field == 1 { lhs = side } else { rhs = side }
            case (2, 0):
                // Unknown numbers (and 0, unspecified) are in no pair: SwiftProtobuf's reading refuses them.
                let number = try reader.varint()
                guard number <= UInt64(Int32.max),
                    let (known, _) = WireTables.comparison.first(where: {
                        $0.1 == Modeld_V1_ComparisonOperator(rawValue: Int(number))
                    })
                else { return nil }
                op = known
            case (4, 0):
                switch try reader.varint() {
                case 0: modifier = .direct
                case 1: modifier = .any
                case 2: modifier = .all
                case 3: modifier = .none
                default: return nil
                }
            case (5, 0): if try reader.varint() != 0 { options.insert(.caseInsensitive) }
            case (6, 0): if try reader.varint() != 0 { options.insert(.diacriticInsensitive) }
            default: return nil
            }
        }
        guard let op, let lhs, let rhs else { return nil }
        return Comparison(lhs, op, rhs, modifier: modifier, options: options)
    }

    /// An `ExpressionNode` that is a key path, a literal, an object's URI or a list of those;
    /// nil for the other kinds.
    private static func expression(_ message: ProtobufReader, depth: Int) throws(ModelError) -> Expression? {
        guard depth < maximumDepth else { return nil }
        var reader = message
        guard let (field, type) = try reader.tag() else { return nil }
        let expression: Expression
        switch (field, type) {
        case (1, 2):
            guard let path = try keyPath(reader.message()) else { return nil }
            expression = .keyPath(path)
        case (2, 2):
            var value = try reader.message()
            guard let (field, type) = try value.tag() else {
                expression = .literal(.null)
                break
            }
            guard let literal = try value.valueKind(field, type), try value.tag() == nil else { return nil }
            expression = .literal(literal)
        case (3, 2): expression = .object(try PersistentIdentifier(uri: try reader.string()))
        case (4, 2):
            var list = try reader.message(), items: [Expression] = []
            while let (field, type) = try list.tag() {
                guard (field, type) == (1, 2), let item = try self.expression(list.message(), depth: depth + 1)
                else { return nil }
                items.append(item)
            }
            expression = .list(items)
        default: return nil
        }
        guard try reader.tag() == nil else { return nil }
        return expression
    }

    /// A `KeyPath`, its names checked as ``PropertyPath/init(wire:)`` checks them.
    private static func keyPath(_ message: ProtobufReader) throws(ModelError) -> PropertyPath? {
        var reader = message
        var variable: String?, components: [String] = []
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2) where variable == nil: variable = try reader.string()
            case (2, 2): components.append(try reader.string())
            default: return nil
            }
        }
        let named = variable.flatMap { $0.isEmpty ? nil : $0 }
        guard components.allSatisfy(SchemaNames.isWellFormed), named.map(SchemaNames.isWellFormed) ?? true
        else { return nil }
        return PropertyPath(components, variable: named)
    }
}
