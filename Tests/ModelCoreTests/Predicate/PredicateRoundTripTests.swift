import Foundation
import ModelCore
import ModelFixtures
import Testing

/// `parse(print(t)) == t` for random parser-normal trees, and for random and mutated text: whatever
/// parses prints back to text that parses to the same tree.
@Suite struct PredicateRoundTripTests {
    @Test func randomTreesRoundTrip() {
        var generator = PredicateGenerator(seed: 0x5EED_0001)
        var failures: [String] = []
        let trees = 6_000
        for index in 0..<trees {
            let tree = generator.predicate(depth: index % 6)
            let text = tree.description
            do {
                let parsed = try PredicateParser.parse(text)
                if parsed != tree { failures.append("#\(index): \(text)\n  parsed as \(parsed)") }
            } catch {
                failures.append("#\(index): \(text)\n  failed: \(error)")
            }
        }
        for failure in failures.prefix(5) { Issue.record(Comment(rawValue: failure)) }
        #expect(failures.isEmpty, "\(failures.count) of \(trees) trees did not round-trip")
        // Every node kind and every literal type was exercised, many times.
        let kinds = [
            "constant", "comparison", "and", "or", "not", "list", "keyPath", "literal", "object", "collection",
            "entityName", "arithmetic", "subqueryCount", "null", "string", "int", "double", "bool", "date",
            "data", "uuid", "url", "decimal", "json",
        ]
        for kind in kinds {
            #expect(generator.tally[kind, default: 0] >= 50, "\(kind): \(generator.tally[kind, default: 0])")
        }
    }

