import ModelCore
import ModelStorage

extension ReadContext {
    /// Runs a validated objects fetch without prefetching, handing its objects to `sink` as rows
    /// (``writeObjects(_:_:table:plans:kindOf:into:)``): how many, or nil once `sink` takes no more.
    func writeObjects<Sink: ObjectRowSink>(_ descriptor: FetchDescriptor, into sink: inout Sink) throws -> Int? {
        let statement = try objectsQuery(descriptor)
        return try writeObjects(
            statement.sql, statement.parameters, table: statement.table, plans: statement.plans, into: &sink)
    }

    /// Reads the rows of an objects statement as ``decodeObjects(_:_:table:plans:_:)`` does, but
    /// hands each object to `sink` as a row (``ObjectRow``), its values in its plan's order,
    /// without a snapshot and its tables: for hierarchies whose rows hold every relationship
    /// (``SQLiteLayout/readsObjectsInOneStatement(root:)``), as only foreign keys are read.
    /// With `kindOf`, rows of an entity that is neither it nor one of its subentities are left
    /// out. Returns how many objects `sink` took; nil once it takes no more, the rest not read.
    func writeObjects<Sink: ObjectRowSink>(
        _ sql: String, _ parameters: [Value], table: TableLayout, plans: RowPlans, kindOf: String? = nil,
        into sink: inout Sink
    ) throws -> Int? {
        var plans = plans
        // Rows of one entity usually come together: the last plan is tried first.
        var last: RowPlan?, lastIsKind = false
        var attributes: [Value] = [], toOne: [PersistentIdentifier?] = []
        var count = 0
        do {
            try query(sql, parameters) { row in
                let plan: RowPlan
                if let last, row.textEquals(1, last.entityNameBytes) {
                    plan = last
                } else {
                    guard let known = plans.plan(for: row.text(1), schema: schema) else { return }
                    plan = known
                    last = known
                    lastIsKind = kindOf.map { schema[known.entityName]?.isKind(of: $0) ?? false } ?? true
                    // Sized once per plan, then written in place (emptying them cost more).
                    attributes = Array(repeating: .null, count: known.attributes.count)
                    toOne = Array(repeating: nil, count: known.foreignKeys.count)
                }
                guard lastIsKind else { return }
                for (index, attribute) in plan.attributes.enumerated() {
                    attributes[index] = try attribute.position.map { try row.value($0, as: attribute.type) } ?? .null
                }
                for (slot, foreignKey) in plan.foreignKeys.enumerated() {
                    guard let index = foreignKey.position, let target = row.optionalInt64(index) else {
                        toOne[slot] = nil
                        continue
                    }
                    // A dangling reference has no target row: it keeps the destination's name.
                    let targetEntity = row.isNull(index + 1) ? foreignKey.destination : row.text(index + 1)
                    toOne[slot] = identifier(root: foreignKey.root, entity: targetEntity, key: target)
                }
                let takesMore = sink.add(
                    ObjectRow(
                        id: identifier(root: table.name, entity: plan.entityName, key: row.int64(0)),
                        version: row.int64(2), shape: plan.shape, attributes: attributes, toOne: toOne))
                count += 1
                if !takesMore { throw SinkFull() }
            }
        } catch is SinkFull {
            return nil
        }
        return count
    }
}

/// Stops a read whose sink takes no more (``ReadContext/writeObjects``).
private struct SinkFull: Error {}
