import Foundation
import GRPCCore
import ModelCore
import ModelFixtures
import ModelWire
import SwiftProtobuf
import Testing

/// ModelCore types to wire messages and back, through serialized bytes, unchanged.
@Suite struct WireConversionTests {
    /// Encodes `message` to bytes and decodes it again, as the wire does.
    static func throughBytes<M: SwiftProtobuf.Message>(_ message: M) throws -> M {
        try M(serializedBytes: try message.serializedBytes() as [UInt8])
    }

    static let values: [Value] = [
        .null, .string(""), .string("Zé \"q\"\n😀\u{0}"), .int(0), .int(.min), .int(.max), .double(0.1),
        .double(-1e-300),
        .double(.infinity), .double(.greatestFiniteMagnitude), .bool(true), .bool(false),
        .date(Timestamp(iso8601: "2026-01-31T12:00:00.000001Z")!), .date(Timestamp(microsecondsSince1970: .min)),
        .data(Data()), .data(Data([0, 255, 1])), .uuid(UUID(uuidString: "0A1B2C3D-4E5F-4061-8293-A4B5C6D7E8F9")!),
        .url(URL(string: "https://example.com/a?b=1#c")!), .decimal(Decimal(string: "-12.345")!),
        .decimal(Decimal(string: "123456789012345678901234567.89")!),
        .json("{\"a\": [1, null]}"), .json("null"),
    ]

