import Foundation
import ModelCore
import Testing

/// Every rejection of `Schema.validate()` / `ResolvedSchema.init`, each naming the culprit.
@Suite struct SchemaValidationTests {
    static func entity(
        _ name: String, _ attributes: [AttributeDescription] = [AttributeDescription(name: "name", type: .string)],
        _ relationships: [RelationshipDescription] = [], superentity: String? = nil,
        unique: [[String]] = [], indexes: [[String]] = []
    ) -> EntityDescription {
        EntityDescription(
            name: name, superentity: superentity, attributes: attributes, relationships: relationships,
            uniqueConstraints: unique, indexes: indexes)
    }

    static func attribute(
        _ name: String, _ type: AttributeType = .string, default value: Value? = nil,
        originalName: String? = nil
    ) -> AttributeDescription {
        AttributeDescription(name: name, type: type, defaultValue: value, originalName: originalName)
    }

    static func relationship(
        _ name: String, to destination: String, toMany: Bool = false, inverse: String? = nil,
        min: Int? = nil, max: Int? = nil
    ) -> RelationshipDescription {
        RelationshipDescription(
            name: name, destination: destination, isToMany: toMany, inverse: inverse, minCount: min, maxCount: max)
    }

    /// A schema, and words its error message must contain (the culprit's names).
    static let invalid: [(String, Schema, [String])] = [
        ("entity name with a dash", Schema(entities: [entity("Bad-Name")]), ["entity name 'Bad-Name'", "not valid"]),
        ("entity name starting with a digit", Schema(entities: [entity("1Trip")]), ["'1Trip'"]),
        ("empty entity name", Schema(entities: [entity("")]), ["entity name ''"]),
        ("entity name too long", Schema(entities: [entity(String(repeating: "a", count: 65))]), ["at most 64"]),
        ("non-ASCII entity name", Schema(entities: [entity("Café")]), ["'Café'"]),
        ("reserved entity name", Schema(entities: [entity("Subquery")]), ["'Subquery'", "reserved word"]),
        ("sqlite_ entity name", Schema(entities: [entity("SQLite_master")]), ["'SQLite_master'", "sqlite_"]),
        (
            "reserved attribute name", Schema(entities: [entity("Trip", [attribute("NOT")])]),
            ["attribute name 'NOT'", "Trip", "reserved"]
        ),
        (
            "attribute name with a space", Schema(entities: [entity("Trip", [attribute("start date")])]),
            ["'start date'", "Trip"]
        ),
        ("attribute name with an underscore first", Schema(entities: [entity("Trip", [attribute("_pk")])]), ["'_pk'"]),
        (
            "reserved relationship name", Schema(entities: [entity("Trip", [], [relationship("self", to: "Trip")])]),
            ["relationship name 'self'", "reserved"]
        ),
        (
            "bad originalName", Schema(entities: [entity("Trip", [attribute("name", originalName: "old name")])]),
            ["'old name'"]
        ),
        ("duplicate entity names", Schema(entities: [entity("Trip"), entity("Trip")]), ["'Trip'", "declared twice"]),
        (
            "entity names differing in case", Schema(entities: [entity("Trip"), entity("TRIP")]),
            ["'TRIP'", "'Trip'", "ignore case"]
        ),
        (
            "relationship to a missing entity",
            Schema(entities: [entity("Trip", [], [relationship("guide", to: "Guide")])]),
            ["'Trip.guide'", "'Guide'"]
        ),
        (
            "inverse that does not exist",
            Schema(entities: [
                entity("Trip", [], [relationship("items", to: "Item", toMany: true, inverse: "journey")]),
                entity("Item", [], [relationship("trip", to: "Trip")]),
            ]),
            ["'Trip.items'", "'journey'", "'Item'"]
        ),
        (
            "inverse that does not point back",
            Schema(entities: [
                entity("Trip", [], [relationship("items", to: "Item", toMany: true, inverse: "owner")]),
                entity("Item", [], [relationship("owner", to: "Person")]), entity("Person"),
            ]),
            ["'Trip.items'", "'Item.owner'", "does not point back", "'Person'"]
        ),
        (
            "inverse whose own inverse is another relationship",
            Schema(entities: [
                entity(
                    "Trip", [],
                    [
                        relationship("items", to: "Item", toMany: true, inverse: "trip"),
                        relationship("extras", to: "Item", toMany: true),
                    ]),
                entity("Item", [], [relationship("trip", to: "Trip", inverse: "extras")]),
            ]),
            ["'Trip.items'", "'Item.trip'"]
        ),
        (
            "its own inverse",
            Schema(entities: [entity("Person", [], [relationship("me", to: "Person", inverse: "me")])]),
            ["'Person.me'", "its own inverse"]
        ),
        (
            "two relationships claiming one inverse",
            Schema(entities: [
                entity("Trip", [], [relationship("items", to: "Item", toMany: true)]),
                entity(
                    "Item", [],
                    [relationship("a", to: "Trip", inverse: "items"), relationship("b", to: "Trip", inverse: "items")]),
            ]),
            ["'Trip.items'", "more than one"]
        ),
        (
            "superentity that does not exist", Schema(entities: [entity("Trip", superentity: "Journey")]),
            ["'Trip'", "'Journey'"]
        ),
        (
            "inheritance cycle",
            Schema(entities: [
                entity("A", [], superentity: "C"), entity("B", [], superentity: "A"),
                entity("C", [], superentity: "B"),
            ]),
            ["inheritance cycle", "A -> C -> B -> A"]
        ),
        (
            "entity inheriting from itself", Schema(entities: [entity("A", [], superentity: "A")]),
            ["inheritance cycle", "A -> A"]
        ),
        (
            "unique constraint on a missing attribute",
            Schema(entities: [entity("Trip", unique: [["name", "start"]])]),
            ["unique constraint [name, start]", "'Trip'", "'start'"]
        ),
        (
            "unique constraint on a relationship",
            Schema(entities: [
                entity("Trip", [attribute("name")], [relationship("next", to: "Trip")], unique: [["next"]])
            ]), ["'next'"]
        ),
        (
            "empty unique constraint", Schema(entities: [entity("Trip", unique: [[]])]),
            ["'Trip'", "empty unique constraint"]
        ),
        (
            "index on a missing attribute", Schema(entities: [entity("Trip", indexes: [["nmae"]])]),
            ["index [nmae]", "'nmae'", "'Trip'"]
        ),
        (
            "index on a to-many relationship",
            Schema(entities: [
                entity(
                    "Trip", [attribute("name")], [relationship("others", to: "Trip", toMany: true)],
                    indexes: [["others"]])
            ]),
            ["'others'", "to-one"]
        ),
        ("empty index", Schema(entities: [entity("Trip", indexes: [[]])]), ["'Trip'", "empty index"]),
        (
            "attribute declared twice",
            Schema(entities: [entity("Trip", [attribute("name"), attribute("name", .int)])]),
            ["'Trip'", "'name' twice"]
        ),
        (
            "attribute names differing in case",
            Schema(entities: [entity("Trip", [attribute("name"), attribute("Name")])]),
            ["'Trip'", "'Name' twice", "ignore case"]
        ),
        (
            "attribute and relationship with one name",
            Schema(entities: [entity("Trip", [attribute("next")], [relationship("next", to: "Trip")])]),
            ["'Trip'", "'next' twice"]
        ),
        (
            "property declared again in a subentity",
            Schema(entities: [
                entity("Trip", [attribute("name")]), entity("PersonalTrip", [attribute("name")], superentity: "Trip"),
            ]),
            ["'name'", "'Trip'", "'PersonalTrip'", "share a table"]
        ),
        (
            "property declared by two sibling subentities",
            Schema(entities: [
                entity("Trip", [attribute("name")]), entity("A", [attribute("x")], superentity: "Trip"),
                entity("B", [attribute("X", .int)], superentity: "Trip"),
            ]),
            ["'X'", "'A'", "'B'", "'Trip' hierarchy"]
        ),
        (
            "negative minCount",
            Schema(entities: [entity("Trip", [], [relationship("r", to: "Trip", toMany: true, min: -1)])]),
            ["'Trip.r'", "negative minCount"]
        ),
        (
            "negative maxCount",
            Schema(entities: [entity("Trip", [], [relationship("r", to: "Trip", toMany: true, max: -2)])]),
            ["'Trip.r'", "negative maxCount"]
        ),
        (
            "minCount above maxCount",
            Schema(entities: [entity("Trip", [], [relationship("r", to: "Trip", toMany: true, min: 3, max: 2)])]),
            ["'Trip.r'", "minCount 3 above maxCount 2"]
        ),
        (
            "counts on a to-one relationship",
            Schema(entities: [entity("Trip", [], [relationship("r", to: "Trip", min: 1)])]),
            ["'Trip.r'", "to-one"]
        ),
        (
            "default of the wrong type",
            Schema(entities: [entity("Trip", [attribute("count", .int, default: .string("1"))])]),
            ["'Trip.count'", "string \"1\"", "not a int"]
        ),
        (
            "date default given as a string",
            Schema(entities: [entity("Trip", [attribute("start", .date, default: .string("2026-01-01"))])]),
            ["'Trip.start'"]
        ),
        (
            "infinite double default",
            Schema(entities: [entity("Trip", [attribute("x", .double, default: .double(.infinity))])]),
            ["'Trip.x'", "JSON cannot carry"]
        ),
    ]

