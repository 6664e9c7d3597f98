/// One sort key: a key path (through to-one relationships only), a direction, and whether
/// strings compare without regard to case. Nil sorts before every value; ties are broken by the
/// primary key, ascending, in every backend.
public struct SortDescriptor: Hashable, Sendable, Codable, CustomStringConvertible {
    public var keyPath: PropertyPath
    public var ascending: Bool
    public var caseInsensitive: Bool

    public init(_ keyPath: PropertyPath, ascending: Bool = true, caseInsensitive: Bool = false) {
        self.keyPath = keyPath
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }

    /// `name`, `-startDate` (descending), `name:c` (case-insensitive), `-name:c`.
    public var description: String {
        (ascending ? "" : "-") + keyPath.description + (caseInsensitive ? ":c" : "")
    }

    /// Parses the form ``description`` writes.
    public init(parsing text: String) throws(ModelError) {
        var body = Substring(text.trimmingCharacters(in: .whitespaces))
        ascending = !body.hasPrefix("-")
        if body.hasPrefix("-") || body.hasPrefix("+") { body = body.dropFirst() }
        caseInsensitive = body.hasSuffix(":c")
        if caseInsensitive { body = body.dropLast(2) }
        let components = body.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !components.isEmpty, components.allSatisfy(SchemaNames.isWellFormed) else {
            throw ModelError(
                .invalidArgument,
                "'\(text)' is not a sort key; write name, -name (descending) or name:c (ignoring case)")
        }
        keyPath = PropertyPath(components)
    }

    /// Checks the key path against `entity`: it must end at an attribute and cross no to-many
    /// relationship.
    public func validate(for entity: ResolvedEntity, in schema: ResolvedSchema) throws(ModelError) {
        let resolved = try schema.resolve(keyPath, from: entity)
        guard let attribute = resolved.attribute else {
            throw ModelError(
                .invalidArgument, "cannot sort by '\(keyPath)': it is a relationship, not an attribute",
                context: ["keyPath": keyPath.description])
        }
        guard resolved.toManyIndex == nil else {
            throw ModelError(
                .invalidArgument, "cannot sort by '\(keyPath)': it crosses a to-many relationship",
                context: ["keyPath": keyPath.description])
        }
        if caseInsensitive, attribute.type != .string {
            throw ModelError(
                .invalidArgument, "'\(keyPath)' is \(attribute.type.rawValue): only strings sort ignoring case",
                context: ["keyPath": keyPath.description])
        }
    }
}

import Foundation
