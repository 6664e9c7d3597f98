/// A fetch limit as Core Data reads one: 0 is no limit, kept as nil, so that every store (and
/// every place that reads the limit) takes it the same way.
@propertyWrapper
public struct ZeroIsNoLimit: Sendable {
    private var limit: Int?

    public init(wrappedValue: Int?) {
        limit = wrappedValue == 0 ? nil : wrappedValue
    }

    public var wrappedValue: Int? {
        get { limit }
        set { limit = newValue == 0 ? nil : newValue }
    }
}
