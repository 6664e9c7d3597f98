import Foundation
import ModelCore
import Testing

/// Text → tree: NSPredicate's syntax and its conveniences, and the canonical form the printer writes.
@Suite struct PredicateParserTableTests {
    static let uuid = "11111111-2222-3333-4444-555555555555"

    static let comparisons: [(String, Predicate)] = [
        ("name == \"Paris\"", P.eq("name", P.string("Paris"))),
        ("name = 'Paris'", P.eq("name", P.string("Paris"))),
        ("name==\"Paris\"", P.eq("name", P.string("Paris"))),
        ("  name\t==\n\"Paris\"  ", P.eq("name", P.string("Paris"))),
        ("name != nil", P.cmp(P.key("name"), .notEqual, P.null)),
        ("name <> NIL", P.cmp(P.key("name"), .notEqual, P.null)),
        ("name != Null", P.cmp(P.key("name"), .notEqual, P.null)),
        ("count < 5", P.cmp(P.key("count"), .less, P.int(5))),
        ("count <= 5", P.cmp(P.key("count"), .lessOrEqual, P.int(5))),
        ("count =< 5", P.cmp(P.key("count"), .lessOrEqual, P.int(5))),
        ("count > 5", P.cmp(P.key("count"), .greater, P.int(5))),
        ("count >= 5", P.cmp(P.key("count"), .greaterOrEqual, P.int(5))),
        ("count => 5", P.cmp(P.key("count"), .greaterOrEqual, P.int(5))),
        ("5 < count", P.cmp(P.int(5), .less, P.key("count"))),
        ("a == b", P.eq("a", P.key("b"))),
        ("trip.destination == \"Rome\"", P.eq("trip.destination", P.string("Rome"))),
        ("trip . destination == \"Rome\"", P.eq("trip.destination", P.string("Rome"))),
        ("self.name == \"x\"", P.eq("name", P.string("x"))),
        ("SELF == nil", P.cmp(P.key(""), .equal, P.null)),
        ("price == 1.5", P.eq("price", P.double(1.5))),
        ("price == -0.5", P.eq("price", P.double(-0.5))),
        ("price == 1e+16", P.eq("price", P.double(1e16))),
        ("price == 2E3", P.eq("price", P.double(2000))),
        ("price == 1.5e-3", P.eq("price", P.double(0.0015))),
        ("price == 100.0", P.eq("price", P.double(100))),
        ("count == 0", P.eq("count", P.int(0))),
        ("count == -5", P.eq("count", P.int(-5))),
        ("count == 007", P.eq("count", P.int(7))),
        ("count == 9223372036854775807", P.eq("count", P.int(.max))),
        ("count == -9223372036854775808", P.eq("count", P.int(.min))),
        ("flag == true", P.eq("flag", P.value(.bool(true)))),
        ("flag == YES", P.eq("flag", P.value(.bool(true)))),
        ("flag == no", P.eq("flag", P.value(.bool(false)))),
        ("flag == FALSE", P.eq("flag", P.value(.bool(false)))),
        ("TRUEPREDICATE", .constant(true)),
        ("falsepredicate", .constant(false)),
        ("name CONTAINS \"par\"", P.cmp(P.key("name"), .contains, P.string("par"))),
        ("name contains[c] \"par\"", P.cmp(P.key("name"), .contains, P.string("par"), .direct, .caseInsensitive)),
        ("name BeginsWith[d] \"é\"", P.cmp(P.key("name"), .beginsWith, P.string("é"), .direct, .diacriticInsensitive)),
        (
            "name ENDSWITH[cd] 'x'",
            P.cmp(P.key("name"), .endsWith, P.string("x"), .direct, [.caseInsensitive, .diacriticInsensitive])
        ),
        (
            "name LIKE[dc] \"a*b?\"",
            P.cmp(P.key("name"), .like, P.string("a*b?"), .direct, [.caseInsensitive, .diacriticInsensitive])
        ),
        ("name ==[c] \"x\"", P.cmp(P.key("name"), .equal, P.string("x"), .direct, .caseInsensitive)),
        ("name == [C] \"x\"", P.cmp(P.key("name"), .equal, P.string("x"), .direct, .caseInsensitive)),
        ("name IN {\"a\", \"b\"}", P.cmp(P.key("name"), .in, .list([P.string("a"), P.string("b")]))),
        ("count in {}", P.cmp(P.key("count"), .in, .list([]))),
        ("count BETWEEN {1, 10}", P.cmp(P.key("count"), .between, .list([P.int(1), P.int(10)]))),
        ("count between {-1, 1.5}", P.cmp(P.key("count"), .between, .list([P.int(-1), P.double(1.5)]))),
        ("ANY items.price > 5", P.cmp(P.key("items.price"), .greater, P.int(5), .any)),
        ("some items.price > 5", P.cmp(P.key("items.price"), .greater, P.int(5), .any)),
        ("ALL items.price > 5", P.cmp(P.key("items.price"), .greater, P.int(5), .all)),
        ("None items.price > 5", P.cmp(P.key("items.price"), .greater, P.int(5), .none)),
        (
            "ANY tags.name CONTAINS[c] \"x\"",
            P.cmp(P.key("tags.name"), .contains, P.string("x"), .any, .caseInsensitive)
        ),
    ]

