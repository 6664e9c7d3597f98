import Foundation
import ModelCore
import Testing

/// `%@` in predicate text takes the next argument, bound into the tree as it is: a value is never
/// written into the text and read again, so no quote, backslash or `%@` inside it can change the
/// predicate.
@Suite struct PredicateArgumentTests {
    static let awkward = ["it's", "say \"hi\"", "back\\slash", "100%@", "a' OR 1 == 1 OR name == 'b", ""]

    @Test(arguments: awkward)
    func aStringArgumentIsTheValueCompared(_ text: String) throws {
        let predicate = try PredicateParser.parse("name == %@", arguments: [.literal(.string(text))])
        #expect(
            predicate == .comparison(Comparison(.keyPath(PropertyPath(["name"])), .equal, .literal(.string(text)))))
    }

    @Test func argumentsFillPlacesInOrderAnywhereAValueGoes() throws {
        let predicate = try PredicateParser.parse(
            "count BETWEEN {%@, %@} AND tag IN %@ AND SUBQUERY(items, $i, $i.price > %@).@count > 0",
            arguments: [
                .literal(.int(1)), .literal(.int(9)), .list([.literal(.string("a")), .literal(.string("b"))]),
                .literal(.double(2.5)),
            ])
        let expected = try PredicateParser.parse(
            "count BETWEEN {1, 9} AND tag IN {\"a\", \"b\"} AND SUBQUERY(items, $i, $i.price > 2.5).@count > 0")
        #expect(predicate == expected)
        // A %@ inside a quoted string is text, not a place for an argument.
        #expect(
            try PredicateParser.parse("name == '%@'")
                == .comparison(Comparison(.keyPath(PropertyPath(["name"])), .equal, .literal(.string("%@")))))
    }

    @Test func tooFewOrTooManyArgumentsAreRefused() {
        let few = #expect(throws: ModelError.self) {
            _ = try PredicateParser.parse("a == %@ AND b == %@", arguments: [.literal(.int(1))])
        }
        #expect(few?.code == .invalidPredicate)
        #expect(
            few?.message.contains("more %@ than the 1 argument(s) given at column 18") == true,
            "\(String(describing: few))")
        let many = #expect(throws: ModelError.self) {
            _ = try PredicateParser.parse("a == %@", arguments: [.literal(.int(1)), .literal(.int(2))])
        }
        #expect(many?.message == "the predicate has 1 %@ but 2 argument(s) were given")
        let none = #expect(throws: ModelError.self) { _ = try PredicateParser.parse("a == %@") }
        #expect(none?.message.contains("more %@ than the 0 argument(s) given") == true)
    }
}
