import ModelCore

/// Swift types stored as one of the store's attribute types.
protocol AttributePrimitive {
    static var attributeType: AttributeType { get }
    func attributeValue() throws(ModelError) -> Value
    init?(attributeValue: Value)
}

/// `Optional`, seen through `Any`.
protocol OptionalValue {
    static var wrappedType: Any.Type { get }
    static var noneValue: Any { get }
    var wrapped: Any? { get }
}

extension Optional: OptionalValue {
    static var wrappedType: Any.Type { Wrapped.self }
    static var noneValue: Any { Optional<Wrapped>.none as Any }
    var wrapped: Any? { map { $0 as Any } }
}

/// An array or set of models: the type of a to-many relationship.
protocol ToManyCollection {
    static var elementType: any PersistentModel.Type { get }
    static func make(_ objects: [AnyObject]) -> Any
    var objects: [AnyObject] { get }
    static var countKeyPath: AnyKeyPath { get }
    static var isEmptyKeyPath: AnyKeyPath { get }
}

extension Array: ToManyCollection where Element: PersistentModel {
    static var elementType: any PersistentModel.Type { Element.self }
    static func make(_ objects: [AnyObject]) -> Any { objects.map { $0 as! Element } }
    var objects: [AnyObject] { map { $0 as AnyObject } }
    static var countKeyPath: AnyKeyPath { \Self.count }
    static var isEmptyKeyPath: AnyKeyPath { \Self.isEmpty }
}

extension Set: ToManyCollection where Element: PersistentModel {
    static var elementType: any PersistentModel.Type { Element.self }
    static func make(_ objects: [AnyObject]) -> Any { Set(objects.map { $0 as! Element }) }
    var objects: [AnyObject] { map { $0 as AnyObject } }
    static var countKeyPath: AnyKeyPath { \Self.count }
    static var isEmptyKeyPath: AnyKeyPath { \Self.isEmpty }
}

/// How one attribute's Swift values become store values and back.
struct AttributeCodec {
    let type: AttributeType
    let isOptional: Bool
    /// The Swift type without its optional.
    let valueType: Any.Type
    let encode: (Any) throws(ModelError) -> Value
    let decode: (Value) throws(ModelError) -> Any
}

/// What a property's Swift type makes of it.
enum PropertyKind {
    case attribute(AttributeCodec)
    case toOne(any PersistentModel.Type, isOptional: Bool)
    case toMany(any PersistentModel.Type, collection: any ToManyCollection.Type, isOptional: Bool)

    /// Classifies `type`: a model or an optional one (to-one), an array or set of models, maybe
    /// optional (to-many), a primitive, a `RawRepresentable` of a primitive (stored as its raw
    /// value), or a `Codable` value (stored as JSON). Anything else can't be stored.
    static func of(_ type: Any.Type, property: String) throws(ModelError) -> PropertyKind {
        var wrapped = type
        var isOptional = false
        if let optional = type as? any OptionalValue.Type {
            wrapped = optional.wrappedType
            isOptional = true
            if wrapped is any OptionalValue.Type {
                throw ModelError(
                    .invalidSchema,
                    "'\(property)' has the type \(type), an optional of an optional, which can't be stored: use a single optional"
                )
            }
        }
        if let model = wrapped as? any PersistentModel.Type { return .toOne(model, isOptional: isOptional) }
        if let collection = wrapped as? any ToManyCollection.Type {
            return .toMany(collection.elementType, collection: collection, isOptional: isOptional)
        }
        if let codec = AttributeCodec.make(for: wrapped, isOptional: isOptional) { return .attribute(codec) }
        throw ModelError(
            .invalidSchema,
            "'\(property)' has the type \(type), which can't be stored: make it Codable or RawRepresentable (with a String or number raw value), a @Model class, or an array or set of models; or mark '\(property)' @Transient"
        )
    }
}

