import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
@testable import SQLiteStorage
import Testing

/// What the SQL looks like: values bound, never spliced; indexes used; errors that name the SQL.
@Suite struct SQLTests {
    static let hostile = #"'); DROP TABLE "Trip"; --"#

    @Test func hostileTextIsStoredVerbatim() async throws {
        try await withStore(SampleTrips.schema) { store, _ in
            let ids = try await store.insert(
                "Trip",
                [
                    [
                        "name": .string(Self.hostile), "destination": .string("\"; DELETE FROM \"Trip\"; --"),
                        "startDate": date("2026-01-01"), "endDate": date("2026-01-02"),
                    ]
                ])
            #expect(
                try await store.values("Trip", #"name == "'); DROP TABLE \"Trip\"; --""#, key: "name") == [Self.hostile]
            )
            #expect(
                try await store.values("Trip", #"name CONTAINS "DROP TABLE""#, key: "destination") == [
                    "\"; DELETE FROM \"Trip\"; --"
                ])
            #expect(try await store.snapshots(for: ids).first?["name"] == .string(Self.hostile))
            let grouped = try await store.aggregate(
                AggregateDescriptor(
                    entityName: "Trip", groupBy: ["name"],
                    aggregations: [Aggregation("n", .count)]))
            #expect(grouped == [["name": .string(Self.hostile), "n": .int(1)]])
        }
    }

    @Test func anIndexedEqualityUsesItsIndex() async throws {
        try await withStore(SampleTrips.schema) { store, path in
            let layout = SQLiteLayout(try await store.schema())
            let cases: [(String, String, String)] = [
                ("Trip", #"name == "Paris""#, "_index_Trip_name"),
                ("Trip", #"startDate == "2026-01-01""#, "_index_Trip_startDate"),
                (
                    "BucketListItem",
                    #"trip == CAST("modeld://\#(store.storeIdentifier.uuidString.lowercased())/Trip/p1", "object")"#,
                    "_fk_BucketListItem_trip"
                ),
            ]
            let connection = try SQLiteConnection(path: path, role: .reader)
            for (entityName, text, index) in cases {
                let entity = try layout.schema.entity(entityName)
                let descriptor = try FetchDescriptor(entityName: entityName, predicate: PredicateParser.parse(text))
                    .validated(in: layout.schema, storeIdentifier: store.storeIdentifier)
                var compiler = SQLCompiler(layout: layout, entity: entity)
                let sql = try compiler.fetch(descriptor, columns: [])
                var plan: [String] = []
                try connection.query("EXPLAIN QUERY PLAN " + sql, compiler.parameters, cached: false) {
                    plan.append($0.text(3))
                }
                #expect(
                    plan.contains {
                        $0.contains("USING INDEX \(index)") || $0.contains("USING COVERING INDEX \(index)")
                    }, "\(text): \(plan)")
                #expect(!sql.contains("Paris") && !sql.contains("2026"), "values are bound, not spliced: \(sql)")
            }
            connection.close()
        }
    }

    /// The select list a layout keeps for an entity's objects is the one the compiler makes
    /// for each query, and none is kept where the compiler joins (a to-one's target entity).
    @Test func theKeptSelectListIsTheCompilers() async throws {
        try await withStore(SampleTrips.schema) { store, _ in
            let layout = SQLiteLayout(try await store.schema())
            var joined = 0
            for entity in layout.schema.entities {
                for includesSubentities in [false, true] {
                    let selection = layout.allColumns(of: entity, includesSubentities: includesSubentities)
                    var compiler = SQLCompiler(layout: layout, entity: entity)
                    let made = compiler.objectSelect(selection.columns)
                    if let kept = selection.select {
                        #expect(kept == made, "\(entity.name)")
                    } else {
                        joined += 1
                        // The target's entity name, read from the join the compiler adds.
                        #expect(made.contains("r1.\"_entity\""), "\(entity.name): \(made)")
                    }
                }
            }
            #expect(joined > 0, "SampleTrips has entities with to-one relationships")
        }
    }

    @Test func theLayoutFollowsTheSemanticsPage() async throws {
        try await withStore(Catalog.schema) { _, path in
            let connection = try SQLiteConnection(path: path, role: .reader)
            defer { connection.close() }
            var columns: [String] = []
            try connection.query("SELECT name, type FROM pragma_table_info('Item') ORDER BY cid") {
                columns.append("\($0.text(0)) \($0.text(1))")
            }
            #expect(columns.prefix(3) == ["_pk INTEGER", "_entity TEXT", "_version INTEGER"])
            #expect(columns.contains("amount TEXT"))
            #expect(columns.contains("shelf INTEGER"))
            var indexes: [String] = []
            try connection.query(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ) { indexes.append($0.text(0)) }
            for expected in [
                "_fk_Item_shelf", "_fk_Shelf_library", "_index_Item_rank", "_index_Item_label,price",
                "_target__join_Author_books",
                "_unique_Item_sku", "_fk_Person_mentor", "_fk_Passport_holder",
            ] {
                #expect(indexes.contains(expected), "\(expected) in \(indexes)")
            }
            var join: [String] = []
            try connection.query("SELECT name FROM pragma_table_info('_join_Author_books') ORDER BY cid") {
                join.append($0.text(0))
            }
            #expect(join == ["source", "target"])
        }
    }

    @Test func sqliteErrorsCarryTheMessageAndTheSQL() async throws {
        try await withStore(Articles.schema) { _, path in
            let connection = try SQLiteConnection(path: path, role: .reader)
            defer { connection.close() }
            let error = await modelError { try connection.execute("SELEC 1") }
            #expect(error?.code == .storageFailure)
            #expect(error?.message.contains("syntax error") == true)
            #expect(error?.context["sql"] == "SELEC 1")
        }
    }

    @Test func decimalTextComparesByValue() {
        func compare(_ a: String, _ b: String) -> Int32 {
            Array(a.utf8).withUnsafeBytes { x in Array(b.utf8).withUnsafeBytes { y in DecimalText.compare(x, y) } }
        }
        #expect(compare("10.25", "10.250") == 0)
        #expect(compare("9.5", "10") < 0)
        #expect(compare("-0", "0") == 0)
        #expect(compare("-1.5", "-1.25") < 0)
        #expect(compare("0.001", "0.01") < 0)
        #expect(compare("1e2", "99") > 0)
        #expect(compare("100", "1e2") == 0)
        #expect(compare("abc", "1") > 0)
    }
}
