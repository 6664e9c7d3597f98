import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import Testing

/// Unique constraints across inferred migrations on every backend: a constraint may name an
/// attribute the same migration adds, and the planner works out what each constrained
/// attribute will hold (nil for every stored object, one default for all of them, or nil
/// values filled with a default) before it lets the migration through.
@Suite struct MigrationUniquenessTests {
    /// A Tag entity: `name` and, when asked, an optional `code` and constraints.
    static func tags(code: AttributeDescription? = nil, unique: [[String]] = []) -> Schema {
        Schema(entities: [
            EntityDescription(
                name: "Tag",
                attributes: [AttributeDescription(name: "name", type: .string)] + (code.map { [$0] } ?? []),
                uniqueConstraints: unique)
        ])
    }

    static func insert(_ store: TestStore, _ values: [[String: Value]]) async throws -> [PersistentIdentifier] {
        var c = store.changes()
        let temporary = values.map { c.insert("Tag", $0) }
        let saved = try await store.save(c)
        return temporary.map { saved[$0] }
    }

    @Test(arguments: BackendKind.allCases)
    func anAttributeAndAConstraintOnItAddedTogether(_ kind: BackendKind) async throws {
        try await withStore(kind, Self.tags()) { store in
            _ = try await Self.insert(store, [["name": .string("a")], ["name": .string("b")]])
            // Added without a default, every stored tag holds nil, which never collides: alone
            // and with another attribute.
            for unique in [["code"], ["name", "code"]] {
                let schema = Self.tags(
                    code: AttributeDescription(name: "code", type: .string, isOptional: true), unique: [unique])
                let plan = try await store.backend.migrate(to: schema, options: MigrationOptions(dryRun: true))
                #expect(plan.isAllowed, "\(unique): \(plan.refusals)")
            }
            let schema = Self.tags(
                code: AttributeDescription(name: "code", type: .string, isOptional: true), unique: [["code"]])
            _ = try await store.backend.migrate(to: schema, options: MigrationOptions())
            let migrated = try MigrationTests.migrated(store, schema)
            #expect(try await migrated.values("Tag", key: "code") == ["nil", "nil"])
            _ = try await Self.insert(migrated, [["name": .string("c"), "code": .string("X")]])
            var twice = migrated.changes()
            twice.insert("Tag", ["name": .string("d"), "code": .string("X")])
            #expect(await modelError { try await migrated.save(twice) }?.code == .uniqueConstraint)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func anAttributeAddedWithADefaultUnderAConstraintGivesEveryObjectTheSameValue(_ kind: BackendKind) async throws {
        try await withStore(kind, Self.tags()) { store in
            let ids = try await Self.insert(store, [["name": .string("a")], ["name": .string("b")]])
            let code = AttributeDescription(name: "code", type: .string, defaultValue: .string("same"))
            try await MigrationTests.expectRefusal(
                store, to: Self.tags(code: code, unique: [["code"]]),
                mentioning: "violate the new unique constraint (code): (\(ids[0].uriRepresentation)")
            // With the name beside it, each tag is still told apart.
            let both = Self.tags(code: code, unique: [["name", "code"]])
            _ = try await store.backend.migrate(to: both, options: MigrationOptions())
            #expect(try await MigrationTests.migrated(store, both).values("Tag", key: "code") == ["same", "same"])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func nilFilledWithADefaultIsCheckedAgainstTheConstraint(_ kind: BackendKind) async throws {
        let optional = AttributeDescription(name: "code", type: .string, isOptional: true)
        try await withStore(kind, Self.tags(code: optional, unique: [["code"]])) { store in
            let ids = try await Self.insert(
                store, [["name": .string("a")], ["name": .string("b")], ["name": .string("c"), "code": .string("Y")]])
            // Two tags hold nil: both would get "same".
            let same = Self.tags(
                code: AttributeDescription(name: "code", type: .string, defaultValue: .string("same")),
                unique: [["code"]])
            try await MigrationTests.expectRefusal(
                store, to: same,
                mentioning:
                    "objects holding nil in code would get its default and then break the unique constraint (code): (\(ids[0].uriRepresentation), \(ids[1].uriRepresentation))"
            )
            var one = store.changes()
            one.update(ids[0], ["code": .string("X")])
            try await store.save(one)
            // One tag holds nil, and the default is the value another holds.
            let taken = Self.tags(
                code: AttributeDescription(name: "code", type: .string, defaultValue: .string("Y")), unique: [["code"]])
            try await MigrationTests.expectRefusal(
                store, to: taken, mentioning: "break the unique constraint (code): (")
            // One nil, a default nobody holds: allowed, and filled.
            _ = try await store.backend.migrate(to: same, options: MigrationOptions())
            #expect(
                try await MigrationTests.migrated(store, same).values("Tag", key: "code", sort: ["name"]) == [
                    "X", "same", "Y",
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func aRefusalCountsTheGroupsItDoesNotName(_ kind: BackendKind) async throws {
        try await withStore(kind, Self.tags()) { store in
            // 60 pairs of tags, and one name held by seven.
            let pairs = (0..<60).flatMap { n in [["name": Value.string("pair-\(n)")], ["name": .string("pair-\(n)")]] }
            _ = try await Self.insert(store, pairs + Array(repeating: ["name": .string("seven")], count: 7))
            let plan = try await store.backend.migrate(
                to: Self.tags(unique: [["name"]]), options: MigrationOptions(dryRun: true))
            let refusal = try #require(plan.refusals.first { $0.contains("unique constraint (name)") })
            // The largest group first, five of its seven named; then at least 47 more groups
            // beyond the three named (50 asked for).
            #expect(refusal.contains(" and 2 more); ("), "\(refusal)")
            #expect(refusal.hasSuffix(" and at least 47 more group(s); change or delete them first"), "\(refusal)")
        }
    }
}