extension AttributeCodec {
    /// The codec for values of `type` (not optional), or nil if it can't be stored.
    static func make(for type: Any.Type, isOptional: Bool) -> AttributeCodec? {
        if let primitive = type as? any AttributePrimitive.Type {
            return primitiveCodec(primitive, isOptional: isOptional)
        }
        if let raw = type as? any RawRepresentable.Type, let codec = rawCodec(raw, isOptional: isOptional) {
            return codec
        }
        if let codable = type as? any Codable.Type { return jsonCodec(codable, isOptional: isOptional) }
        return nil
    }

    private static func primitiveCodec(_ type: any AttributePrimitive.Type, isOptional: Bool) -> AttributeCodec {
        func decode(_ value: Value) throws(ModelError) -> Any {
            if value.isNull, isOptional { return nullValue(type) }
            guard let decoded = type.init(attributeValue: value) else {
                throw ModelError(.typeMismatch, "the store holds \(value), which is not a \(type)")
            }
            return decoded
        }
        return AttributeCodec(
            type: type.attributeType, isOptional: isOptional, valueType: type,
            encode: { any throws(ModelError) in
                guard let value = unwrap(any) else { return .null }
                return try (value as! any AttributePrimitive).attributeValue()
            },
            decode: decode)
    }

    private static func rawCodec(_ type: any RawRepresentable.Type, isOptional: Bool) -> AttributeCodec? {
        func rawType<R: RawRepresentable>(_: R.Type) -> Any.Type { R.RawValue.self }
        guard let primitive = rawType(type) as? any AttributePrimitive.Type else { return nil }
        func make<R: RawRepresentable>(_: R.Type, _ raw: Any) -> Any? {
            (raw as? R.RawValue).flatMap { R(rawValue: $0) }
        }
        return AttributeCodec(
            type: primitive.attributeType, isOptional: isOptional, valueType: type,
            encode: { any throws(ModelError) in
                guard let value = unwrap(any) else { return .null }
                let representable = value as! any RawRepresentable
                return try (rawValue(of: representable) as! any AttributePrimitive).attributeValue()
            },
            decode: { value throws(ModelError) in
                if value.isNull, isOptional { return nullValue(type) }
                guard let rawValue = primitive.init(attributeValue: value), let decoded = make(type, rawValue) else {
                    throw ModelError(.typeMismatch, "the store holds \(value), which is not a case of \(type)")
                }
                return decoded
            })
    }

    private static func jsonCodec(_ type: any Codable.Type, isOptional: Bool) -> AttributeCodec {
        func decodeJSON<D: Decodable>(_: D.Type, _ text: String) throws -> Any {
            try JSONDecoder().decode(D.self, from: Data(text.utf8))
        }
        return AttributeCodec(
            type: .json, isOptional: isOptional, valueType: type,
            encode: { any throws(ModelError) in
                guard let value = unwrap(any) else { return .null }
                return .json(try JSONText.encode(value as! any Encodable))
            },
            decode: { value throws(ModelError) in
                if value.isNull, isOptional { return nullValue(type) }
                guard case .json(let text) = value else {
                    throw ModelError(.typeMismatch, "the store holds \(value), not the JSON of a \(type)")
                }
                do {
                    return try decodeJSON(type, text)
                } catch {
                    throw ModelError(.typeMismatch, "the store's JSON is not a \(type): \(error)")
                }
            })
    }
}

/// The raw value of a `RawRepresentable`, as `Any`.
func rawValue<R: RawRepresentable>(of value: R) -> Any { value.rawValue }

/// The value inside an optional (nil for none), or the value itself.
func unwrap(_ any: Any) -> Any? {
    if let optional = any as? any OptionalValue { return optional.wrapped.flatMap(unwrap) }
    return any
}

/// `Optional<T>.none`, as `Any`.
func nullValue(_ type: Any.Type) -> Any {
    func none<T>(_: T.Type) -> Any { Optional<T>.none as Any }
    return _openExistential(type, do: none)
}

/// JSON text of `Codable` values: keys sorted, so equal values store equal text.
enum JSONText {
    static func encode(_ value: any Encodable) throws(ModelError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch {
            throw ModelError(.typeMismatch, "\(type(of: value)) could not be encoded as JSON: \(error)")
        }
    }
}