    static let strings: [(String, Predicate)] = [
        (#"name == "a\"b\\c\nd\te\rf""#, P.eq("name", P.string("a\"b\\c\nd\te\rf"))),
        (#"name == 'it\'s'"#, P.eq("name", P.string("it's"))),
        (#"name == 'say "hi"'"#, P.eq("name", P.string("say \"hi\""))),
        (#"name == "\u{e9}\u{1F600}\u{0}""#, P.eq("name", P.string("é😀\u{0}"))),
        ("name == \"é e\u{301} 日本\"", P.eq("name", P.string("é e\u{301} 日本"))),
        ("name == \"\"", P.eq("name", P.string(""))),
        ("name == \"line\nbreak\"", P.eq("name", P.string("line\nbreak"))),
        ("name == \"\u{301}\"", P.eq("name", P.string("\u{301}"))),
    ]

    static let arithmetic: [(String, Predicate)] = [
        ("count - 5 > 0", P.cmp(P.arith(.subtract, P.key("count"), P.int(5)), .greater, P.int(0))),
        ("count -5 > 0", P.cmp(P.arith(.subtract, P.key("count"), P.int(5)), .greater, P.int(0))),
        ("count - -5 > 0", P.cmp(P.arith(.subtract, P.key("count"), P.int(-5)), .greater, P.int(0))),
        ("count--5 > 0", P.cmp(P.arith(.subtract, P.key("count"), P.int(-5)), .greater, P.int(0))),
        ("-5 < count", P.cmp(P.int(-5), .less, P.key("count"))),
        (
            "a + b * c == d",
            P.eq("", P.key("d")).replacingLHS(P.arith(.add, P.key("a"), P.arith(.multiply, P.key("b"), P.key("c"))))
        ),
        (
            "(a + b) * c == d",
            P.eq("", P.key("d")).replacingLHS(P.arith(.multiply, P.arith(.add, P.key("a"), P.key("b")), P.key("c")))
        ),
        (
            "a - b - c == 0",
            P.eq("", P.int(0)).replacingLHS(P.arith(.subtract, P.arith(.subtract, P.key("a"), P.key("b")), P.key("c")))
        ),
        (
            "a / b / c == 0",
            P.eq("", P.int(0)).replacingLHS(P.arith(.divide, P.arith(.divide, P.key("a"), P.key("b")), P.key("c")))
        ),
        (
            "a * b + c / d == 0",
            P.eq("", P.int(0)).replacingLHS(
                P.arith(.add, P.arith(.multiply, P.key("a"), P.key("b")), P.arith(.divide, P.key("c"), P.key("d"))))
        ),
        ("price == price * 2", P.eq("price", P.arith(.multiply, P.key("price"), P.int(2)))),
        ("((count)) == 1", P.eq("count", P.int(1))),
        (
            "(startDate + 86400) < endDate",
            P.cmp(P.arith(.add, P.key("startDate"), P.int(86400)), .less, P.key("endDate"))
        ),
        ("1 + 2 == 3", P.cmp(P.arith(.add, P.int(1), P.int(2)), .equal, P.int(3))),
    ]

    static let logic: [(String, Predicate)] = {
        let a = P.eq("a", P.int(1)), b = P.eq("b", P.int(2)), c = P.eq("c", P.int(3))
        return [
            ("a == 1 AND b == 2 AND c == 3", .and([a, b, c])),
            ("(a == 1 AND b == 2) AND c == 3", .and([a, b, c])),
            ("a == 1 and (b == 2 AND c == 3)", .and([a, b, c])),
            ("a == 1 && b == 2", .and([a, b])),
            ("a == 1 or b == 2 || c == 3", .or([a, b, c])),
            ("(a == 1 OR b == 2) OR (c == 3)", .or([a, b, c])),
            ("a == 1 OR b == 2 AND c == 3", .or([a, .and([b, c])])),
            ("a == 1 AND b == 2 OR c == 3", .or([.and([a, b]), c])),
            ("a == 1 AND (b == 2 OR c == 3)", .and([a, .or([b, c])])),
            ("(a == 1)", a),
            ("((a == 1))", a),
            ("NOT a == 1", .not(a)),
            ("!a == 1", .not(a)),
            ("! a == 1", .not(a)),
            ("not not a == 1", .not(.not(a))),
            ("!!a == 1", .not(.not(a))),
            ("NOT (a == 1 AND b == 2)", .not(.and([a, b]))),
            ("NOT a == 1 AND b == 2", .and([.not(a), b])),
            ("NOT (a == 1) OR NOT b == 2", .or([.not(a), .not(b)])),
            ("NOT TRUEPREDICATE", .not(.constant(true))),
            ("TRUEPREDICATE AND a == 1", .and([.constant(true), a])),
            ("NOT (a) == 1", .not(a)),
        ]
    }()

    static let special: [(String, Predicate)] = {
        let trip = Fixed.id("Trip", 1)
        let temporary = PersistentIdentifier(
            storeIdentifier: Fixed.store, entityName: "Trip", key: .temporary(Fixed.temporaryKey))
        let inner = P.eq("name", P.string("tech")).replacingLHS(P.key("category.name", "a"))
        return [
            ("self == CAST(\"\(trip.uriRepresentation)\", \"object\")", P.cmp(P.key(""), .equal, .object(trip))),
            (
                "trip == cast('modeld://\(uuid.uppercased())/Trip/t\(Fixed.temporaryKey.uuidString)', 'OBJECT')",
                P.eq("trip", .object(temporary))
            ),
            (
                "startDate > CAST(\"2026-01-31\", \"date\")",
                P.cmp(P.key("startDate"), .greater, P.value(.date(.iso("2026-01-31T00:00:00Z"))))
            ),
            (
                "startDate > CAST(\"2026-01-31T12:00:00.5+02:00\", \"date\")",
                P.cmp(P.key("startDate"), .greater, P.value(.date(.iso("2026-01-31T10:00:00.500000Z"))))
            ),
            ("code == CAST(\"\(uuid.uppercased())\", \"uuid\")", P.eq("code", P.value(.uuid(Fixed.store)))),
            ("blob == CAST(\"AAEC/w==\", \"data\")", P.eq("blob", P.value(.data(Data([0, 1, 2, 255]))))),
            // valid literal
            ("amount == CAST(\"12.50\", \"decimal\")", P.eq("amount", P.value(.decimal(Decimal(string: "12.5")!)))),
            (
                "link == CAST(\"https://example.com/a?b=1\", \"url\")",
                P.eq("link", P.value(.url(URL(string: "https://example.com/a?b=1")!)))
            ), // valid literal
            ("meta == CAST('{\"a\": [1, 2]}', \"json\")", P.eq("meta", P.value(.json("{\"a\": [1, 2]}")))),
            ("price == CAST(\"inf\", \"double\")", P.eq("price", P.double(.infinity))),
            ("price == CAST(\"-inf\", \"Double\")", P.eq("price", P.double(-.infinity))),
            ("price == CAST(5, \"double\")", P.eq("price", P.double(5))),
            ("amount == CAST(-5, \"decimal\")", P.eq("amount", P.value(.decimal(-5)))),
            ("count == CAST(\"42\", \"int\")", P.eq("count", P.int(42))),
            ("name == CAST(\"x\", \"string\")", P.eq("name", P.string("x"))),
            ("flag == CAST(\"yes\", \"bool\")", P.eq("flag", P.value(.bool(true)))),
            ("@entity == \"Trip\"", P.cmp(.entityName(variable: nil), .equal, P.string("Trip"))),
            ("self.@entity IN {\"A\"}", P.cmp(.entityName(variable: nil), .in, .list([P.string("A")]))),
            ("items.@count > 2", P.cmp(.collection(.count, P.path("items"), attribute: nil), .greater, P.int(2))),
            ("items.@COUNT > 2", P.cmp(.collection(.count, P.path("items"), attribute: nil), .greater, P.int(2))),
            (
                "items.@sum.price > 10",
                P.cmp(.collection(.sum, P.path("items"), attribute: "price"), .greater, P.int(10))
            ),
            (
                "shelf.items.@avg.price > 1.5",
                P.cmp(.collection(.avg, P.path("shelf.items"), attribute: "price"), .greater, P.double(1.5))
            ),
            (
                "items.@min.added < items.@max.added",
                P.cmp(
                    .collection(.min, P.path("items"), attribute: "added"), .less,
                    .collection(.max, P.path("items"), attribute: "added"))
            ),
            (
                "SUBQUERY(articles, $a, $a.category.name == \"tech\").@count > 0",
                P.cmp(
                    .subqueryCount(collection: P.path("articles"), variable: "a", predicate: inner), .greater, P.int(0))
            ),
            (
                "subquery(articles, $a, $a.@entity == \"Article\").@count == 1",
                P.cmp(
                    .subqueryCount(
                        collection: P.path("articles"), variable: "a",
                        predicate: P.cmp(.entityName(variable: "a"), .equal, P.string("Article"))), .equal, P.int(1))
            ),
            (
                "SUBQUERY(shelves, $s, SUBQUERY($s.items, $i, $i.price > 5).@count > 1).@count == 0",
                P.cmp(
                    .subqueryCount(
                        collection: P.path("shelves"), variable: "s",
                        predicate:
                            P.cmp(
                                .subqueryCount(
                                    collection: P.path("items", "s"), variable: "i",
                                    predicate: P.cmp(P.key("price", "i"), .greater, P.int(5))), .greater, P.int(1))),
                    .equal, P.int(0))
            ),
            (
                "SUBQUERY(friends, $f, $f == self).@count > 0",
                P.cmp(
                    .subqueryCount(
                        collection: P.path("friends"), variable: "f",
                        predicate: P.cmp(P.key("", "f"), .equal, P.key(""))),
                    .greater, P.int(0))
            ),
            (
                "$a.items.@sum.price == 1",
                P.cmp(.collection(.sum, P.path("items", "a"), attribute: "price"), .equal, P.int(1))
            ),
            (
                "items.@count == SUBQUERY(items, $i, $i.price > 1).@count",
                P.cmp(
                    .collection(.count, P.path("items"), attribute: nil), .equal,
                    .subqueryCount(
                        collection: P.path("items"), variable: "i",
                        predicate: P.cmp(P.key("price", "i"), .greater, P.int(1))))
            ),
            (
                "first == 1 AND size == 2 AND Name == 3 AND x_1 == 4",
                .and([P.eq("first", P.int(1)), P.eq("size", P.int(2)), P.eq("Name", P.int(3)), P.eq("x_1", P.int(4))])
            ),
        ]
    }()

    @Test(arguments: comparisons + strings + arithmetic + logic + special)
    func parses(text: String, expected: Predicate) throws {
        let parsed = try PredicateParser.parse(text)
        #expect(parsed == expected, "\(text) parsed as \(parsed)")
        // The canonical form reads back to the same tree.
        #expect(try PredicateParser.parse(parsed.description) == parsed)
    }

    @Test(arguments: [
        ("name == \"Paris\"", "name == \"Paris\""),
        ("name = 'Paris' && !(count > 5)", "name == \"Paris\" AND NOT (count > 5)"),
        ("a == 1 OR b == 2 AND c == 3", "a == 1 OR (b == 2 AND c == 3)"),
        ("name contains[dc] 'x'", "name CONTAINS[cd] \"x\""),
        ("SOME items.price => 5", "ANY items.price >= 5"),
        ("a+b*c == -5", "(a + (b * c)) == -5"),
        ("d > CAST('2026-01-31', 'DATE')", "d > CAST(\"2026-01-31T00:00:00.000000Z\", \"date\")"),
        ("n == 'tab\\there\\u{7f}'", "n == \"tab\\there\\u{7f}\""),
        ("x IN {1,2.5,nil,yes}", "x IN {1, 2.5, nil, true}"),
        ("SUBQUERY(items,$i,$i.p>1).@count>0", "SUBQUERY(items, $i, $i.p > 1).@count > 0"),
        ("NOT (a == 1 AND b == 2)", "NOT (a == 1 AND b == 2)"),
        ("self == nil", "self == nil"),
        ("$v.@entity == \"A\"", "$v.@entity == \"A\""),
    ])
    func printsCanonically(text: String, canonical: String) throws {
        #expect(try PredicateParser.parse(text).description == canonical)
    }

    @Test func parsesExpressions() throws {
        #expect(
            try PredicateParser.parseExpression("items.@sum.price * 2")
                == P.arith(.multiply, .collection(.sum, P.path("items"), attribute: "price"), P.int(2)))
        #expect(try PredicateParser.parseExpression("-1.5") == P.double(-1.5))
        #expect(try PredicateParser.parseExpression("{1, 'a'}") == .list([P.int(1), P.string("a")]))
        #expect(throws: ModelError.self) { try PredicateParser.parseExpression("a == 1") }
        #expect(throws: ModelError.self) { try PredicateParser.parseExpression("(a == 1)") }
        #expect(throws: ModelError.self) { try PredicateParser.parseExpression("") }
    }

    /// Every reserved word is a keyword: it can never be read as a property name.
    @Test(arguments: SchemaNames.reservedWords.sorted())
    func reservedWordsAreNotNames(word: String) throws {
        // `self.x` is a key path; every other reserved word cannot start one either.
        let starts = word == "self" ? [] : ["\(word).x == 1"]
        for text in ["trip.\(word) == 1", "trip.\(word.uppercased()) == 1", "$v.\(word) == 1"] + starts {
            #expect(throws: ModelError.self, "\(text)") { try PredicateParser.parse(text) }
        }
        // Outside the reserved set, the same spelling with a suffix is an ordinary name.
        #expect(try PredicateParser.parse("\(word)_x == 1") == P.eq("\(word)_x", P.int(1)))
    }
}

extension Predicate {
    /// The same comparison with another left side (for building arithmetic cases compactly).
    func replacingLHS(_ lhs: Expression) -> Predicate {
        guard case .comparison(var c) = self else { return self }
        c.lhs = lhs
        return .comparison(c)
    }
}
