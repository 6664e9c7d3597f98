import Foundation
import ModelCore
import ModelFixtures
import Testing

/// `Predicate.typed(for:in:)`: literals typed from the schema, and every misuse rejected with a
/// message that names what is wrong.
@Suite struct PredicateTyperTests {
    static let trips = try! ResolvedSchema(SampleTrips.schema) // the fixture is valid (SchemaFixtureTests)
    static let catalog = try! ResolvedSchema(Catalog.schema) // the fixture is valid (SchemaFixtureTests)

    /// Parses `text` and types it for `entity`.
    static func typed(
        _ text: String, _ entity: String, in schema: ResolvedSchema = trips,
        store: UUID? = nil
    ) throws -> Predicate {
        try PredicateParser.parse(text).typed(for: try schema.entity(entity), in: schema, storeIdentifier: store)
    }

    /// The error typing `text` throws, or nil (and an issue) if it types.
    static func failure(
        _ text: String, _ entity: String, in schema: ResolvedSchema = trips, store: UUID? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> ModelError? {
        do {
            let predicate = try PredicateParser.parse(text)
            let typed = try predicate.typed(for: try schema.entity(entity), in: schema, storeIdentifier: store)
            Issue.record("\(text) typed as \(typed)", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Literals take the attribute's type

    @Test func stringsBecomeDatesForDateAttributes() throws {
        let typed = try Self.typed("startDate > \"2026-01-31\" AND endDate <= '2026-02-01T12:30:00+01:00'", "Trip")
        #expect(
            typed
                == .and([
                    P.cmp(P.key("startDate"), .greater, P.value(.date(.iso("2026-01-31")))),
                    P.cmp(P.key("endDate"), .lessOrEqual, P.value(.date(.iso("2026-02-01T11:30:00Z")))),
                ]))
        // The literal may stand on the left too.
        #expect(
            try Self.typed("\"2026-01-31\" < startDate", "Trip")
                == P.cmp(P.value(.date(.iso("2026-01-31"))), .less, P.key("startDate")))
        #expect(
            try Self.typed("startDate BETWEEN {'2026-01-01', '2026-12-31'}", "BusinessTrip")
                == P.cmp(
                    P.key("startDate"), .between,
                    .list([P.value(.date(.iso("2026-01-01"))), P.value(.date(.iso("2026-12-31")))])))
        #expect(
            try Self.typed("startDate IN {'2026-01-01', nil}", "Trip")
                == P.cmp(P.key("startDate"), .in, .list([P.value(.date(.iso("2026-01-01"))), P.null])))
    }

    @Test(arguments: [
        "startDate > \"31/01/2026\"", "startDate == 'tomorrow'", "startDate < \"2026-02-30\"",
        "startDate IN {'2026-01-01', 'soon'}",
    ])
    func nonISODatesAreRejected(text: String) throws {
        let error = try #require(Self.failure(text, "Trip"))
        #expect(error.code == .typeMismatch)
        #expect(error.message.contains("is not a valid date"), "\(error.message)")
        #expect(error.message.contains("ISO 8601"), "\(error.message)")
    }

