import Foundation
import ModelCore
import ModelFixtures
import Testing

/// The version hash and `differences(from:)`.
@Suite struct SchemaVersionTests {
    /// Known answers, computed independently (Python's hashlib) from the canonical JSON: they pin
    /// both the normalization and the SHA-256 implementation (one block and several).
    @Test func knownAnswers() throws {
        #expect(
            try ResolvedSchema(Schema()).versionHash
                == "9efa7b26f87e1ba6580e7e614b343e31ed1381d2406be6d64dd4055c00d696ae")
        let note = Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])
        ])
        #expect(note.versionHash == "79c991dcbcca8b87067ed1d6bcc0858e62bae6468ac4f321acb395fb14645955")
    }

    /// The same schema declared in any order, with or without rename hints, has one hash.
    @Test func independentOfDeclarationOrder() throws {
        var random = SeededRandom(seed: 0x4A5E)
        for schema in [SampleTrips.schema, Articles.schema, Catalog.schema, SchemaJSONTests.everything] {
            let hash = try #require(schema.versionHash)
            #expect(hash.count == 64 && hash.allSatisfy(\.isHexDigit))
            for _ in 0..<20 {
                var shuffled = schema
                shuffled.entities.shuffle(using: &random)
                for index in shuffled.entities.indices {
                    shuffled.entities[index].attributes.shuffle(using: &random)
                    shuffled.entities[index].relationships.shuffle(using: &random)
                    for a in shuffled.entities[index].attributes.indices where random.chance(0.3) {
                        shuffled.entities[index].attributes[a].originalName = "old\(a)"
                    }
                }
                #expect(shuffled.versionHash == hash)
                // Deterministic: the same input gives the same hash again.
                #expect(try ResolvedSchema(shuffled).versionHash == hash)
            }
        }
    }

    /// Resolving an equal schema again gives the schema resolved before; one declared in
    /// another order gets its own (which keeps the order given), and an invalid one is refused
    /// every time.
    @Test func equalSchemasAreResolvedOnce() throws {
        // Other tests resolve schemas at the same time and may fill the cache between two calls,
        // which empties it; one pair in five is enough to show the cache at work.
        let sameInstance = try (0..<5).contains { _ in
            try ResolvedSchema.resolved(SampleTrips.schema) === ResolvedSchema.resolved(SampleTrips.schema)
        }
        #expect(sameInstance)
        let first = try ResolvedSchema.resolved(SampleTrips.schema)
        #expect(first.schema == SampleTrips.schema)
        #expect(first.canonicalJSON == SampleTrips.schema.canonicalJSON())
        var reordered = SampleTrips.schema
        reordered.entities.reverse()
        let other = try ResolvedSchema.resolved(reordered)
        #expect(other !== first && other.schema == reordered && other.versionHash == first.versionHash)
        #expect(other.canonicalJSON == reordered.canonicalJSON() && other.canonicalJSON != first.canonicalJSON)
        let invalid = Schema(entities: [EntityDescription(name: "1bad")])
        for _ in 0..<2 {
            #expect(throws: ModelError.self) { try ResolvedSchema.resolved(invalid) }
        }
    }

    /// Everything that shapes stored data changes the hash.
    @Test func changesThatMatterChangeTheHash() throws {
        let base = Catalog.schema
        let hash = try #require(base.versionHash)
        var edits: [(String, (inout Schema) -> Void)] = []
        edits.append(("attribute type", { $0.entities[0].attributes[4].type = .double }))
        edits.append(("optionality", { $0.entities[0].attributes[0].isOptional = true }))
        edits.append(("default", { $0.entities[0].attributes[1].defaultValue = .int(1) }))
        edits.append(("preserved on deletion", { $0.entities[0].attributes[0].preserveValueOnDeletion = true }))
        edits.append(("attribute name", { $0.entities[0].attributes[7].name = "addedOn" }))
        edits.append(
            (
                "new attribute",
                { $0.entities[1].attributes.append(AttributeDescription(name: "x", type: .int, isOptional: true)) }
            ))
        edits.append(("delete rule", { $0.entities[2].relationships[0].deleteRule = .cascade }))
        edits.append(("max count", { $0.entities[1].relationships[0].maxCount = 6 }))
        edits.append(("unique constraint", { $0.entities[0].uniqueConstraints = [] }))
        edits.append(("index", { $0.entities[0].indexes.append(["title"]) }))
        edits.append(("abstract", { $0.entities[4].isAbstract = true }))
        edits.append(("new entity", { $0.entities.append(EntityDescription(name: "Extra")) }))
        var seen: Set<String> = [hash]
        for (label, edit) in edits {
            var changed = base
            edit(&changed)
            let changedHash = try #require(changed.versionHash, "\(label)")
            #expect(seen.insert(changedHash).inserted, "\(label) did not change the hash")
        }
    }

    @Test func differences() throws {
        let before = SampleTrips.schema
        #expect(before.differences(from: before).isEmpty)
        var after = before
        after.entities.removeAll { $0.name == "LivingAccommodation" }
        after.entities[0].relationships.removeAll { $0.name == "livingAccommodation" }
        after.entities.append(
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]))
        after.entities[0].attributes[1].type = .url
        after.entities[0].attributes.append(
            AttributeDescription(name: "budget", type: .decimal, isOptional: true, defaultValue: .decimal(10)))
        after.entities[0].attributes.removeAll { $0.name == "endDate" }
        after.entities[0].relationships[0].deleteRule = .deny
        after.entities[0].uniqueConstraints = [["name"]]
        after.entities[2].superentity = nil
        let lines = after.differences(from: before)
        #expect(
            lines == [
                "- entity LivingAccommodation",
                "+ entity Note",
                "~ BusinessTrip: superentity Trip -> none",
                "- Trip.endDate",
                "+ Trip.budget: decimal?, default 10",
                "~ Trip.destination: string -> url",
                "- Trip.livingAccommodation",
                "~ Trip.bucketList: to-many BucketListItem, inverse trip, delete rule cascade -> to-many BucketListItem, inverse trip, delete rule deny",
                "~ Trip: unique constraints [[\"name\", \"startDate\", \"endDate\"]] -> [[\"name\"]]",
            ], "\(lines)")
        // The other direction describes the way back.
        let back = before.differences(from: after)
        #expect(back.contains("+ entity LivingAccommodation"))
        #expect(back.contains("- entity Note"))
        #expect(back.contains("+ Trip.endDate: date, preserved on deletion"))
        #expect(back.contains("~ Trip.destination: url -> string"))
        // Declaration order is not a difference.
        var reordered = before
        reordered.entities.reverse()
        reordered.entities[0].attributes.reverse()
        #expect(reordered.differences(from: before).isEmpty)
    }
}
