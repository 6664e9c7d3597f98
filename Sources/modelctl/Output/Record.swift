import Foundation
import ModelCore

/// One cell of output: a value, text, a number, object URIs, or nested JSON.
enum Cell {
    case value(Value)
    case text(String?)
    /// A whole number; nil is null in JSON and empty in a table.
    case number(Int64?)
    case uris([String])
    /// JSON text for JSON output, and its plain-text form for tables and CSV.
    case nested(json: String, text: String)

    var text: String? {
        switch self {
        case .value(let value): value.textForm
        case .text(let text): text
        case .number(let number): number.map(String.init)
        case .uris(let uris): uris.joined(separator: " ")
        case .nested(_, let text): text
        }
    }

    var json: String {
        switch self {
        case .value(let value): JSONText.value(value)
        case .text(let text): text.map(JSONText.string) ?? "null"
        case .number(let number): number.map(String.init) ?? "null"
        case .uris(let uris): JSONText.array(uris.map(JSONText.string))
        case .nested(let json, _): json
        }
    }
}

/// One output record: named cells, in column order.
typealias Record = [(String, Cell)]

extension ObjectSnapshot {
    /// The object as a record: its URI, version, then `fields` if given, otherwise the
    /// properties named in `order` followed by any others it has (a subentity's), sorted.
    func record(fields: [String]? = nil, order: [String] = []) -> Record {
        var record: Record = [("uri", .text(id.uriRepresentation)), ("version", .number(version))]
        var names = fields ?? order.filter { attributes[$0] != nil || relationships[$0] != nil }
        if fields == nil {
            let known = Set(names)
            names += (attributes.keys.sorted() + relationships.keys.sorted()).filter { !known.contains($0) }
        }
        for name in names {
            if let value = attributes[name] {
                record.append((name, .value(value)))
            } else if let relationship = relationships[name] {
                switch relationship {
                case .toOne(let target): record.append((name, .text(target?.uriRepresentation)))
                case .toMany(let targets): record.append((name, .uris(targets.map(\.uriRepresentation))))
                }
            } else {
                record.append((name, .value(.null)))
            }
        }
        return record
    }
}

extension ResolvedEntity {
    /// Property names in schema order: attributes, then relationships.
    var propertyOrder: [String] { attributes.map(\.name) + relationships.map(\.name) }
}