    @Test(arguments: values)
    func valuesRoundTrip(value: Value) throws {
        let back = try Value(wire: try Self.throughBytes(value.wire))
        #expect(back == value)
        #expect(back.type == value.type)
        if case .decimal(let d) = value { #expect(back.textForm == d.canonicalText) }
    }

    @Test(arguments: [
        (Modeld_V1_Value.with { $0.uuidValue = "not-a-uuid" }, "uuid"),
        (Modeld_V1_Value.with { $0.urlValue = "no scheme" }, "url"),
        (Modeld_V1_Value.with { $0.decimalValue = "1.2.3" }, "decimal"),
        (Modeld_V1_Value.with { $0.jsonValue = "{" }, "json"),
    ])
    func badTextFormsAreTypeMismatches(wire: Modeld_V1_Value, type: String) throws {
        let error = try #require(throws: ModelError.self) { try Value(wire: wire) }
        #expect(error.code == .typeMismatch && error.context["expected"] == type)
        #expect(error.message.contains("is not a valid \(type)"))
    }

    /// SampleTrips with an entity and an attribute renamed (their `originalName`s).
    static var renamed: Schema {
        var schema = SampleTrips.schema
        schema.entities[0].originalName = "Journey"
        schema.entities[0].attributes[0].originalName = "title"
        return schema
    }

    @Test(arguments: [SampleTrips.schema, Articles.schema, Catalog.schema, renamed])
    func schemasRoundTrip(schema: Schema) throws {
        #expect(try Schema(wire: try Self.throughBytes(schema.wire)) == schema)
    }

    @Test func schemasNeedKnownTypes() throws {
        var wire = SampleTrips.schema.wire
        wire.entities[0].attributes[1].type = .unspecified
        let error = try #require(throws: ModelError.self) { try Schema(wire: wire) }
        #expect(error.code == .invalidSchema && error.message.contains("Trip.destination"))
        wire = SampleTrips.schema.wire
        wire.entities[0].relationships[0].maxCount = -2
        #expect(throws: ModelError.self) { try Schema(wire: wire) }
        // A default that is no value of its kind names its attribute, as the schema's errors do.
        wire = SampleTrips.schema.wire
        wire.entities[0].attributes[1].defaultValue = .with { $0.decimalValue = "x" }
        let badDefault = try #require(throws: ModelError.self) { try Schema(wire: wire) }
        #expect(badDefault.code == .invalidSchema, "\(badDefault)")
        #expect(badDefault.message.contains("the default of 'Trip.destination'"), "\(badDefault)")
    }

    /// Every kind of predicate node, nested, survives the wire.
    @Test func randomPredicateTreesRoundTrip() throws {
        var generator = PredicateGenerator(seed: 0xC0FFEE)
        for _ in 0..<3_000 {
            let predicate = generator.predicate(depth: 4)
            let wire = try Self.throughBytes(Modeld_V1_Predicate(predicate))
            #expect(try wire.model() == predicate, "\(predicate)")
        }
        for kind in [
            "comparison", "and", "or", "not", "subqueryCount", "collection", "arithmetic", "list", "object",
            "entityName", "literal",
        ] {
            #expect(generator.tally[kind, default: 0] > 100, "\(kind): \(generator.tally[kind, default: 0])")
        }
    }

    @Test func predicateTextIsParsed() throws {
        let wire = Modeld_V1_Predicate(text: "name BEGINSWITH[c] \"par\" AND items.@count > 2")
        #expect(try wire.model() == PredicateParser.parse("name BEGINSWITH[c] \"par\" AND items.@count > 2"))
        #expect(try Modeld_V1_Predicate().model() == nil)
        let error = try #require(throws: ModelError.self) { try Modeld_V1_Predicate(text: "name ==").model() }
        #expect(error.code == .invalidPredicate && error.context["column"] != nil)
    }

    @Test(arguments: [
        Modeld_V1_PredicateNode(),
        Modeld_V1_PredicateNode.with { $0.and = .with { $0.predicates = [.with { $0.constant = true }] } },
        Modeld_V1_PredicateNode.with { $0.comparison = .with { $0.op = .equal } },
        Modeld_V1_PredicateNode.with {
            $0.comparison = .with {
                $0.lhs.keyPath.components = ["a"]; $0.rhs.literal = .with { $0.intValue = 1 }
            }
        },
        Modeld_V1_PredicateNode.with {
            $0.comparison = .with {
                $0.op = .equal; $0.lhs.keyPath.components = ["a b"]; $0.rhs.literal = .init()
            }
        },
        Modeld_V1_PredicateNode.with {
            $0.comparison = .with {
                $0.op = .equal; $0.lhs.collection = .with { $0.collection.components = ["x"] }; $0.rhs.literal = .init()
            }
        },
        Modeld_V1_PredicateNode.with {
            $0.comparison = .with {
                $0.op = .equal; $0.lhs.object = "nope"; $0.rhs.literal = .init()
            }
        },
    ])
    func incompleteTreesAreRefused(node: Modeld_V1_PredicateNode) throws {
        let error = try #require(throws: ModelError.self) { try Predicate(wire: node) }
        #expect([.invalidPredicate, .invalidIdentifier].contains(error.code), "\(error)")
        #expect(!error.message.isEmpty)
    }

    /// A tree nested deeper than the decoder allows fails to decode, rather than crash.
    @Test func deepTreesStopAtTheDecoder() throws {
        func nested(_ depth: Int) -> Modeld_V1_PredicateNode {
            var node = Modeld_V1_PredicateNode.with { $0.constant = true }
            for _ in 0..<depth { node = .with { $0.not = node } }
            return node
        }
        let shallow: [UInt8] = try nested(50).serializedBytes()
        #expect(try Predicate(wire: Modeld_V1_PredicateNode(serializedBytes: shallow)) != .constant(false))
        // Made byte by byte: building (or encoding) such a message would itself recurse that deep.
        var deep: [UInt8] = [0x08, 0x01] // constant: true
        for _ in 0..<5_000 {
            var length = deep.count, prefix: [UInt8] = [0x2A] // field 5 (not), length-delimited
            while length >= 0x80 { prefix.append(UInt8(length & 0x7F) | 0x80); length >>= 7 }
            prefix.append(UInt8(length))
            deep = prefix + deep
        }
        #expect(throws: (any Error).self) { try Modeld_V1_PredicateNode(serializedBytes: deep) }
    }

    @Test func fetchAndAggregateDescriptorsRoundTrip() throws {
        let fetch = FetchDescriptor(
            entityName: "Trip", predicate: try PredicateParser.parse("name CONTAINS[cd] \"é\""),
            sortBy: [
                SortDescriptor("startDate", ascending: false), SortDescriptor("name", caseInsensitive: true),
                SortDescriptor(PropertyPath(["livingAccommodation", "placeName"])),
            ],
            offset: 3, limit: 9, includesSubentities: false, propertiesToFetch: ["name"],
            relationshipKeyPathsForPrefetching: ["bucketList", "livingAccommodation"], resultType: .identifiers)
        #expect(try FetchDescriptor(wire: try Self.throughBytes(fetch.wire)) == fetch)
        let plain = FetchDescriptor(entityName: "Trip")
        #expect(try FetchDescriptor(wire: try Self.throughBytes(plain.wire)) == plain)

        let aggregate = AggregateDescriptor(
            entityName: "Student", predicate: .constant(true), groupBy: ["birthOfYear"],
            aggregations: [Aggregation("n", .count), Aggregation("oldest", .min, "birthOfYear")],
            sortBy: [AggregateSort("n", ascending: false)], offset: 1, limit: 2, includesSubentities: false)
        #expect(try AggregateDescriptor(wire: try Self.throughBytes(aggregate.wire)) == aggregate)
        let error = try #require(throws: ModelError.self) {
            try FetchDescriptor(
                wire: .with {
                    $0.entity = "Trip"; $0.sort = [.with { $0.keyPath = "a..b" }]
                })
        }
        #expect(error.code == .invalidArgument && error.context["keyPath"] == "a..b")
    }

