import Foundation
import ModelRemote
import ModelCore
import ModelFixtures
import ModelTesting
import Testing

/// Names that try to escape or inject are refused; values are only ever bound.
@Suite struct AccessTests {
    @Test(arguments: [
        #"Trip"; DROP TABLE "Trip"; --"#, "Trip--", "Trip;", "x' OR '1'='1", "_pk", "sqlite_master", "Trip\0",
        "\"Trip\"", "T rip", "",
    ])
    func injectedEntityNamesAreRefused(name: String) async throws {
        try await withTestStore { store in
            let schema = Schema(entities: [
                EntityDescription(name: name, attributes: [AttributeDescription(name: "title", type: .string)])
            ])
            let error = await #expect(throws: ModelError.self) {
                try await store.client.applySchema(schema, to: store.name)
            }
            #expect(error?.code == .invalidSchema, "\(name.debugDescription): \(String(describing: error))")
            // Attribute names too.
            let attribute = Schema(entities: [
                EntityDescription(name: "Note", attributes: [AttributeDescription(name: name, type: .string)])
            ])
            await #expect(throws: ModelError.self) { try await store.client.applySchema(attribute, to: store.name) }
            let entities = try await store.client.store(store.name).entities
            #expect(entities.isEmpty)
        }
    }

    /// Text that looks like SQL is a value like any other: stored and found verbatim.
    @Test func valuesAreOnlyEverBound() async throws {
        let schema = Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "title", type: .string)])
        ])
        try await withTestStore(schema: schema) { store in
            let hostile = [#"'); DROP TABLE "Note"; --"#, #"" OR 1=1 --"#, "\0nul\0", "%_*?", #"\"#, "🙂'\"`"]
            try await store.client.apply(
                hostile.map {
                    .insert(entity: "Note", attributes: ["title": .string($0)], relationships: [:], id: nil)
                }, in: store.name)
            let sorted = try await store.client.fetch(
                FetchDescriptor(entityName: "Note", sortBy: [SortDescriptor("title")]), in: store.name
            ).objects
            #expect(
                sorted.map { $0["title"].textForm ?? "" }
                    == hostile.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
            for text in hostile {
                let predicate = ModelCore.Predicate.equal("title", .string(text))
                #expect(
                    try await store.client.count(
                        FetchDescriptor(entityName: "Note", predicate: predicate), in: store.name) == 1,
                    "\(text.debugDescription)")
            }
        }
    }
}

/// 32 clients updating the same objects at once under the default merge policy lose no update:
/// every save applies fully or fails with ABORTED naming the objects it conflicted on.
@Suite struct ConflictTests {
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Counter",
            attributes: [
                AttributeDescription(name: "name", type: .string), AttributeDescription(name: "value", type: .int),
            ])
    ])

    @Test func thirtyTwoClientsLoseNoUpdate() async throws {
        try await withTestStore(schema: Self.schema, daemon: .perTest) { store in
            let saved = try await store.client.apply(
                ["a", "b"].map {
                    .insert(
                        entity: "Counter", attributes: ["name": .string($0), "value": .int(0)], relationships: [:],
                        id: nil)
                },
                in: store.name)
            let counters = saved.remappedIdentifiers.values.sorted { $0.primaryKey ?? 0 < $1.primaryKey ?? 0 }
            let results = try await withThrowingTaskGroup(of: (applied: Int, aborted: Int).self) { group in
                for client in 0..<32 {
                    group.addTask {
                        try await DaemonClient.withClient(socketPath: store.socketPath) { connection in
                            var applied = 0, aborted = 0
                            while applied < 5 {
                                // Read both counters, add one to each, save: all or nothing.
                                let session = try await connection.openSession(
                                    on: store.name, author: "client-\(client)")
                                let objects = try await session.objects(counters)
                                for object in objects {
                                    guard case .int(let value) = object["value"] else { continue }
                                    try await session.update(object.id, attributes: ["value": .int(value + 1)])
                                }
                                do {
                                    try await session.save()
                                    applied += 1
                                } catch let error as ModelError where error.code == .conflict {
                                    aborted += 1
                                    let named = Set(
                                        (error.context["objects"] ?? "").split(separator: " ").map(String.init))
                                    #expect(
                                        !named.isEmpty && named.isSubset(of: Set(counters.map(\.uriRepresentation))),
                                        "\(error)")
                                }
                                try await session.close()
                            }
                            return (applied, aborted)
                        }
                    }
                }
                return try await group.reduce(into: [(applied: Int, aborted: Int)]()) { $0.append($1) }
            }
            let applied = results.map(\.applied).reduce(0, +)
            let aborted = results.map(\.aborted).reduce(0, +)
            #expect(applied == 32 * 5)
            #expect(aborted > 0, "32 clients never collided: the test did not test conflicts")
            // Every applied save added one to both counters; no aborted one added anything.
            let values = try await store.client.objects(counters, in: store.name).map { $0["value"] }
            #expect(values == [.int(Int64(applied)), .int(Int64(applied))], "\(values), \(aborted) saves aborted")
            let history = try await store.client.history(after: nil, in: store.name)
            #expect(history.count == applied + 1 && history.dropFirst().allSatisfy { $0.changes.count == 2 })
        }
    }
}
