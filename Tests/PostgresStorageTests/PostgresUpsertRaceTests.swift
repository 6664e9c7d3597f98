import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import PostgresStorage
import Testing

/// Upserts of one unique value racing through two openers (two daemons): each found no object
/// with the value, one committed first; the other runs again and updates it, rather than fail
/// with a unique-constraint error its caller asked to be spared.
@Suite struct PostgresUpsertRaceTests {
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Counter",
            attributes: [
                AttributeDescription(name: "name", type: .string), AttributeDescription(name: "value", type: .int),
            ], uniqueConstraints: [["name"]])
    ])

    @Test(.timeLimit(.minutes(3))) func racingUpsertsAllSucceedOnOneObject() async throws {
        let url = try PostgresServer.freshStoreURL()
        let first = try await PostgresStore.open(url: url, applying: Self.schema)
        let second = try await PostgresStore.open(url: url, applying: Self.schema)
        let rounds = 40
        for round in 0..<rounds {
            // Both openers upsert the same new name at once.
            func upsert(_ store: PostgresStore, _ value: Int64) async throws -> SaveResult {
                try await store.save(
                    ChangeSet(
                        inserts: [
                            InsertedObject(
                                id: PersistentIdentifier(
                                    storeIdentifier: store.storeIdentifier, entityName: "Counter",
                                    key: .temporary(UUID())),
                                attributes: ["name": .string("n\(round)"), "value": .int(value)])
                        ], uniquenessPolicy: .upsert))
            }
            async let a = upsert(first, 1)
            async let b = upsert(second, 2)
            let (one, two) = try await (a, b)
            #expect(one.token != nil && two.token != nil, "round \(round): both saves succeed")
        }
        let counted = try await first.fetch(FetchDescriptor(entityName: "Counter", resultType: .count), overlay: nil)
        #expect(counted == .count(rounds), "one object per name")
        await first.close()
        await second.close()
    }
}