    @Test func historyAndEditsRoundTrip() throws {
        let store = UUID()
        let trip = PersistentIdentifier(storeIdentifier: store, entityName: "Trip", key: .permanent(4))
        let new = PersistentIdentifier(storeIdentifier: store, entityName: "Trip", key: .temporary(UUID()))
        let transaction = HistoryTransaction(
            token: HistoryToken(7), timestamp: Timestamp(microsecondsSince1970: 1_790_000_000_123_456), author: "app",
            changes: [
                HistoryChange(kind: .insert, id: trip),
                HistoryChange(kind: .update, id: trip, changedProperties: ["name", "startDate"]),
                HistoryChange(kind: .delete, id: trip, tombstone: ["name": .string("Rome"), "endDate": .null]),
            ])
        #expect(try HistoryTransaction(wire: try Self.throughBytes(transaction.wire), in: store) == transaction)
        let edits: [ObjectEdit] = [
            .insert(
                entity: "Trip", attributes: ["name": .string("Kyoto")], relationships: ["bucketList": .toMany([])],
                id: new),
            .update(trip, attributes: ["name": .null], relationships: ["livingAccommodation": .toOne(nil)]),
            .delete(trip), .add([trip], relationship: "r", of: new), .remove([new], relationship: "r", of: trip),
        ]
        for edit in edits {
            #expect(try ObjectEdit(wire: try Self.throughBytes(edit.wire), in: store) == edit)
        }
        let foreign = try #require(throws: ModelError.self) {
            try ObjectEdit.edits(wire: edits.map(\.wire), in: UUID())
        }
        #expect(foreign.code == .invalidIdentifier && foreign.context["change"] == "1")
    }
}

/// The one mapping from ModelError codes to gRPC statuses, and back.
@Suite struct ErrorMappingTests {
    @Test(arguments: ModelError.Code.allCases)
    func everyCodeTravelsAndComesBack(code: ModelError.Code) throws {
        let error = ModelError(
            code, "what went wrong, and what to do", context: ["entity": "Trip", "predicate": "name == \"Zoë\""])
        let rpc = RPCError(error)
        #expect(rpc.code == ModelError.statusCode(for: code))
        #expect(rpc.message == error.message)
        #expect(ModelError(rpc) == error)
    }

    @Test func theTableIsDesignsTable() {
        let expected: [ModelError.Code: RPCError.Code] = [
            .invalidArgument: .invalidArgument, .unknownEntity: .invalidArgument, .typeMismatch: .invalidArgument,
            .notFound: .notFound, .uniqueConstraint: .alreadyExists, .deleteDenied: .failedPrecondition,
            .schemaMismatch: .failedPrecondition, .conflict: .aborted, .resourceExhausted: .resourceExhausted,
        ]
        for (code, status) in expected { #expect(ModelError.statusCode(for: code) == status, "\(code)") }
    }

    /// A status from something other than modeld gets the closest code and keeps its message.
    @Test func foreignStatusesGetTheClosestCode() {
        #expect(ModelError(RPCError(code: .notFound, message: "gone")) == ModelError(.notFound, "gone"))
        #expect(ModelError(RPCError(code: .unavailable, message: "down")).code == .unavailable)
        #expect(ModelError(RPCError(code: .dataLoss, message: "?")).code == .storageFailure)
    }
}

/// Where daemon and clients look when nobody says.
@Suite struct DefaultLocationTests {
    @Test func usersAndRoot() {
        let user = ["XDG_RUNTIME_DIR": "/run/user/1000", "XDG_DATA_HOME": "/home/a/.data", "HOME": "/home/a"]
        #expect(DefaultLocations.socketPath(environment: user, userID: 1000) == "/run/user/1000/modeld/modeld.sock")
        #expect(DefaultLocations.dataDirectory(environment: user, userID: 1000) == "/home/a/.data/modeld")
        #expect(DefaultLocations.socketPath(environment: [:], userID: 1000) == "/tmp/modeld-1000/modeld.sock")
        #expect(
            DefaultLocations.dataDirectory(environment: ["HOME": "/home/a"], userID: 1000)
                == "/home/a/.local/share/modeld")
        #expect(DefaultLocations.socketPath(environment: user, userID: 0) == "/run/modeld/modeld.sock")
        #expect(DefaultLocations.dataDirectory(environment: user, userID: 0) == "/var/lib/modeld")
    }

    /// A client finds the system daemon (systemd's socket) when the user runs none of their own.
    @Test func clientsFallBackToTheSystemDaemon() {
        let user = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(
            DefaultLocations.clientSocketPath(environment: user, userID: 1000) { $0 == "/run/modeld/modeld.sock" }
                == "/run/modeld/modeld.sock")
        #expect(
            DefaultLocations.clientSocketPath(environment: user, userID: 1000) { _ in true }
                == "/run/user/1000/modeld/modeld.sock")
        #expect(
            DefaultLocations.clientSocketPath(environment: user, userID: 1000) { _ in false }
                == "/run/user/1000/modeld/modeld.sock")
    }
}
