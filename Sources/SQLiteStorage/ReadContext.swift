import Foundation
import ModelCore
import ModelStorage

/// One read on one connection, inside a read transaction, with an overlay installed or not.
/// Every statement goes through ``query(_:_:row:)``, which puts the overlay's `WITH` clause in
/// front, so the same compiled SQL answers with and without pending changes.
struct ReadContext {
    let connection: SQLiteConnection
    let layout: SQLiteLayout
    let storeIdentifier: UUID
    let overlay: Overlay

    var schema: ResolvedSchema { layout.schema }

    /// Runs `body` in a read transaction on `connection`, with `changes` installed as an overlay
    /// (and removed again afterwards) when given. A body that runs a single statement without an
    /// overlay (`singleStatement`) needs no transaction of its own: the statement is one; nor
    /// does one without an overlay on a reader whose job holds one (``ReadHold``).
    static func read<T>(
        _ connection: SQLiteConnection, layout: SQLiteLayout, storeIdentifier: UUID,
        overlay changes: ChangeSet? = nil, singleStatement: Bool = false,
        _ body: (ReadContext) throws -> T
    ) throws -> T {
        let plain = ReadContext(
            connection: connection, layout: layout, storeIdentifier: storeIdentifier, overlay: Overlay())
        let hasOverlay = !(changes?.isEmpty ?? true)
        if !hasOverlay, singleStatement || connection.readsInHeldTransaction { return try body(plain) }
        return try connection.transaction(write: false) {
            guard let changes, hasOverlay else { return try body(plain) }
            try ChangeSetPlan.checkIdentifiers(changes, schema: layout.schema, storeIdentifier: storeIdentifier)
            let reads = try StoredRows(
                for: changes, layout: layout, connection: connection, storeIdentifier: storeIdentifier)
            let plan = try ChangeSetPlan(changes, reads: reads, isOverlay: true)
            let overlay = try OverlayTables.install(plan, layout: layout, connection: connection)
            defer { try? OverlayTables.clear(overlay, connection: connection) }
            return try body(
                ReadContext(connection: connection, layout: layout, storeIdentifier: storeIdentifier, overlay: overlay))
        }
    }

    /// Runs `sql` (prefixed with the overlay's `WITH` clause) with `parameters`, row by row.
    func query(_ sql: String, _ parameters: [Value] = [], row: (SQLiteStatement) throws -> Void) throws {
        try connection.query(overlay.prefix + sql, parameters, cached: parameters.count <= 256, row: row)
    }

    /// A compiler for statements about `entity`, knowing the overlay's keys.
    func compiler(for entity: ResolvedEntity) -> SQLCompiler {
        SQLCompiler(layout: layout, entity: entity, temporaryKeys: overlay.temporaryKeys)
    }

    /// The identifier of the object `key` of the hierarchy `root`: its overlay insert's temporary
    /// identifier, or the permanent one.
    func identifier(root: String, entity: String, key: Int64) -> PersistentIdentifier {
        if let temporary = overlay.temporaryIDs[root]?[key] { return temporary }
        return PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entity, key: .permanent(key))
    }

    /// A JSON array of keys, for `json_each`.
    static func keyList<C: Collection>(_ keys: C) -> Value where C.Element == Int64 {
        .string("[" + keys.map(String.init).joined(separator: ",") + "]")
    }
}

/// An overlay as installed in a connection's TEMP tables: the `WITH` clause that shadows the
/// tables it changes, and the keys given to its inserted objects.
struct Overlay {
    /// `WITH "Trip" AS (…), … ` or "".
    var prefix = ""
    /// The key each inserted object gets, by temporary UUID.
    var temporaryKeys: [UUID: Int64] = [:]
    /// The temporary identifier of each inserted object, by hierarchy and key.
    var temporaryIDs: [String: [Int64: PersistentIdentifier]] = [:]
    /// The TEMP tables filled, to empty afterwards.
    var filledTables: [String] = []
}
