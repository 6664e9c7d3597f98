import Foundation
import ModelCore
import ModelFixtures

/// The sorts, aggregates and overlays of ``QueryGenerator``'s cases.
extension QueryGenerator {
    mutating func sort(_ entity: String) -> SortDescriptor {
        let (path, type) = scalarPath(Root(entity: entity))
        return SortDescriptor(
            path, ascending: random.chance(0.5), caseInsensitive: type == .string && random.chance(0.4))
    }

    mutating func aggregate(_ entity: String, predicate: Predicate?) -> AggregateDescriptor {
        count("aggregate")
        var groupBy: [PropertyPath] = []
        for _ in 0..<random.int(0...2) {
            let path = scalarPath(Root(entity: entity)).path
            if !groupBy.contains(path) { groupBy.append(path) }
        }
        var aggregations: [Aggregation] = random.chance(0.5) || groupBy.isEmpty ? [Aggregation("n", .count)] : []
        for i in 0..<random.int(0...2) {
            let (path, type) = scalarPath(Root(entity: entity))
            let function: Aggregation.Function =
                switch type {
                case .int, .double, .decimal: random.pick(Aggregation.Function.allCases)
                case .date, .string: random.pick([.count, .min, .max])
                default: .count
                }
            aggregations.append(Aggregation("a\(i)", function, path))
        }
        var descriptor = AggregateDescriptor(
            entityName: entity, predicate: predicate, groupBy: groupBy, aggregations: aggregations)
        let keys = groupBy.map(\.description) + aggregations.map(\.name)
        if random.chance(0.5) { descriptor.sortBy = [AggregateSort(random.pick(keys), ascending: random.chance(0.5))] }
        if random.chance(0.2) { descriptor.offset = random.int(0...3) }
        if random.chance(0.2) { descriptor.limit = random.int(0...5) }
        if random.chance(0.1) { descriptor.includesSubentities = false }
        return descriptor
    }

    /// A context's pending changes: new things (some in a box), updates of saved things (some
    /// deleted already), deletes.
    mutating func overlay() -> ChangeSet {
        count("overlay")
        var changes = store.changes()
        for _ in 0..<random.int(0...3) {
            let entity = random.pick(["Thing", "Gadget", "Gizmo"])
            let key = UUID(
                uuid: withUnsafeBytes(of: (random.next(), random.next())) { raw in
                    (
                        raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10],
                        raw[11], raw[12], raw[13], raw[14], raw[15]
                    )
                })
            let id = changes.insert(entity, WorkshopData.attributes(entity, &random), temporaryKey: key)
            if random.chance(0.5) {
                changes.link(id, "box", store.id("Box", Int64(random.int(1...(Workshop.boxCount - 1)))))
            }
        }
        var updated: Set<Int64> = []
        for _ in 0..<random.int(0...3) {
            let key = Int64(random.int(1...Workshop.thingCount))
            guard updated.insert(key).inserted else { continue }
            changes.update(store.id("Thing", key), WorkshopData.attributes("Thing", &random, share: 0.3, isNew: false))
        }
        for _ in 0..<random.int(0...2) {
            let key = Int64(random.int(1...Workshop.thingCount))
            if !updated.contains(key) { changes.delete(store.id("Thing", key)) }
        }
        return changes.set
    }
}
