import Foundation
import ModelCore
import ModelStorage
@testable import SQLiteStorage
import Testing

/// What a read makes of a row's `_entity` column. A table of one entity holds that entity's
/// rows alone (modeld writes no other name there, and a migration that removes or renames an
/// entity deletes or renames its rows): every row is read as the entity's without the column
/// being compared, whether the rows come as snapshots, as cells handed to a sink, or by key. In
/// a hierarchy's table the column tells the rows' entities apart, and a row of an entity the
/// schema does not have is left out.
@Suite struct EntityColumnTests {
    static let single = Schema(entities: [
        EntityDescription(name: "Note", attributes: [AttributeDescription(name: "title", type: .string)])
    ])

    static let hierarchy = Schema(entities: [
        EntityDescription(name: "Animal", attributes: [AttributeDescription(name: "title", type: .string)]),
        EntityDescription(name: "Dog", superentity: "Animal"),
    ])

    static func byTitle(_ entity: String) -> FetchDescriptor {
        FetchDescriptor(entityName: entity, sortBy: [SortDescriptor(PropertyPath(["title"]))])
    }

    /// The titles of the objects a sink was handed, with their entities.
    struct Titles: ObjectRowSink {
        var seen: [String] = []

        mutating func add(_ row: ObjectRow) -> Bool {
            seen.append("\(row.shape.entityName) \(row.attributes.first ?? .null)")
            return true
        }

        mutating func add(_ snapshot: ObjectSnapshot) -> Bool {
            seen.append("\(snapshot.id.entityName) \(snapshot["title"])")
            return true
        }

        mutating func add(
            id: PersistentIdentifier, version: Int64, shape: ObjectShape, toOne: [PersistentIdentifier?],
            cells: (Int) -> RowCell
        ) -> Bool {
            let title = shape.attributeNames.firstIndex(of: "title").map { cells($0).value } ?? .null
            seen.append("\(id.entityName) \(title)")
            return true
        }
    }

    /// Another tool's name in `_entity` of a one-entity table, on the first row read and on a
    /// later one: both rows are still the entity's, by every way of reading them.
    @Test(arguments: ["a", "b"])
    func aTableOfOneEntityReadsEveryRowAsItsEntity(renamed title: String) async throws {
        try await withStore(Self.single) { store, path in
            let ids = try await store.insert("Note", [["title": .string("a")], ["title": .string("b")]])
            try asAnotherTool(#"UPDATE "Note" SET "_entity" = 'Elsewhere' WHERE "title" = '\#(title)'"#, on: path)

            let fetched = try await store.fetch(Self.byTitle("Note")).objects
            #expect(fetched.map(\.id) == ids)
            #expect(fetched.map { $0["title"] } == [.string("a"), .string("b")])
            var sink = Titles()
            #expect(try store.fetchWithoutWaiting(Self.byTitle("Note"), into: &sink) == 2)
            #expect(sink.seen == ["Note \(Value.string("a"))", "Note \(Value.string("b"))"])
            #expect(try await store.snapshots(for: ids).map { $0["title"] } == [.string("a"), .string("b")])
            var one = Titles()
            #expect(try store.objectsWithoutWaiting(for: [ids[title == "a" ? 0 : 1]], into: &one))
            #expect(one.seen == ["Note \(Value.string(title))"])
        }
    }

    /// A one-entity table's objects statement selects NULL in place of `_entity`, so that
    /// SQLite does not read a column nobody reads; a hierarchy's selects the column, by which
    /// its rows are told apart.
    @Test func onlyAHierarchysStatementsSelectTheEntityColumn() async throws {
        try await withStore(Self.hierarchy) { store, _ in
            let hierarchy = SQLiteLayout(try await store.schema())
            var animal = SQLCompiler(layout: hierarchy, entity: try hierarchy.schema.entity("Animal"))
            let animalSQL = try animal.fetch(Self.byTitle("Animal"), columns: [])
            #expect(animalSQL.hasPrefix(#"SELECT t0."_pk", t0."_entity", t0."_version""#), "\(animalSQL)")
        }
        try await withStore(Self.single) { store, _ in
            let single = SQLiteLayout(try await store.schema())
            let note = try single.schema.entity("Note")
            var compiler = SQLCompiler(layout: single, entity: note)
            let sql = try compiler.fetch(Self.byTitle("Note"), columns: [])
            #expect(sql.hasPrefix(#"SELECT t0."_pk", NULL, t0."_version""#), "\(sql)")
            let kept = single.allColumns(of: note, includesSubentities: false).select
            #expect(kept?.hasPrefix(#"t0."_pk", NULL, t0."_version""#) == true, "\(kept ?? "none")")
        }
    }

    /// In a hierarchy's table, a row whose `_entity` names no entity of the schema is left out,
    /// and the others are read as the entities they name.
    @Test func aHierarchyLeavesOutARowOfAnEntityItDoesNotHave() async throws {
        try await withStore(Self.hierarchy) { store, path in
            try await store.insert("Animal", [["title": .string("a")]])
            try await store.insert("Dog", [["title": .string("b")], ["title": .string("c")]])
            try asAnotherTool(#"UPDATE "Animal" SET "_entity" = 'Elsewhere' WHERE "title" = 'b'"#, on: path)

            let fetched = try await store.fetch(Self.byTitle("Animal")).objects
            #expect(fetched.map(\.id.entityName) == ["Animal", "Dog"])
            #expect(fetched.map { $0["title"] } == [.string("a"), .string("c")])
            var sink = Titles()
            #expect(try store.fetchWithoutWaiting(Self.byTitle("Animal"), into: &sink) == 2)
            #expect(sink.seen == ["Animal \(Value.string("a"))", "Dog \(Value.string("c"))"])
        }
    }
}
