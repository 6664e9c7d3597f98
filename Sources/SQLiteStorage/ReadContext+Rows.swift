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
    /// hands each object to `sink` as a row whose columns the sink reads as it writes them
    /// (``ObjectRowSink/add(id:version:shape:toOne:cells:)``), without a snapshot and its tables:
    /// for hierarchies whose rows hold every relationship
    /// (``SQLiteLayout/readsObjectsInOneStatement(root:)``), as only foreign keys are read.
    /// With `kindOf`, rows of an entity that is neither it nor one of its subentities are left
    /// out. Returns how many objects `sink` took; nil once it takes no more, the rest not read.
    func writeObjects<Sink: ObjectRowSink>(
        _ sql: String, _ parameters: [Value], table: TableLayout, plans: RowPlans, kindOf: String? = nil,
        into sink: inout Sink
    ) throws -> Int? {
        var plans = plans
        var last: RowPlan?, lastIsKind = false
        var toOne: [PersistentIdentifier?] = []
        var count = 0
        let onlyEntity = table.entities.count == 1 ? table.entities.first : nil
        do {
            try query(sql, parameters) { row in
                guard let plan = self.plan(of: row, after: last, onlyEntity: onlyEntity, in: &plans) else { return }
                if plan !== last {
                    last = plan
                    lastIsKind =
                        kindOf.map { plan.entityName == $0 || schema[plan.entityName]?.isKind(of: $0) == true } ?? true
                    // Sized once per plan, then written in place (emptying it cost more).
                    toOne = Array(repeating: nil, count: plan.foreignKeys.count)
                }
                guard lastIsKind else { return }
                for (slot, foreignKey) in plan.foreignKeys.enumerated() { toOne[slot] = target(of: row, foreignKey) }
                // The sink asks for each attribute's column as it writes it (``RowCell``).
                var unreadable: ModelError?
                let id = identifier(root: table.name, entity: plan.entityName, key: row.int64(0))
                // The plan's attributes taken once, not retained and released at every cell.
                let takesMore = plan.attributes.withUnsafeBufferPointer { attributes in
                    sink.add(id: id, version: row.int64(2), shape: plan.shape, toOne: toOne) { index in
                        let attribute = attributes[index]
                        guard let position = attribute.position else { return .null }
                        do throws(ModelError) {
                            return try row.cell(position, as: attribute.type)
                        } catch {
                            unreadable = error
                            return .null
                        }
                    }
                }
                if let unreadable { throw unreadable }
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
