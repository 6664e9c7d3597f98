/// The type of an attribute: what kind of ``Value`` it holds.
public enum AttributeType: String, Hashable, Sendable, Codable, CaseIterable {
    case string, int, double, bool, date, data, uuid, url, decimal, json

    /// Whether values of this type are ordered and support arithmetic (`<`, `+`, `@sum`).
    public var isNumeric: Bool {
        switch self {
        case .int, .double, .decimal: true
        default: false
        }
    }
}
