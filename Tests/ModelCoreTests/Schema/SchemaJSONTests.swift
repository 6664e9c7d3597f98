import Foundation
import ModelCore
import ModelFixtures
import Testing

/// The canonical JSON form: what the CLI reads and writes.
@Suite struct SchemaJSONTests {
    /// A schema using every feature the JSON form carries.
    static let everything = Schema(entities: [
        EntityDescription(
            name: "Base", isAbstract: true,
            attributes: [
                AttributeDescription(
                    name: "s", type: .string, defaultValue: .string("dé\"fault\n"), preserveValueOnDeletion: true),
                AttributeDescription(
                    name: "i", type: .int, isOptional: true, defaultValue: .int(-9_223_372_036_854_775_808)),
                AttributeDescription(name: "d", type: .double, defaultValue: .double(0.1)),
                AttributeDescription(name: "b", type: .bool, defaultValue: .bool(true)),
                AttributeDescription(name: "t", type: .date, defaultValue: .date(.iso("2026-01-31T12:00:00.000001Z"))),
                AttributeDescription(name: "bytes", type: .data, defaultValue: .data(Data([0, 255, 7]))),
                AttributeDescription(name: "u", type: .uuid, defaultValue: .uuid(Fixed.store)),
                AttributeDescription(
                    // valid literal
                    name: "link", type: .url, defaultValue: .url(URL(string: "https://example.com/x?y=1")!)),
                AttributeDescription(
                    // valid literal
                    name: "money", type: .decimal, defaultValue: .decimal(Decimal(string: "-12.345")!)),
                AttributeDescription(
                    name: "meta", type: .json, isOptional: true, defaultValue: .json("{\"a\":[1,null]}"),
                    originalName: "metadata"),
            ],
            relationships: [
                RelationshipDescription(
                    name: "owner", destination: "Owner", inverse: "things", deleteRule: .deny,
                    isOptional: false)
            ],
            uniqueConstraints: [["s", "i"], ["u"]],
            indexes: [["t"], ["owner", "s"]]
        ),
        EntityDescription(
            name: "Thing", superentity: "Base",
            attributes: [AttributeDescription(name: "extra", type: .string, isOptional: true)]),
        EntityDescription(
            name: "Owner",
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(
                    name: "things", destination: "Base", isToMany: true, deleteRule: .cascade, minCount: 0, maxCount: 10
                ),
                RelationshipDescription(name: "friends", destination: "Owner", isToMany: true, deleteRule: .noAction),
            ]
        ),
    ])

    @Test(arguments: [
        ("everything", everything), ("SampleTrips", SampleTrips.schema), ("Articles", Articles.schema),
        ("Catalog", Catalog.schema), ("empty", Schema()),
    ])
    func roundTrips(name: String, schema: Schema) throws {
        let json = schema.canonicalJSON()
        let decoded = try Schema(json: json)
        #expect(decoded == schema, "\(name)")
        // Canonical: encoding again gives the same text, byte for byte.
        #expect(decoded.canonicalJSON() == json, "\(name)")
        #expect(!json.isEmpty)
        if name != "empty" { _ = try ResolvedSchema(decoded) }
    }

    @Test func canonicalFormLeavesDefaultsOutAndSortsKeys() throws {
        let json = Schema(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])
        ]).canonicalJSON()
        #expect(
            json == """
                {
                  "entities" : [
                    {
                      "attributes" : [
                        {
                          "name" : "text",
                          "type" : "string"
                        }
                      ],
                      "name" : "Note"
                    }
                  ]
                }
                """)
        let everything = Self.everything.canonicalJSON()
        #expect(everything.contains("\"default\" : \"2026-01-31T12:00:00.000001Z\""))
        #expect(everything.contains("\"default\" : \"AP8H\""))
        #expect(everything.contains("\"default\" : -9223372036854775808"))
        #expect(everything.contains("\"toMany\" : true"))
        #expect(everything.contains("\"optional\" : false"))
        #expect(everything.contains("\"originalName\" : \"metadata\""))
        #expect(!everything.contains("nullify"))
    }

    @Test func readsHandWrittenJSON() throws {
        let schema = try Schema(
            json: """
                {"entities": [{"name": "Note", "attributes": [
                    {"name": "when", "type": "date", "default": "2026-01-31"},
                    {"name": "price", "type": "decimal", "default": 12.5},
                    {"name": "count", "type": "int", "optional": true, "default": null}],
                  "relationships": [{"name": "tags", "destination": "Note", "toMany": true}]}]}
                """)
        let note = try #require(schema.entity(named: "Note"))
        #expect(note.attributes[0].defaultValue == .date(.iso("2026-01-31")))
        #expect(note.attributes[1].defaultValue == .decimal(Decimal(string: "12.5")!)) // valid literal
        #expect(note.attributes[2].defaultValue == nil)
        #expect(note.attributes[2].isOptional)
        #expect(note.relationships[0].isToMany)
        #expect(note.relationships[0].deleteRule == .nullify)
        #expect(note.relationships[0].isOptional)
    }

    @Test(arguments: [
        ("not json", "the schema JSON is not valid: Invalid value around character 1 (line 1, column 2)"),
        (
            "{\n  \"entities\": [}",
            "the schema JSON is not valid: Invalid value around character 17 (line 2, column 16)"
        ),
        ("{\"entities\": [", "the schema JSON is not valid: Unexpected end of file"),
        ("{}", "missing key 'entities'"),
        (
            "{\"entities\": [{\"name\": \"A\", \"attributes\": [{\"name\": \"x\", \"type\": \"float\"}]}]}",
            "'float' is not an attribute type; use one of 'string', 'int', 'double', 'bool', 'date', 'data', 'uuid', 'url', 'decimal', 'json' at entities[0].attributes[0].type"
        ),
        (
            "{\"entities\": [{\"name\": \"A\", \"attributes\": [{\"name\": \"x\", \"type\": \"date\", \"default\": \"soon\"}]}]}",
            "'soon' is not a valid date"
        ),
        (
            "{\"entities\": [{\"name\": \"A\", \"attributes\": [{\"name\": \"x\", \"type\": \"int\", \"default\": \"1\"}]}]}",
            "entities[0].attributes[0].default"
        ),
        ("{\"entities\": [{\"name\": \"A\", \"relationships\": [{\"name\": \"r\"}]}]}", "missing key 'destination'"),
        (
            "{\"entities\": [{\"name\": \"A\", \"relationships\": [{\"name\": \"r\", \"destination\": \"A\", \"deleteRule\": \"explode\"}]}]}",
            "'explode' is not a delete rule; use one of 'nullify', 'cascade', 'deny', 'noAction' at entities[0].relationships[0].deleteRule"
        ),
        ("{\"entities\": 5}", "entities"),
    ])
    func rejectsBadJSON(json: String, fragment: String) throws {
        let error = try #require(throws: ModelError.self) { try Schema(json: json) }
        #expect(error.code == .invalidSchema)
        #expect(error.message.contains(fragment), "\(error.message)")
    }
}
