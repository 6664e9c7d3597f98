import Foundation
import ModelCore

extension WatchedQuery {
    /// The query a watch request names.
    public init(wire: Modeld_V1_WatchRequest) throws(ModelError) {
        switch wire.query {
        case .fetch(let fetch): self = .fetch(try FetchDescriptor(wire: fetch))
        case .count(let fetch): self = .count(try FetchDescriptor(wire: fetch))
        case .aggregate(let aggregate): self = .aggregate(try AggregateDescriptor(wire: aggregate))
        case nil:
            throw ModelError(.invalidArgument, "a watch request needs a query: set fetch, count or aggregate")
        }
    }

    /// A watch request for this query on `store`.
    public func wire(store: String) -> Modeld_V1_WatchRequest {
        var request = Modeld_V1_WatchRequest()
        request.store = store
        switch self {
        case .fetch(let descriptor): request.fetch = descriptor.wire
        case .count(let descriptor): request.count = descriptor.wire
        case .aggregate(let descriptor): request.aggregate = descriptor.wire
        }
        return request
    }
}

extension WatchUpdate {
    /// The responses that carry this update: one, or several with `continues` set on all but the
    /// last when its objects take more than `budget` bytes (estimated).
    public func wireResponses(initial: Bool, budget: Int) -> [Modeld_V1_WatchResponse] {
        var responses: [Modeld_V1_WatchResponse] = []
        var current = Modeld_V1_WatchResponse()
        var bytes = 0
        func start() {
            if let token { current.token = token.rawValue }
            current.initial = initial
        }
        func add(_ size: Int) {
            bytes += size
            if bytes >= budget {
                current.continues = true
                responses.append(current)
                current = Modeld_V1_WatchResponse()
                start()
                bytes = 0
            }
        }
        start()
        switch result {
        case .count(let count): current.count = Int64(count)
        case .groups(let rows):
            for row in rows {
                current.rows.append(Modeld_V1_AggregateRow.with { $0.values = row.wire })
                add(16 + ObjectSnapshot.estimatedSize(of: row))
            }
        case .objects(let objects):
            if let difference, !initial {
                for deletion in difference.deleted {
                    current.deleted.append(
                        .with {
                            $0.offset = Int64(deletion.offset)
                            $0.uri = deletion.id.uriRepresentation
                        })
                    add(deletion.id.uriRepresentation.utf8.count + 16)
                }
                for move in difference.moved {
                    current.moved.append(
                        .with {
                            $0.uri = move.id.uriRepresentation
                            $0.from = Int64(move.from)
                            $0.to = Int64(move.to)
                        })
                    add(move.id.uriRepresentation.utf8.count + 24)
                }
                for insertion in difference.inserted {
                    current.inserted.append(
                        .with {
                            $0.offset = Int64(insertion.offset)
                            $0.object = insertion.object.wire
                        })
                    add(insertion.object.estimatedSize + 16)
                }
                for update in difference.updated {
                    current.updated.append(
                        .with {
                            $0.offset = Int64(update.offset)
                            $0.object = update.object.wire
                            $0.changedProperties = update.changedProperties
                        })
                    add(update.object.estimatedSize + 16)
                }
            } else {
                for object in objects {
                    current.objects.append(object.wire)
                    add(object.estimatedSize)
                }
            }
        }
        // The last part (after a split, possibly with no items: it ends the result).
        responses.append(current)
        return responses
    }
}

/// Builds a watch's results from its responses, as a client receives them: gathers the parts of
/// one result, applies a difference to the previous result, and checks that it fits.
public struct WatchResponseAssembler: Sendable {
    private enum Kind { case objects, count, groups }

    public let storeIdentifier: UUID?
    private let kind: Kind
    private var pending: [Modeld_V1_WatchResponse] = []
    private var last: [ObjectSnapshot]?

    /// An assembler for the responses of a watch of `query`.
    public init(query: WatchedQuery, storeIdentifier: UUID?) {
        self.storeIdentifier = storeIdentifier
        kind =
            switch query {
            case .fetch: .objects
            case .count: .count
            case .aggregate: .groups
            }
    }

    /// Takes a response; returns the update once its last part has come.
    public mutating func add(_ response: Modeld_V1_WatchResponse) throws(ModelError) -> WatchUpdate? {
        pending.append(response)
        guard !response.continues else { return nil }
        let parts = pending
        pending = []
        let token = response.hasToken ? HistoryToken(response.token) : nil
        switch kind {
        case .count:
            return WatchUpdate(token: token, result: .count(Int(response.count)))
        case .groups:
            var rows: [AggregateRow] = []
            for part in parts { for row in part.rows { rows.append(try [String: Value](wire: row.values)) } }
            return WatchUpdate(token: token, result: .groups(rows))
        case .objects:
            guard let old = last, !parts[0].initial else {
                var objects: [ObjectSnapshot] = []
                for part in parts {
                    for object in part.objects { objects.append(try ObjectSnapshot(wire: object, in: storeIdentifier)) }
                }
                last = objects
                return WatchUpdate(token: token, result: .objects(objects))
            }
            let difference = try self.difference(parts)
            guard difference.fits(old) else {
                throw ModelError(.storageFailure, "a watch's difference does not fit its previous result")
            }
            let objects = difference.applied(to: old)
            last = objects
            return WatchUpdate(token: token, result: .objects(objects), difference: difference)
        }
    }

    private func difference(_ parts: [Modeld_V1_WatchResponse]) throws(ModelError) -> ObjectsDifference {
        var difference = ObjectsDifference()
        for part in parts {
            for deletion in part.deleted {
                difference.deleted.append(
                    .init(
                        offset: try Self.offset(deletion.offset),
                        id: try PersistentIdentifier(wire: deletion.uri, in: storeIdentifier)))
            }
            for move in part.moved {
                difference.moved.append(
                    .init(
                        id: try PersistentIdentifier(wire: move.uri, in: storeIdentifier),
                        from: try Self.offset(move.from), to: try Self.offset(move.to)))
            }
            for insertion in part.inserted {
                difference.inserted.append(
                    .init(
                        offset: try Self.offset(insertion.offset),
                        object: try ObjectSnapshot(wire: insertion.object, in: storeIdentifier)))
            }
            for update in part.updated {
                difference.updated.append(
                    .init(
                        offset: try Self.offset(update.offset),
                        object: try ObjectSnapshot(wire: update.object, in: storeIdentifier),
                        changedProperties: update.changedProperties))
            }
        }
        return difference
    }

    private static func offset(_ value: Int64) throws(ModelError) -> Int {
        guard value >= 0, let offset = Int(exactly: value) else {
            throw ModelError(.storageFailure, "a watch's difference has offset \(value)")
        }
        return offset
    }
}

extension ObjectsDifference {
    /// Whether every offset falls inside the result it is applied to (and the one it makes).
    public func fits(_ old: [ObjectSnapshot]) -> Bool {
        let newCount = old.count - deleted.count + inserted.count
        return deleted.allSatisfy { $0.offset < old.count }
            && moved.allSatisfy { $0.from < old.count && $0.to < newCount }
            && inserted.allSatisfy { $0.offset < newCount } && updated.allSatisfy { $0.offset < newCount }
            && newCount >= 0
    }
}
