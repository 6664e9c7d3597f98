import ArgumentParser
import Foundation
import ModelRemote
import ModelCore

/// What fetch, count, export and aggregate share: the entity, a predicate, sorting.
struct QueryOptions: ParsableArguments {
    @Argument(help: "The entity.") var entity: String
    @Option(
        name: .customLong("where"),
        help: ArgumentHelp(
            "A predicate in NSPredicate's syntax, e.g. 'name BEGINSWITH[c] \"k\" AND startDate > \"2026-01-01\"'.",
            valueName: "predicate"))
    var predicate: String?
    @Flag(help: "Leave out objects of subentities.") var excludeSubentities = false

    func parsedPredicate() throws -> ModelCore.Predicate? {
        do {
            return try predicate.map(PredicateParser.parse)
        } catch {
            throw InputError("--where: \(error.message)")
        }
    }
}

/// Sort keys as `name,-startDate,title:c` (descending with `-`, ignoring case with `:c`).
func sortKeys(_ text: String?) throws -> [ModelCore.SortDescriptor] {
    guard let text, !text.isEmpty else { return [] }
    do {
        return try text.split(separator: ",").map { try ModelCore.SortDescriptor(parsing: String($0)) }
    } catch let error as ModelError {
        throw InputError("--sort: \(error.message)")
    }
}

let watchHelp = ArgumentHelp(
    "Keep the query open: redraw the table on each change on a terminal; otherwise print the result, then each change, as one JSON line (Ctrl-C stops)."
)

/// `modelctl fetch ENTITY`.
struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the objects of an entity that match a predicate, sorted, streamed in batches.",
        discussion:
            "Example: modelctl fetch Trip --where 'destination CONTAINS[c] \"jap\"' --sort -startDate,name --limit 10")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var query: QueryOptions
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Sort keys: name,-startDate (descending), title:c (ignoring case).", valueName: "keys"))
    var sort: String?
    @Option(parsing: .unconditional, help: "At most this many objects.") var limit: Int?
    @Option(parsing: .unconditional, help: "Skip this many objects first.") var offset: Int = 0
    @Option(help: ArgumentHelp("Only these properties: name,startDate.", valueName: "names")) var fields: String?
    @Flag(help: watchHelp) var watch = false

    func run() async throws {
        try await global.withClient { client in
            let entity = try await resolvedEntity(query.entity, client: client, store: global.storeName)
            let fields = fieldList(self.fields)
            let descriptor = FetchDescriptor(
                entityName: entity.name, predicate: try query.parsedPredicate(), sortBy: try sortKeys(sort),
                offset: offset, limit: limit, includesSubentities: !query.excludeSubentities,
                propertiesToFetch: fields)
            if watch {
                let order = entity.propertyOrder
                let record: @Sendable (ObjectSnapshot) -> Record = { $0.record(fields: fields, order: order) }
                let output = WatchOutput(
                    format: global.outputFormat,
                    rows: { result in if case .objects(let objects) = result { objects.map(record) } else { [] } },
                    object: record)
                return try await output.follow(.fetch(descriptor), store: global.storeName, client: client)
            }
            let writer = RecordWriter(format: global.outputFormat)
            let order = entity.propertyOrder
            try await client.fetch(descriptor, in: global.storeName) { batch in
                writer.write(batch.map { $0.record(fields: fields, order: order) })
            }
            writer.finish()
        }
    }
}

/// `modelctl count ENTITY`.
struct Count: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Count the objects of an entity that match a predicate.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var query: QueryOptions
    @Flag(help: watchHelp) var watch = false

    func run() async throws {
        let descriptor = FetchDescriptor(
            entityName: query.entity, predicate: try query.parsedPredicate(),
            includesSubentities: !query.excludeSubentities)
        if watch {
            let output = WatchOutput(
                format: global.outputFormat,
                rows: { result in
                    if case .count(let count) = result { [[("count", .number(Int64(count)))]] } else { [] }
                },
                object: { $0.record() })
            return try await global.withClient { client in
                try await output.follow(.count(descriptor), store: global.storeName, client: client)
            }
        }
        let count = try await global.withClient { client in
            try await client.count(descriptor, in: global.storeName)
        }
        switch global.outputFormat {
        case .json, .jsonl: Terminal.write("{\"count\":\(count)}\n")
        case .csv: Terminal.write("count\n\(count)\n")
        case .table: Terminal.write("\(count)\n")
        }
    }
}

/// `modelctl aggregate ENTITY --group-by … --count --sum …`.
struct Aggregate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Grouped counts, sums, averages, minimums and maximums, computed by the store.",
        discussion: "Example: modelctl aggregate Student --group-by birthOfYear --count --sort -count")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var query: QueryOptions
    @Option(help: ArgumentHelp("Key paths to group by: year,trip.name.", valueName: "keys")) var groupBy: String?
    @Flag(help: "Count the objects of each group (as 'count').") var count = false
    @Option(help: ArgumentHelp("Sum an attribute (as 'sum_<attribute>').", valueName: "attribute")) var sum: [String] =
        []
    @Option(help: ArgumentHelp("Average an attribute (as 'avg_<attribute>').", valueName: "attribute")) var avg:
        [String] = []
    @Option(help: ArgumentHelp("The smallest value of an attribute (as 'min_<attribute>').", valueName: "attribute"))
    var min: [String] = []
    @Option(help: ArgumentHelp("The largest value of an attribute (as 'max_<attribute>').", valueName: "attribute"))
    var max: [String] = []
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Sort by group keys or result names: -count,year.", valueName: "keys")) var sort: String?
    @Option(help: "At most this many rows.") var limit: Int?
    @Flag(help: watchHelp) var watch = false

    func run() async throws {
        let rows = try await global.withClient { client -> [Record]? in
            var aggregations: [Aggregation] = count ? [Aggregation("count", .count)] : []
            for (function, paths) in [(Aggregation.Function.sum, sum), (.avg, avg), (.min, min), (.max, max)] {
                for path in paths {
                    aggregations.append(
                        Aggregation(
                            "\(function.rawValue)_\(path.replacingOccurrences(of: ".", with: "_"))", function,
                            PropertyPath(stringLiteral: path)))
                }
            }
            let groups = (groupBy ?? "").split(separator: ",").map { PropertyPath(stringLiteral: String($0)) }
            let sorts = (sort ?? "").split(separator: ",").map { key in
                key.hasPrefix("-")
                    ? AggregateSort(String(key.dropFirst()), ascending: false) : AggregateSort(String(key))
            }
            let descriptor = AggregateDescriptor(
                entityName: query.entity, predicate: try query.parsedPredicate(), groupBy: groups,
                aggregations: aggregations, sortBy: sorts, limit: limit,
                includesSubentities: !query.excludeSubentities)
            let columns = groups.map(\.description) + aggregations.map(\.name)
            let records: @Sendable ([AggregateRow]) -> [Record] = { rows in
                rows.map { row in columns.map { ($0, Cell.value(row[$0] ?? .null)) } }
            }
            if watch {
                let output = WatchOutput(
                    format: global.outputFormat,
                    rows: { result in if case .groups(let rows) = result { records(rows) } else { [] } },
                    object: { $0.record() })
                try await output.follow(.aggregate(descriptor), store: global.storeName, client: client)
                return nil
            }
            return records(try await client.aggregate(descriptor, in: global.storeName))
        }
        guard let rows else { return }
        let writer = RecordWriter(format: global.outputFormat)
        writer.write(rows)
        writer.finish()
    }
}
