import Foundation
import ModelCore

extension HistoryTransaction {
    /// Reads a history transaction.
    public init(wire: Modeld_V1_HistoryTransaction, in storeIdentifier: UUID? = nil) throws(ModelError) {
        var changes: [HistoryChange] = []
        for change in wire.changes {
            let kind: HistoryChange.Kind =
                switch change.kind {
                case .insert: .insert
                case .update: .update
                case .delete: .delete
                case .UNRECOGNIZED: throw ModelError(.invalidArgument, "unknown change kind \(change.kind.rawValue)")
                }
            changes.append(
                HistoryChange(
                    kind: kind, id: try PersistentIdentifier(wire: change.uri, in: storeIdentifier),
                    changedProperties: change.changedProperties,
                    tombstone: try [String: Value](wire: change.tombstone)))
        }
        self.init(
            token: HistoryToken(wire.token), timestamp: Timestamp(microsecondsSince1970: wire.timestampMicros),
            author: wire.hasAuthor ? wire.author : nil, changes: changes,
            schemaChange: wire.hasSchemaChange
                ? SchemaVersionChange(from: wire.schemaChange.fromVersion, to: wire.schemaChange.toVersion) : nil,
            user: wire.hasUser ? wire.user : nil)
    }

    /// The wire form of this transaction.
    public var wire: Modeld_V1_HistoryTransaction {
        var wire = Modeld_V1_HistoryTransaction()
        wire.token = token.rawValue
        wire.timestampMicros = timestamp.microsecondsSince1970
        if let author { wire.author = author }
        if let user { wire.user = user }
        if let schemaChange {
            wire.schemaChange = Modeld_V1_SchemaChange.with {
                $0.fromVersion = schemaChange.from
                $0.toVersion = schemaChange.to
            }
        }
        wire.changes = changes.map { change in
            Modeld_V1_HistoryChange.with {
                $0.kind =
                    switch change.kind {
                    case .insert: .insert
                    case .update: .update
                    case .delete: .delete
                    }
                $0.uri = change.id.uriRepresentation
                $0.changedProperties = change.changedProperties
                $0.tombstone = change.tombstone.wire
            }
        }
        return wire
    }
}

extension Modeld_V1_SaveResult {
    /// The wire form of a save's result, with the transaction it wrote when given; objects saved
    /// from runs as runs when `answersRuns` (the request's `answer_runs`).
    public init(_ result: SaveResult, transaction: HistoryTransaction? = nil, answersRuns: Bool = false) {
        self.init()
        remapped = Dictionary(
            uniqueKeysWithValues: result.remappedIdentifiers.map {
                ($0.key.uriRepresentation, $0.value.uriRepresentation)
            })
        for run in result.insertedRuns {
            if answersRuns {
                insertedRuns.append(
                    Modeld_V1_InsertedRun.with {
                        $0.firstUri = run.firstIdentifier.uriRepresentation
                        $0.count = Int64(run.count)
                    })
            } else {
                run.identifiers { remapped[$0.uriRepresentation] = $1.uriRepresentation }
            }
        }
        if let token = result.token { self.token = token.rawValue }
        for (id, version) in result.versions where version > 1 { versions[id.uriRepresentation] = version }
        if var transaction {
            if transaction.changes.count > Self.transactionChangeLimit {
                transaction.changes.removeSubrange(Self.transactionChangeLimit...)
                transactionTruncated = true
            }
            self.transaction = transaction.wire
        }
    }

    /// The most changes a save result's transaction carries.
    public static let transactionChangeLimit = 10_000
}
