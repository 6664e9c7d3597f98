import Foundation

/// A query's result as a watch last reported it.
public enum WatchResult: Hashable, Sendable {
    case objects([ObjectSnapshot])
    case count(Int)
    case groups([AggregateRow])

    /// About how many bytes the result takes in memory (an overestimate, as
    /// ``ObjectSnapshot/estimatedSize``): what a watch holding it holds.
    public var estimatedSize: Int {
        switch self {
        case .objects(let objects): objects.reduce(16) { $0 + $1.estimatedSize }
        case .count: 16
        case .groups(let rows): rows.reduce(16) { $0 + 32 + ObjectSnapshot.estimatedSize(of: $1) }
        }
    }
}

/// One result of a watch: the first is the query's result when the watch began; each later one
/// follows a save that changed it.
public struct WatchUpdate: Hashable, Sendable {
    /// The history token the result is true at (nil: nothing was ever saved).
    public var token: HistoryToken?
    /// The whole result.
    public var result: WatchResult
    /// For a fetch, after the first update: how its objects changed since the last update.
    public var difference: ObjectsDifference?

    public init(token: HistoryToken?, result: WatchResult, difference: ObjectsDifference? = nil) {
        self.token = token
        self.result = result
        self.difference = difference
    }
}
