import ModelCore

// The Swift types each store attribute type holds. Integers of any width are ints (checked on
// the way back), floats are doubles, dates are kept to the microsecond.

extension String: AttributePrimitive {
    static var attributeType: AttributeType { .string }
    func attributeValue() throws(ModelError) -> Value { .string(self) }
    init?(attributeValue: Value) {
        guard case .string(let v) = attributeValue else { return nil }
        self = v
    }
}

extension Bool: AttributePrimitive {
    static var attributeType: AttributeType { .bool }
    func attributeValue() throws(ModelError) -> Value { .bool(self) }
    init?(attributeValue: Value) {
        guard case .bool(let v) = attributeValue else { return nil }
        self = v
    }
}

/// Fixed-width integers share one implementation.
protocol IntegerAttribute: AttributePrimitive, FixedWidthInteger {}

extension IntegerAttribute {
    static var attributeType: AttributeType { .int }
    func attributeValue() throws(ModelError) -> Value {
        guard let v = Int64(exactly: self) else {
            throw ModelError(.typeMismatch, "\(self) is too large for the store's 64-bit integers")
        }
        return .int(v)
    }
    init?(attributeValue: Value) {
        guard case .int(let v) = attributeValue, let exact = Self(exactly: v) else { return nil }
        self = exact
    }
}

extension Int: IntegerAttribute {}
extension Int8: IntegerAttribute {}
extension Int16: IntegerAttribute {}
extension Int32: IntegerAttribute {}
extension Int64: IntegerAttribute {}
extension UInt: IntegerAttribute {}
extension UInt8: IntegerAttribute {}
extension UInt16: IntegerAttribute {}
extension UInt32: IntegerAttribute {}
extension UInt64: IntegerAttribute {}

extension Double: AttributePrimitive {
    static var attributeType: AttributeType { .double }
    func attributeValue() throws(ModelError) -> Value { .double(self) }
    init?(attributeValue: Value) {
        switch attributeValue {
        case .double(let v): self = v
        case .int(let v): self = Double(v)
        default: return nil
        }
    }
}

extension Float: AttributePrimitive {
    static var attributeType: AttributeType { .double }
    func attributeValue() throws(ModelError) -> Value { .double(Double(self)) }
    init?(attributeValue: Value) {
        guard let v = Double(attributeValue: attributeValue) else { return nil }
        self = Float(v)
    }
}

extension Date: AttributePrimitive {
    static var attributeType: AttributeType { .date }
    func attributeValue() throws(ModelError) -> Value { .date(Timestamp(self)) }
    init?(attributeValue: Value) {
        guard case .date(let v) = attributeValue else { return nil }
        self = v.date
    }
}

extension Data: AttributePrimitive {
    static var attributeType: AttributeType { .data }
    func attributeValue() throws(ModelError) -> Value { .data(self) }
    init?(attributeValue: Value) {
        guard case .data(let v) = attributeValue else { return nil }
        self = v
    }
}

extension UUID: AttributePrimitive {
    static var attributeType: AttributeType { .uuid }
    func attributeValue() throws(ModelError) -> Value { .uuid(self) }
    init?(attributeValue: Value) {
        guard case .uuid(let v) = attributeValue else { return nil }
        self = v
    }
}

extension URL: AttributePrimitive {
    static var attributeType: AttributeType { .url }
    func attributeValue() throws(ModelError) -> Value { .url(self) }
    init?(attributeValue: Value) {
        guard case .url(let v) = attributeValue else { return nil }
        self = v
    }
}

extension Decimal: AttributePrimitive {
    static var attributeType: AttributeType { .decimal }
    func attributeValue() throws(ModelError) -> Value { .decimal(self) }
    init?(attributeValue: Value) {
        switch attributeValue {
        case .decimal(let v): self = v
        case .int(let v): self = Decimal(v)
        default: return nil
        }
    }
}
