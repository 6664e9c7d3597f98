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
        var last: RowPlan?, lastIsKind = false
        var attributes: [Value] = [], toOne: [PersistentIdentifier?] = []
        var count = 0
        do {
            try query(sql, parameters) { row in
                guard let plan = self.plan(of: row, after: last, in: &plans) else { return }
                if plan !== last {
                    last = plan
                    lastIsKind =
                        kindOf.map { plan.entityName == $0 || schema[plan.entityName]?.isKind(of: $0) == true } ?? true
                    // Sized once per plan, then written in place (emptying them cost more).
                    attributes = Array(repeating: .null, count: plan.attributes.count)
                    toOne = Array(repeating: nil, count: plan.foreignKeys.count)
                }
                guard lastIsKind else { return }
                for (index, attribute) in plan.attributes.enumerated() {
                    attributes[index] = try attribute.position.map { try row.value($0, as: attribute.type) } ?? .null
                }
                for (slot, foreignKey) in plan.foreignKeys.enumerated() { toOne[slot] = target(of: row, foreignKey) }
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