    @Test func numbersConvertWhereNothingIsLost() throws {
        #expect(try Self.typed("price == 5", "Item", in: Self.catalog) == P.eq("price", P.double(5)))
        #expect(try Self.typed("rank == 5.0", "Item", in: Self.catalog) == P.eq("rank", P.int(5)))
        #expect(try Self.typed("rank < 5.5", "Item", in: Self.catalog) == P.cmp(P.key("rank"), .less, P.double(5.5)))
        #expect(try Self.typed("amount == 5", "Item", in: Self.catalog) == P.eq("amount", P.value(.decimal(5))))
        #expect(try Self.typed("perdiem > -1", "BusinessTrip") == P.cmp(P.key("perdiem"), .greater, P.double(-1)))
        // 2^53 + 1 has no double of its own: it stays an int, compared exactly.
        #expect(
            try Self.typed("price == 9007199254740993", "Item", in: Self.catalog)
                == P.eq("price", P.int(9_007_199_254_740_993)))
        #expect(
            try Self.typed("price IN {1, 2.5}", "Item", in: Self.catalog)
                == P.cmp(P.key("price"), .in, .list([P.double(1), P.double(2.5)])))
    }

    @Test func otherLiteralsTakeTheirAttributesTypes() throws {
        let id = "11111111-2222-3333-4444-555555555555"
        #expect(
            try Self.typed("code == '\(id.uppercased())'", "Item", in: Self.catalog)
                == P.eq("code", P.value(.uuid(Fixed.store))))
        #expect(
            try Self.typed("link == 'https://example.com'", "Item", in: Self.catalog)
                == P.eq("link", P.value(.url(URL(string: "https://example.com")!)))) // valid literal
        #expect(
            try Self.typed("amount < '12.50'", "Item", in: Self.catalog)
                == P.cmp(P.key("amount"), .less, P.value(.decimal(Decimal(string: "12.5")!)))) // valid literal
        #expect(try Self.typed("inStock == 1", "Item", in: Self.catalog) == P.eq("inStock", P.value(.bool(true))))
        #expect(
            try Self.typed("blob == 'AAE='", "Item", in: Self.catalog) == P.eq("blob", P.value(.data(Data([0, 1])))))
        #expect(
            try Self.typed("meta == '{\"a\": 1}'", "Item", in: Self.catalog)
                == P.eq("meta", P.value(.json("{\"a\": 1}"))))
        #expect(Self.failure("code == 'not-a-uuid'", "Item", in: Self.catalog)?.code == .typeMismatch)
        #expect(Self.failure("inStock == 2", "Item", in: Self.catalog)?.code == .typeMismatch)
        #expect(Self.failure("title == 5", "Item", in: Self.catalog)?.code == .typeMismatch)
        #expect(Self.failure("\"a\" == 1", "Item", in: Self.catalog)?.code == .typeMismatch)
    }

    // MARK: Object references

    @Test func urisBecomeObjectReferences() throws {
        let trip = Fixed.id("Trip", 7), business = Fixed.id("BusinessTrip", 8)
        #expect(try Self.typed("trip == '\(trip.uriRepresentation)'", "BucketListItem") == P.eq("trip", .object(trip)))
        // A subentity's object is an object of the hierarchy.
        #expect(
            try Self.typed("trip != \"\(business.uriRepresentation)\"", "BucketListItem", store: Fixed.store)
                == P.cmp(P.key("trip"), .notEqual, .object(business)))
        #expect(
            try Self.typed("self == '\(trip.uriRepresentation)'", "BusinessTrip")
                == P.cmp(P.key(""), .equal, .object(trip)))
        #expect(
            try Self.typed("ANY bucketList == CAST('\(Fixed.uri("BucketListItem", 1))', 'object')", "Trip")
                == P.cmp(P.key("bucketList"), .equal, .object(Fixed.id("BucketListItem", 1)), .any))
        #expect(
            try Self.typed("trip IN {'\(trip.uriRepresentation)', nil}", "LivingAccommodation")
                == P.cmp(P.key("trip"), .in, .list([.object(trip), P.null])))
        #expect(try Self.typed("trip == nil", "BucketListItem") == P.eq("trip", P.null))
    }

    @Test func objectReferencesAreChecked() throws {
        let other = try #require(
            Self.failure(
                "trip == '\(Fixed.uri("Trip", 1, store: Fixed.otherStore))'", "BucketListItem",
                store: Fixed.store))
        #expect(other.code == .invalidIdentifier)
        #expect(other.message.contains("another store"))
        let castOther = Self.failure(
            "trip == CAST('\(Fixed.uri("Trip", 1, store: Fixed.otherStore))', 'object')",
            "BucketListItem", store: Fixed.store)
        #expect(castOther?.code == .invalidIdentifier)
        let wrong = try #require(Self.failure("trip == '\(Fixed.uri("BucketListItem", 1))'", "BucketListItem"))
        #expect(wrong.code == .typeMismatch)
        #expect(wrong.message.contains("BucketListItem"))
        #expect(Self.failure("trip == 'modeld://nope'", "BucketListItem")?.code == .invalidIdentifier)
        #expect(Self.failure("trip == '\(Fixed.uri("Nowhere", 1))'", "BucketListItem")?.code == .unknownEntity)
        #expect(Self.failure("trip < '\(Fixed.uri("Trip", 1))'", "BucketListItem")?.code == .invalidPredicate)
        #expect(Self.failure("trip == 5", "BucketListItem")?.code == .typeMismatch)
        #expect(Self.failure("passport == mentor", "Person", in: Self.catalog)?.code == .typeMismatch)
    }

    // MARK: Key paths and quantifiers

    @Test(
        arguments: [
            ("nmae == 'x'", "Trip", ModelError.Code.unknownProperty, "'nmae'"),
            ("trip.nmae == 'x'", "BucketListItem", .unknownProperty, "'nmae'"),
            ("perdiem > 1", "PersonalTrip", .unknownProperty, "'perdiem'"),
            ("name.first == 'x'", "Trip", .invalidPredicate, "continues after attribute 'name'"),
            ("ANY shelves.items.title == 'x'", "Library", .invalidPredicate, "more than one to-many"),
            ("$v.name == 'x'", "Trip", .invalidPredicate, "$v is not defined"),
            ("$v.@entity == 'Trip'", "Trip", .invalidPredicate, "$v is not defined"),
        ] as [(String, String, ModelError.Code, String)])
    func unknownKeyPaths(text: String, entity: String, code: ModelError.Code, fragment: String) throws {
        let schema = entity == "Library" ? Self.catalog : Self.trips
        let error = try #require(Self.failure(text, entity, in: schema))
        #expect(error.code == code, "\(error)")
        #expect(error.message.contains(fragment), "\(error.message)")
    }

    @Test func quantifiersGoExactlyWithToManyPaths() throws {
        #expect(
            try Self.typed("ANY bucketList.title == 'x'", "Trip")
                == P.cmp(P.key("bucketList.title"), .equal, P.string("x"), .any))
        #expect(
            try Self.typed("ALL bucketList.isInPlan == true", "Trip")
                == P.cmp(P.key("bucketList.isInPlan"), .equal, P.value(.bool(true)), .all))
        #expect(
            try Self.typed("NONE bucketList.title BEGINSWITH[c] 'x'", "PersonalTrip")
                == P.cmp(P.key("bucketList.title"), .beginsWith, P.string("x"), .none, .caseInsensitive))
        // Through a to-one then a to-many: still one to-many.
        _ = try Self.typed("ANY trip.bucketList.title == 'x'", "LivingAccommodation")

        let missing = try #require(Self.failure("bucketList.title == 'x'", "Trip"))
        #expect(missing.code == .invalidPredicate)
        #expect(missing.message.contains("ANY, ALL or NONE"))
        let needless = try #require(Self.failure("ANY name == 'x'", "Trip"))
        #expect(needless.message.contains("ANY needs a key path through a to-many relationship"))
        #expect(Self.failure("ALL trip.name == 'x'", "BucketListItem")?.code == .invalidPredicate)
        #expect(Self.failure("NONE bucketList.@count > 1", "Trip")?.code == .invalidPredicate)
        let right = try #require(Self.failure("name == bucketList.title", "Trip"))
        #expect(right.message.contains("right side"))
        #expect(Self.failure("ANY bucketList.title == bucketList.details", "Trip")?.code == .invalidPredicate)
    }

    // MARK: Operators and options

    @Test func stringOperatorsNeedStrings() throws {
        for text in [
            "rank CONTAINS 5", "added BEGINSWITH '2026'", "price LIKE '1*'", "inStock ENDSWITH 'e'",
            "code CONTAINS 'a'",
        ] {
            let error = try #require(Self.failure(text, "Item", in: Self.catalog), "\(text)")
            #expect(error.code == .typeMismatch, "\(text): \(error)")
            #expect(error.message.contains("compares strings"), "\(text): \(error.message)")
        }
        #expect(
            try Self.typed("title LIKE[cd] 'a*'", "Item", in: Self.catalog)
                == P.cmp(P.key("title"), .like, P.string("a*"), .direct, [.caseInsensitive, .diacriticInsensitive]))
        #expect(
            try Self.typed("@entity CONTAINS 'Trip'", "Trip")
                == P.cmp(.entityName(variable: nil), .contains, P.string("Trip")))
    }

    @Test func optionsApplyToStringsOnly() throws {
        for text in ["rank ==[c] 5", "price <[d] 1.5", "added ==[cd] '2026-01-01'", "rank IN[c] {1}"] {
            let error = try #require(Self.failure(text, "Item", in: Self.catalog), "\(text)")
            #expect(error.code == .invalidPredicate, "\(text): \(error)")
            #expect(error.message.contains("apply to strings only"), "\(text): \(error.message)")
        }
        _ = try Self.typed("label IN[c] {'a', 'B'}", "Item", in: Self.catalog)
        _ = try Self.typed("label >[c] 'M'", "Item", in: Self.catalog)
    }

    @Test func orderingAndListRules() throws {
        #expect(Self.failure("inStock > true", "Item", in: Self.catalog)?.code == .invalidPredicate)
        #expect(Self.failure("blob < 'AAE='", "Item", in: Self.catalog)?.code == .invalidPredicate)
        #expect(Self.failure("inStock BETWEEN {false, true}", "Item", in: Self.catalog)?.code == .invalidPredicate)
        #expect(Self.failure("rank BETWEEN {1}", "Item", in: Self.catalog)?.message.contains("exactly two") == true)
        #expect(
            Self.failure("rank BETWEEN {1, nil}", "Item", in: Self.catalog)?.message.contains("cannot be nil") == true)
        #expect(Self.failure("rank IN 5", "Item", in: Self.catalog)?.message.contains("needs a list") == true)
        #expect(Self.failure("rank == {1}", "Item", in: Self.catalog)?.message.contains("IN or BETWEEN only") == true)
        #expect(Self.failure("5 IN {rank}", "Item", in: Self.catalog)?.message.contains("must be a key path") == true)
        #expect(
            Self.failure("rank < nil", "Item", in: Self.catalog)?.message.contains("nil can only be compared") == true)
        // List elements must be comparable with the left side, whatever they are.
        #expect(Self.failure("rank IN {1, title}", "Item", in: Self.catalog)?.code == .typeMismatch)
        #expect(Self.failure("rank BETWEEN {1, title}", "Item", in: Self.catalog)?.code == .typeMismatch)
        #expect(Self.failure("title IN {shelf}", "Item", in: Self.catalog)?.code == .typeMismatch)
        #expect(Self.failure("name IN {shelves.name}", "Library", in: Self.catalog)?.code == .invalidPredicate)
        _ = try Self.typed("rank IN {count, 2, nil}", "Item", in: Self.catalog)
        _ = try Self.typed("price BETWEEN {rank, 10}", "Item", in: Self.catalog)
        _ = try Self.typed("shelf IN {nil}", "Item", in: Self.catalog)
    }

    // MARK: SUBQUERY, collections, @entity

    @Test func subqueryVariablesAreScoped() throws {
        let text = "SUBQUERY(bucketList, $b, $b.title == name AND $b.trip.endDate > startDate).@count > 0"
        let typed = try Self.typed(text, "Trip")
        #expect(try typed == PredicateParser.parse(text)) // nothing to convert: same tree
        // Nested: the inner query sees both variables; the outer paths still mean the outer object.
        _ = try Self.typed(
            "SUBQUERY(shelves, $s, SUBQUERY($s.items, $i, $i.price > 1 AND $s.name == name).@count > 0).@count == 1",
            "Library", in: Self.catalog)
        let outside = try #require(
            Self.failure("SUBQUERY(bucketList, $b, $b.title == 'x').@count > 0 AND $b.title == 'y'", "Trip"))
        #expect(outside.message.contains("$b is not defined"))
        let shadow = try #require(
            Self.failure(
                "SUBQUERY(bucketList, $b, SUBQUERY($b.trip.bucketList, $b, $b.title == 'x').@count > 0).@count > 0",
                "Trip"))
        #expect(shadow.message.contains("already defined"))
        #expect(Self.failure("SUBQUERY(name, $n, $n == 'x').@count > 0", "Trip")?.message.contains("to-many") == true)
        #expect(Self.failure("SUBQUERY(bucketList, $b, $b.nope == 1).@count > 0", "Trip")?.code == .unknownProperty)
        // The variable names objects of the collection's entity.
        #expect(
            Self.failure("SUBQUERY(bucketList, $b, $b.startDate > '2026-01-01').@count > 0", "Trip")?.code
                == .unknownProperty)
        #expect(
            try Self.typed("SUBQUERY(bucketList, $b, $b.@entity == 'BucketListItem').@count > 0", "Trip")
                == (try PredicateParser.parse("SUBQUERY(bucketList, $b, $b.@entity == 'BucketListItem').@count > 0")))
    }

    @Test func collectionFunctions() throws {
        #expect(
            try Self.typed("bucketList.@count > 1.0", "Trip")
                == P.cmp(.collection(.count, P.path("bucketList"), attribute: nil), .greater, P.int(1)))
        #expect(
            try Self.typed("items.@sum.price > 1", "Shelf", in: Self.catalog)
                == P.cmp(.collection(.sum, P.path("items"), attribute: "price"), .greater, P.double(1)))
        #expect(
            try Self.typed("items.@avg.rank > 1", "Shelf", in: Self.catalog)
                == P.cmp(.collection(.avg, P.path("items"), attribute: "rank"), .greater, P.double(1)))
        #expect(
            try Self.typed("items.@max.added < '2026-01-01'", "Shelf", in: Self.catalog)
                == P.cmp(
                    .collection(.max, P.path("items"), attribute: "added"), .less, P.value(.date(.iso("2026-01-01")))))
        _ = try Self.typed("items.@avg.amount > 1", "Shelf", in: Self.catalog)
        _ = try Self.typed("items.@min.title == 'a'", "Shelf", in: Self.catalog)
        for (text, fragment) in [
            ("items.@sum.title > 1", "cannot apply to string"), ("items.@avg.inStock > 1", "cannot apply to bool"),
            ("name.@count > 1", "is not one"), ("items.@count.rank > 1", "takes no attribute"),
            ("items.@sum > 1", "needs an attribute"), ("items.@max.nope > 1", "needs an attribute"),
            ("library.@count > 1", "is not one"),
        ] {
            let error = try #require(Self.failure(text, "Shelf", in: Self.catalog), "\(text)")
            #expect(error.message.contains(fragment), "\(text): \(error.message)")
        }
    }

    @Test func entityNames() throws {
        #expect(
            try Self.typed("@entity IN {'PersonalTrip', 'BusinessTrip'}", "Trip")
                == P.cmp(.entityName(variable: nil), .in, .list([P.string("PersonalTrip"), P.string("BusinessTrip")])))
        #expect(Self.failure("@entity == 5", "Trip")?.code == .typeMismatch)
    }

    // MARK: Arithmetic

    @Test func arithmeticTypes() throws {
        _ = try Self.typed("rank + 1 > count * 2", "Item", in: Self.catalog)
        _ = try Self.typed("price / 2 < rank - 1", "Item", in: Self.catalog)
        _ = try Self.typed("startDate + 86400 < endDate", "Trip")
        _ = try Self.typed("86400 + startDate < endDate", "Trip")
        _ = try Self.typed("endDate - startDate > 3600.5", "Trip")
        _ = try Self.typed("(endDate - startDate) / 86400 > 2", "Trip")
        // A string compared with date arithmetic becomes a date.
        #expect(
            try Self.typed("startDate - 3600 < '2026-01-01'", "Trip")
                == P.cmp(P.arith(.subtract, P.key("startDate"), P.int(3600)), .less, P.value(.date(.iso("2026-01-01"))))
        )
        for text in [
            "name + 1 == 'x'", "startDate * 2 > endDate", "startDate + endDate > endDate", "1 - startDate < endDate",
            "trip + 1 == 1",
        ] {
            let entity = text.hasPrefix("trip") ? "BucketListItem" : "Trip"
            let error = try #require(Self.failure(text, entity), "\(text)")
            #expect(error.code == .typeMismatch, "\(text): \(error)")
        }
        #expect(Self.failure("bucketList.title + 1 == 'x'", "Trip")?.message.contains("to-many") == true)
        #expect(Self.failure("rank + 1 == 'x'", "Item", in: Self.catalog)?.code == .typeMismatch)
    }

    // MARK: Idempotence

    /// Typing a typed tree gives the same tree, for every case above that types.
    @Test(arguments: [
        ("startDate > \"2026-01-31\" AND endDate <= '2026-02-01T12:30:00+01:00'", "Trip"),
        ("trip == '\(Fixed.uri("Trip", 7))' OR trip IN {'\(Fixed.uri("BusinessTrip", 2))', nil}", "BucketListItem"),
        ("ANY bucketList.title ==[c] 'x' AND NOT (bucketList.@count BETWEEN {1, 5.0})", "Trip"),
        (
            "SUBQUERY(bucketList, $b, $b.trip.startDate < '2026-01-01' AND $b.@entity == 'BucketListItem').@count > 0",
            "Trip"
        ),
        ("startDate + 86400 < endDate AND endDate - startDate > 3600", "Trip"),
        ("perdiem BETWEEN {1, 2.5} AND self != '\(Fixed.uri("Trip", 3))'", "BusinessTrip"),
        ("TRUEPREDICATE AND NOT FALSEPREDICATE", "Trip"),
    ])
    func typingIsIdempotent(text: String, entity: String) throws {
        let schema = Self.trips
        let once = try Self.typed(text, entity)
        let twice = try once.typed(for: try schema.entity(entity), in: schema)
        #expect(once == twice)
        // And the typed tree survives printing and parsing.
        #expect(try PredicateParser.parse(once.description).typed(for: try schema.entity(entity), in: schema) == once)
    }

    @Test func randomTypedTreesAreIdempotent() throws {
        var random = SeededRandom(seed: 0x7E9E)
        let texts = [
            "rank == %d", "price < %d", "amount >= %d", "added > '2026-01-%02d'", "title BEGINSWITH[c] 'a%d'",
            "count BETWEEN {%d, 100}", "rank IN {%d, 2.0, nil}", "shelf.name == 'n%d'", "price * %d > rank - 1",
        ]
        for _ in 0..<500 {
            let parts = (0..<random.int(1...4)).map { _ in
                random.pick(texts).replacingOccurrences(of: "%02d", with: String(format: "%02d", random.int(1...28)))
                    .replacingOccurrences(of: "%d", with: String(random.int(-50...50)))
            }
            let text = parts.joined(separator: random.chance(0.5) ? " AND " : " OR ")
            let item = try Self.catalog.entity("Item")
            let once = try PredicateParser.parse(text).typed(for: item, in: Self.catalog)
            #expect(try once.typed(for: item, in: Self.catalog) == once, "\(text)")
        }
    }
}
