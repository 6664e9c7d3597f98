import Foundation
import ModelCore
import ModelStorage

extension PostgresObjects {
    /// Reads through `session` from the calling task (``PostgresConnectionQueue/runAsync(_:)``):
    /// the objects keep `session`'s connection for their blocking methods, which work there too
    /// but hold a thread of the task pool while they wait.
    init(_ session: PostgresAsyncSession, layout: PostgresLayout, storeIdentifier: UUID) {
        self.init(
            session: PostgresSession(connection: session.connection, endpoint: session.endpoint), layout: layout,
            storeIdentifier: storeIdentifier)
    }

    /// ``objects(root:keys:)``, its statements sent from the calling task on `session`.
    func objects(root: String, keys: [Int64], on session: PostgresAsyncSession) async throws -> [ObjectSnapshot] {
        guard !keys.isEmpty, let (sql, columns, reads) = objectsStatement(root: root) else { return [] }
        var snapshots = try decode(
            try await session.query(overlay.prefix + sql, keys: keys), columns: columns, properties: nil, known: reads)
        try await loadRelationships(&snapshots, properties: nil, on: session)
        return snapshots
    }

    /// ``loadRelationships(_:properties:)``, its statements sent from the calling task on `session`.
    func loadRelationships(
        _ snapshots: inout [ObjectSnapshot], properties: Set<String>?, on session: PostgresAsyncSession
    )
        async throws
    {
        for load in relationshipLoads(snapshots, properties: properties) {
            let owners = load.rows.compactMap { key(of: snapshots[$0].id) }
            guard !owners.isEmpty, let sql = relatedStatement(load.relationship) else { continue }
            let rows = try await session.query(overlay.prefix + sql, keys: owners)
            fill(&snapshots, load, related: try related(rows, load.relationship))
        }
    }
}
