import Foundation
import ModelCore

/// Values from what people type and what files hold, typed by the schema.
enum ValueInput {
    /// A value of `type` from its text form: ISO 8601 dates, base64 data, decimals and JSON as
    /// text, `true`/`false`… The text of a string attribute is taken as it is.
    static func text(_ text: String, as type: AttributeType, name: String) throws -> Value {
        guard let value = Value(parsing: text, as: type) else {
            throw InputError("'\(name)' is \(type.rawValue), and \(text.debugDescription) is not \(example(type))")
        }
        return value
    }

    /// A value of `type` from JSON: null, a string in the value's text form, a number, a
    /// boolean; for JSON attributes any JSON (a string is taken as the JSON text itself).
    static func json(_ json: JSONValue, as type: AttributeType, name: String) throws -> Value {
        switch (json, type) {
        case (.null, _): return .null
        case (.string(let text), .json): return try self.text(text, as: .json, name: name)
        case (_, .json): return .json(json.text)
        case (.string(let text), .double) where text == "inf" || text == "-inf":
            // How doubles that JSON cannot hold are exported.
            return .double(text == "inf" ? .infinity : -.infinity)
        case (.string(let text), _): return try self.text(text, as: type, name: name)
        case (.bool(let flag), .bool): return .bool(flag)
        case (.number(let text), .int), (.number(let text), .double), (.number(let text), .decimal):
            if type == .int, let number = Int64(text) { return .int(number) }
            if type == .double, let number = Double(text) { return .double(number) }
            if type == .decimal, let value = Value(parsing: text, as: .decimal) { return value }
            throw InputError("'\(name)' is \(type.rawValue), and \(text) is not \(example(type))")
        default:
            throw InputError(
                "'\(name)' is \(type.rawValue), and the JSON \(json.text.prefix(40)) is not \(example(type))")
        }
    }

    /// What a value of `type` looks like, for messages.
    static func example(_ type: AttributeType) -> String {
        switch type {
        case .string: "a string"
        case .int: "a whole number such as 42"
        case .double: "a number such as 1.5"
        case .bool: "true or false"
        case .date: "an ISO 8601 date such as 2026-01-31 or 2026-01-31T12:00:00.5Z (to the microsecond)"
        case .data: "base64 data"
        case .uuid: "a UUID"
        case .url: "an absolute URL"
        case .decimal: "a decimal number such as 12.50"
        case .json: "valid JSON"
        }
    }

    /// A relationship value from text: one URI (or nothing, for nil) for a to-one; URIs separated
    /// by commas for a to-many.
    static func relationship(_ text: String, _ relationship: ResolvedRelationship) throws -> RelationshipValue {
        let parts = text.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init).filter { !$0.isEmpty }
        if relationship.isToMany { return .toMany(try parts.map(uri)) }
        guard parts.count <= 1 else {
            throw InputError("'\(relationship.name)' is to-one: give one URI, not \(parts.count)")
        }
        return .toOne(try parts.first.map(uri))
    }

    /// A relationship value from JSON: null or a URI for a to-one, an array of URIs for a to-many.
    static func relationship(json: JSONValue, _ relationship: ResolvedRelationship) throws -> RelationshipValue {
        switch (json, relationship.isToMany) {
        case (.array(let items), true):
            return .toMany(
                try items.map { item in
                    guard case .string(let text) = item else {
                        throw InputError("'\(relationship.name)' holds URIs, not \(item.text)")
                    }
                    return try uri(text)
                })
        case (_, true): throw InputError("'\(relationship.name)' is to-many: give an array of URIs")
        case (.null, false): return .toOne(nil)
        case (.string(let text), false): return .toOne(text.isEmpty ? nil : try uri(text))
        default: throw InputError("'\(relationship.name)' is to-one: give a URI or null")
        }
    }

    static func uri(_ text: String) throws -> PersistentIdentifier {
        do {
            return try PersistentIdentifier(uri: text)
        } catch {
            throw InputError(error.message)
        }
    }
}

/// `name=text` and `name:=json` assignments, as httpie takes them.
enum Assignments {
    static func parse(_ items: [String], entity: ResolvedEntity) throws -> (
        attributes: [String: Value], relationships: [String: RelationshipValue]
    ) {
        var attributes: [String: Value] = [:], relationships: [String: RelationshipValue] = [:]
        for item in items {
            guard let equals = item.firstIndex(of: "=") else {
                throw InputError(
                    "'\(item)' is not an assignment: write name=value, or name:=json for a JSON value (null, 42, true, [\"uri\"])"
                )
            }
            var name = String(item[..<equals])
            let text = String(item[item.index(after: equals)...])
            let isJSON = name.hasSuffix(":")
            if isJSON { name.removeLast() }
            if let attribute = entity.attribute(name) {
                if isJSON {
                    attributes[name] = try ValueInput.json(
                        try parseJSON(text, name: name), as: attribute.type, name: name)
                } else {
                    attributes[name] = try ValueInput.text(text, as: attribute.type, name: name)
                }
            } else if let relationship = entity.relationship(name) {
                relationships[name] =
                    isJSON
                    ? try ValueInput.relationship(json: try parseJSON(text, name: name), relationship)
                    : try ValueInput.relationship(text, relationship)
            } else {
                let known = (entity.attributes.map(\.name) + entity.relationships.map(\.name)).sorted().joined(
                    separator: ", ")
                throw InputError("entity '\(entity.name)' has no attribute or relationship '\(name)'; it has \(known)")
            }
        }
        return (attributes, relationships)
    }

    static func parseJSON(_ text: String, name: String) throws -> JSONValue {
        do {
            return try JSONValue.parse(text)
        } catch let error as InputError {
            throw InputError("the value of '\(name)': \(error.message)")
        }
    }
}
