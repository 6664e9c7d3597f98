import Foundation

/// The object model of a store: its entities. Schema is data — the same in every language — and
/// its canonical JSON form (``canonicalJSON()``) is what the CLI reads and writes.
///
/// A schema is checked with ``validate()`` and put to use as a ``ResolvedSchema``.
public struct Schema: Hashable, Sendable, Codable {
    /// The entities, in the order they were declared.
    public var entities: [EntityDescription]

    public init(entities: [EntityDescription] = []) {
        self.entities = entities
    }

    /// The entity called `name`, if the schema has one.
    public func entity(named name: String) -> EntityDescription? {
        entities.first { $0.name == name }
    }

    /// The canonical JSON text: keys sorted, default values left out, pretty-printed.
    public func canonicalJSON() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Encoding plain structs of strings, numbers and arrays cannot fail.
        let data = (try? encoder.encode(self)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads a schema from its JSON form, with an error that says what was wrong and where.
    public init(json: String) throws(ModelError) {
        let data = Data(json.utf8)
        do {
            self = try JSONDecoder().decode(Schema.self, from: data)
        } catch let DecodingError.dataCorrupted(context)
            where context.codingPath.isEmpty && context.underlyingError == nil
        {
            // Not JSON at all: JSONDecoder does not say where; JSONSerialization does.
            throw ModelError(.invalidSchema, "the schema JSON is not valid: \(Self.syntaxError(in: data))")
        } catch let error as DecodingError {
            throw ModelError(.invalidSchema, "the schema JSON is not valid: \(error.readableDescription)")
        } catch {
            throw ModelError(.invalidSchema, "the schema JSON is not valid: \(error)")
        }
    }
}

extension Schema {
    /// Where JSON text stops being JSON, as JSONSerialization says it ("Invalid value around
    /// character 14"), with the line and column of that character.
    static func syntaxError(in data: Data) -> String {
        let detail: String
        do {
            _ = try JSONSerialization.jsonObject(with: data)
            return "it is not a JSON object"
        } catch {
            detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
        }
        let described = detail.hasSuffix(".") ? String(detail.dropLast()) : detail
        guard let range = described.range(of: "character "), let offset = Int(described[range.upperBound...]),
            offset <= data.count
        else { return described }
        let before = data.prefix(offset)
        let line = before.count { $0 == UInt8(ascii: "\n") } + 1
        let column = before.count - (before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
        return "\(described) (line \(line), column \(column))"
    }
}

extension DecodingError {
    /// What went wrong, with the coding path written as `entities[1].attributes[0].type`.
    public var readableDescription: String {
        func path(_ keys: [any CodingKey]) -> String {
            var text = ""
            for key in keys {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += (text.isEmpty ? "" : ".") + key.stringValue
                }
            }
            return text.isEmpty ? "the top level" : text
        }
        switch self {
        case .typeMismatch(let type, let context):
            return "expected \(type) at \(path(context.codingPath)): \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "missing \(type) at \(path(context.codingPath))"
        case .keyNotFound(let key, let context):
            return "missing key '\(key.stringValue)' at \(path(context.codingPath))"
        case .dataCorrupted(let context):
            let underlying = context.underlyingError.map { " (\($0))" } ?? ""
            return "\(context.debugDescription) at \(path(context.codingPath))\(underlying)"
        @unknown default:
            return "\(self)"
        }
    }
}