    @Test(arguments: invalid)
    func rejects(label: String, schema: Schema, fragments: [String]) {
        do {
            _ = try ResolvedSchema(schema)
            Issue.record("\(label): accepted")
        } catch {
            #expect(error.code == .invalidSchema, "\(label): \(error)")
            for fragment in fragments {
                #expect(error.message.contains(fragment), "\(label): \(error.message)")
            }
            #expect(!error.context.isEmpty, "\(label)")
        }
        // validate() and versionHash agree with ResolvedSchema.
        #expect(throws: ModelError.self, "\(label)") { try schema.validate() }
        #expect(schema.versionHash == nil, "\(label)")
    }

    @Test(arguments: SchemaNames.reservedWords.sorted())
    func reservedWordsCannotNameAnything(word: String) {
        for name in [word, word.uppercased(), word.prefix(1).uppercased() + word.dropFirst()] {
            #expect(throws: ModelError.self, "\(name)") { try SchemaNames.check(name, kind: "attribute") }
            #expect(throws: ModelError.self, "\(name)") { try Schema(entities: [Self.entity(name)]).validate() }
        }
    }

    @Test func contextNamesTheCulprit() throws {
        let error = try #require(throws: ModelError.self) {
            try Schema(entities: [Self.entity("Trip", [], [Self.relationship("guide", to: "Guide")])]).validate()
        }
        #expect(error.context["entity"] == "Trip")
        #expect(error.context["relationship"] == "guide")
        let attribute = try #require(throws: ModelError.self) {
            try Schema(entities: [Self.entity("Trip", [Self.attribute("count", .int, default: .bool(true))])])
                .validate()
        }
        #expect(attribute.context["attribute"] == "count")
    }

    @Test func validSchemasPass() throws {
        // Names may contain reserved words, digits and underscores, and be 64 characters long.
        let schema = Schema(entities: [
            Self.entity(
                "Trip2",
                [
                    Self.attribute("andMore"), Self.attribute("in_stock", .bool),
                    Self.attribute(String(repeating: "z", count: 64)),
                ],
                [Self.relationship("self_", to: "Trip2")]),
            Self.entity("Sub", [Self.attribute("extra")], superentity: "Trip2"),
        ])
        let resolved = try ResolvedSchema(schema)
        #expect(try resolved.entity("Sub").attributes.count == 4)
        #expect(resolved.versionHash == schema.versionHash)
    }
}
