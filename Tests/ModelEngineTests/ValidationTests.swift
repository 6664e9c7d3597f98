import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import StandardBackends
import Testing

/// Bad input gets a clear error with the right code, and nothing is written.
@Suite struct ValidationTests {
    @Test(arguments: BackendKind.allCases)
    func requiredValuesAndCountsAreCheckedAtSave(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            _ = try await context.insert("Item", attributes: ["sku": .string("no-title")])
            var error = await modelError { try await context.save() }
            #expect(error?.code == .validationFailed)
            #expect(error?.message.contains("'title'") == true)
            await context.rollback()

            // Book.authors needs at least one author.
            _ = try await context.insert("Book", attributes: ["title": .string("Orphan")])
            error = await modelError { try await context.save() }
            #expect(error?.code == .validationFailed)
            #expect(error?.message.contains("authors") == true)
            await context.rollback()

            // Shelf.items holds at most five.
            let shelf = try await context.insert("Shelf", attributes: ["name": .string("full")])
            for n in 0..<6 {
                _ = try await context.insert(
                    "Item", attributes: ["title": .string("i\(n)")], relationships: ["shelf": .toOne(shelf)])
            }
            error = await modelError { try await context.save() }
            #expect(error?.code == .validationFailed)
            #expect(error?.message.contains("maximum of 5") == true)
            #expect(try await store.context().count(FetchDescriptor(entityName: "Item")) == 0)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func badRequestsAreRefusedWithTheRightCode(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let cases: [(String, ModelError.Code, () async throws -> Void)] = [
                ("unknown entity", .unknownEntity, { _ = try await context.insert("Nope") }),
                (
                    "unknown attribute", .unknownProperty,
                    { _ = try await context.insert("Item", attributes: ["colour": .string("red")]) }
                ),
                (
                    "wrong type", .typeMismatch,
                    {
                        _ = try await context.insert(
                            "Item", attributes: ["title": .string("t"), "rank": .string("high")])
                    }
                ),
                (
                    "bad date", .typeMismatch,
                    {
                        _ = try await context.insert(
                            "Item", attributes: ["title": .string("t"), "added": .string("yesterday")])
                    }
                ),
                (
                    "bad json", .typeMismatch,
                    {
                        _ = try await context.insert(
                            "Item", attributes: ["title": .string("t"), "meta": .json("{nope")])
                    }
                ),
                (
                    "to-many given one", .typeMismatch,
                    {
                        _ = try await context.insert(
                            "Shelf", attributes: ["name": .string("s")], relationships: ["items": .toOne(nil)])
                    }
                ),
                (
                    "unknown entity in fetch", .unknownEntity,
                    { _ = try await context.fetch(FetchDescriptor(entityName: "Nope")) }
                ),
                (
                    "unknown sort key", .unknownProperty,
                    {
                        _ = try await context.fetch(
                            FetchDescriptor(entityName: "Item", sortBy: [SortDescriptor("nope")]))
                    }
                ),
                (
                    "negative limit", .invalidArgument,
                    { _ = try await context.fetch(FetchDescriptor(entityName: "Item", limit: -1)) }
                ),
            ]
            for (name, code, body) in cases {
                let error = await modelError(body)
                #expect(error?.code == code, "\(name): \(String(describing: error))")
                #expect(error.map { !$0.message.isEmpty } == true, "\(name)")
            }
            #expect(await !context.hasChanges)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func identifiersOfAnotherStoreOrMissingObjectsAreRefused(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Catalog.schema) { store in
            let context = store.context()
            let foreign = PersistentIdentifier(storeIdentifier: UUID(), entityName: "Item", key: .permanent(1))
            var error = await modelError { _ = try await context.object(for: foreign) }
            #expect(error?.code == .invalidIdentifier)
            error = await modelError { try await context.delete(foreign) }
            #expect(error?.code == .invalidIdentifier)

            let missing = PersistentIdentifier(
                storeIdentifier: store.container.storeIdentifier, entityName: "Item", key: .permanent(999))
            #expect(try await context.object(for: missing) == nil)
            error = await modelError { try await context.update(missing, attributes: ["rank": .int(1)]) }
            #expect(error?.code == .notFound)
            error = await modelError {
                _ = try await context.insert(
                    "Item", attributes: ["title": .string("x")],
                    relationships: [
                        "shelf": .toOne(
                            PersistentIdentifier(
                                storeIdentifier: store.container.storeIdentifier, entityName: "Shelf",
                                key: .permanent(5)))
                    ])
            }
            #expect(error?.code == .notFound)
            // A relationship to an object of the wrong entity.
            let person = try await context.insert("Person", attributes: ["name": .string("P")])
            error = await modelError {
                _ = try await context.insert(
                    "Item", attributes: ["title": .string("x")], relationships: ["shelf": .toOne(person)])
            }
            #expect(error?.code == .typeMismatch)
        }
    }

    @Test func reopeningAFileWithAnotherSchemaIsRefusedWhileObjectsExist() async throws {
        try await withStore(.sqlite, schema: Articles.schema) { store in
            let context = store.context()
            _ = try await context.insert("Student", attributes: ["name": .string("Ann"), "birthOfYear": .int(2001)])
            try await context.save()
            let url = try #require(store.url)
            var changed = Articles.schema
            changed.entities[3].attributes.append(AttributeDescription(name: "email", type: .string))
            do {
                let second = try await ModelContainer.open(url: url, schema: changed, registry: .standard)
                await second.close()
                Issue.record("a different schema was accepted")
            } catch let error as ModelError {
                #expect(error.code == .schemaMismatch)
                #expect(error.message.contains("Student.email"))
            }
            // The same schema opens fine, and so does no schema at all.
            let same = try await ModelContainer.open(url: url, schema: Articles.schema, registry: .standard)
            #expect(same.storeIdentifier == store.container.storeIdentifier)
            await same.close()
        }
    }
}
