/// A key path: property names joined by dots (`trip.destination`), optionally starting at a
/// SUBQUERY variable (`$a.category.name`). An empty path with a variable is the variable itself;
/// an empty path without one is the object being evaluated (`self`).
public struct PropertyPath: Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The SUBQUERY variable the path starts at (without `$`), or nil for the evaluated object.
    public var variable: String?
    public var components: [String]

    public init(_ components: [String], variable: String? = nil) {
        self.components = components
        self.variable = variable
    }

    /// A path from dotted text: `"trip.destination"`.
    public init(stringLiteral value: String) {
        self.init(value.split(separator: ".").map(String.init))
    }

    public var description: String {
        let root = variable.map { "$" + $0 } ?? (components.isEmpty ? "self" : nil)
        return ([root].compactMap { $0 } + components).joined(separator: ".")
    }
}