    @Test func nestedSubqueriesRoundTrip() throws {
        // Three levels of SUBQUERY, each using the enclosing variables.
        let innermost = Predicate.and([
            .comparison(
                Comparison(
                    .keyPath(PropertyPath(["price"], variable: "i")), .greater,
                    .keyPath(PropertyPath(["min"], variable: "s")))),
            .comparison(Comparison(.entityName(variable: "l"), .in, .list([.literal(.string("Library"))]))),
        ])
        let middle = Predicate.comparison(
            Comparison(
                .subqueryCount(collection: PropertyPath(["items"], variable: "s"), variable: "i", predicate: innermost),
                .greater, .literal(.int(0))))
        let outer = Predicate.comparison(
            Comparison(
                .subqueryCount(collection: PropertyPath(["shelves"], variable: "l"), variable: "s", predicate: middle),
                .equal, .literal(.int(2))))
        let top = Predicate.comparison(
            Comparison(
                .subqueryCount(collection: PropertyPath(["libraries"]), variable: "l", predicate: outer),
                .greaterOrEqual, .literal(.int(1))))
        #expect(try PredicateParser.parse(top.description) == top)
        #expect(
            top.description
                == "SUBQUERY(libraries, $l, SUBQUERY($l.shelves, $s, SUBQUERY($s.items, $i, $i.price > $s.min AND $l.@entity IN {\"Library\"}).@count > 0).@count == 2).@count >= 1"
        )
    }

    /// Seeds for the fuzzer: canonical texts and hand-written ones in NSPredicate's conveniences.
    static func fuzzSeeds() -> [String] {
        var generator = PredicateGenerator(seed: 0xF022)
        var seeds = (0..<300).map { generator.predicate(depth: $0 % 3).description }
        let table = PredicateParserTableTests.self
        seeds += (table.comparisons + table.strings + table.arithmetic + table.logic + table.special).map(\.0)
        seeds += [
            "name contains[c] 'par' && !(count > 5) || SOME items.price => 1e+16",
            "SUBQUERY(items, $i, $i.price > 5 AND $i.@entity == 'A').@count > 0",
            "startDate > CAST(\"2026-01-31T12:00:00.5+02:00\", \"date\") AND a - -5 == b * (c + 2)",
            "x IN {1, 2.5, nil, yes, \"\\u{1F600}\"} OR y BETWEEN {-1, 1}",
            "trip == CAST(\"modeld://11111111-2222-3333-4444-555555555555/Trip/p1\", \"object\")",
        ]
        return seeds
    }

    static let fragments = [
        "(", ")", "{", "}", "[", "]", "[c]", "\"", "'", "\\", "\\u{", "NOT ", " AND ", " OR ", "&&", "||", "!",
        "==", "=", "<", ">=", "=>", "<>", "!=", "-", "+", "*", "/", ".", ",", "@count", "@sum.", "@entity", "$v", "$",
        "CAST(", "SUBQUERY(", "\"date\"", "\"object\"", "1e", "1e+999", "9223372036854775808", "-0.0", "0",
        " IN ", " BETWEEN ", " LIKE ", "ANY ", "self", "nil", "TRUEPREDICATE", "é", "\u{0}", "\u{301}", "😀",
        " ", "\n", "\t", "a", "_", "x.y", "MATCHES", "@", "#",
    ]

    /// 24,000 mutated and random strings: each parses or throws ModelError, and what parses round-trips.
    @Test func fuzzedTextParsesOrFailsCleanly() {
        var random = SeededRandom(seed: 0xF0_22_F0_22)
        let seeds = Self.fuzzSeeds()
        var accepted = 0, rejected = 0
        var failures: [String] = []
        for index in 0..<24_000 {
            let text: String
            if index % 8 == 7 {
                text = (0..<random.int(1...20)).map { _ in random.pick(Self.fragments) }.joined()
            } else {
                text = Self.mutate(random.pick(seeds), times: random.int(1...3), random: &random)
            }
            do {
                let parsed = try PredicateParser.parse(text)
                accepted += 1
                let reparsed = try PredicateParser.parse(parsed.description)
                if reparsed != parsed { failures.append("\(text.debugDescription) → \(parsed) → \(reparsed)") }
            } catch {
                rejected += 1
                let column = Int(error.context["column"] ?? "") ?? -1
                let known = error.code == .invalidPredicate || error.code == .resourceExhausted
                if !known || !(1...(text.count + 1)).contains(column) || !error.message.contains("at column \(column)")
                {
                    failures.append("\(text.debugDescription): \(error)")
                }
            }
        }
        for failure in failures.prefix(5) { Issue.record(Comment(rawValue: failure)) }
        #expect(failures.isEmpty, "\(failures.count) failures")
        // Both outcomes are common, so the fuzzer explores both paths.
        #expect(accepted > 2_000, "accepted \(accepted)")
        #expect(rejected > 10_000, "rejected \(rejected)")
    }

    static func mutate(_ text: String, times: Int, random: inout SeededRandom) -> String {
        var scalars = Array(text.unicodeScalars)
        for _ in 0..<times {
            let position = scalars.isEmpty ? 0 : random.int(0...scalars.count)
            switch random.int(0...7) {
            case 0 where !scalars.isEmpty: // delete a run
                let end = min(scalars.count, position + random.int(1...4))
                scalars.removeSubrange(min(position, end)..<end)
            case 1: // insert a fragment
                scalars.insert(contentsOf: Array(random.pick(fragments).unicodeScalars), at: position)
            case 2 where position < scalars.count: // replace one scalar with a random one
                let value = random.chance(0.7) ? UInt32(random.int(0...0x7F)) : UInt32(random.int(0...0x10FFFF))
                scalars[position] = Unicode.Scalar(value) ?? "?"
            case 3 where !scalars.isEmpty: // duplicate a run
                let end = min(scalars.count, position + random.int(1...12))
                scalars.insert(contentsOf: Array(scalars[min(position, end)..<end]), at: min(position, end))
            case 4: // truncate
                scalars.removeSubrange(position...)
            case 5 where scalars.count > 2: // swap two scalars
                let other = random.int(0...(scalars.count - 1))
                scalars.swapAt(min(position, scalars.count - 1), other)
            case 6 where position < scalars.count: // flip the case of an ASCII letter, or add a space
                let scalar = scalars[position]
                if scalar.properties.isUppercase || scalar.properties.isLowercase, scalar.isASCII {
                    scalars[position] = Unicode.Scalar(UInt8(scalar.value) ^ 0x20)
                } else {
                    scalars.insert(random.pick([" ", "\t", "\n"]), at: position)
                }
            default: // insert a random ASCII scalar
                scalars.insert(Unicode.Scalar(UInt8(random.int(0x20...0x7E))), at: position)
            }
        }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars)
        return String(result)
    }
}
