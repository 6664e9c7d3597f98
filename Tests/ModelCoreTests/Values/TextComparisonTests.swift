import Foundation
import ModelCore
import ModelFixtures
import Testing

/// How strings compare and match, the same in every backend.
@Suite struct TextComparisonTests {
    @Test func comparesUTF8Bytes() {
        #expect(TextComparison.compare("Z", "a") == .orderedAscending)
        #expect(TextComparison.compare("a", "é") == .orderedAscending)
        #expect(TextComparison.compare("", "a") == .orderedAscending)
        #expect(TextComparison.compare("ab", "a") == .orderedDescending)
        #expect(TextComparison.compare("é", "é") == .orderedSame)
        #expect(TextComparison.compare("e\u{301}", "é") == .orderedAscending) // not canonically equal as bytes
        #expect(TextComparison.compare("a", "B") == .orderedDescending)
        #expect(TextComparison.compare("a", "B", options: .caseInsensitive) == .orderedAscending)
        #expect(TextComparison.compare("É", "e", options: [.caseInsensitive, .diacriticInsensitive]) == .orderedSame)
        #expect(TextComparison.compare("É", "e", options: .caseInsensitive) == .orderedDescending)
        #expect(TextComparison.compare("É", "E", options: .diacriticInsensitive) == .orderedSame)
    }

    @Test(
        arguments: [
            ("Hello", StringOptions.caseInsensitive, "hello"),
            ("Hello", .diacriticInsensitive, "Hello"),
            ("Hello", [], "Hello"),
            ("ÉCOLE", .caseInsensitive, "école"),
            ("ÉCOLE", .diacriticInsensitive, "ECOLE"),
            ("ÉCOLE", [.caseInsensitive, .diacriticInsensitive], "ecole"),
            ("Crème Brûlée", [.caseInsensitive, .diacriticInsensitive], "creme brulee"),
            ("Straße", .caseInsensitive, "strasse"),
            ("ΣΊΣΥΦΟΣ", .caseInsensitive, "σίσυφοσ"),
            ("e\u{301}", .caseInsensitive, "é"), // composed after folding
            ("e\u{301}", .diacriticInsensitive, "e"),
            ("\u{212B}", .caseInsensitive, "å"), // the Ångström sign is the letter Å
            ("ÅNGSTRÖM", [.caseInsensitive, .diacriticInsensitive], "angstrom"),
            ("日本", .caseInsensitive, "日本"),
            ("ABC\u{0}", .caseInsensitive, "abc\u{0}"),
        ] as [(String, StringOptions, String)])
    func folds(text: String, options: StringOptions, expected: String) {
        let folded = TextComparison.fold(text, options: options)
        #expect(
            Array(folded.unicodeScalars) == Array(expected.unicodeScalars), "\(folded.unicodeScalars.map { $0.value })")
    }

    @Test func containsPrefixSuffix() {
        #expect(TextComparison.contains("Paris", "ari"))
        #expect(!TextComparison.contains("Paris", "ARI"))
        #expect(TextComparison.contains("Paris", "ARI", options: .caseInsensitive))
        #expect(TextComparison.contains("Paris", ""))
        #expect(TextComparison.contains("", ""))
        #expect(!TextComparison.contains("", "a"))
        #expect(!TextComparison.contains("ar", "ari"))
        #expect(TextComparison.contains("Crème brûlée", "BRULEE", options: [.caseInsensitive, .diacriticInsensitive]))
        #expect(!TextComparison.contains("Crème brûlée", "brulee", options: .caseInsensitive))
        #expect(TextComparison.contains("Crème brûlée", "brulee", options: .diacriticInsensitive))
        #expect(TextComparison.contains("STRASSE", "straße", options: .caseInsensitive))
        #expect(TextComparison.contains("cafe\u{301}", "café", options: .caseInsensitive))
        #expect(!TextComparison.contains("cafe\u{301}", "café"))

        #expect(TextComparison.hasPrefix("Paris", "Pa"))
        #expect(TextComparison.hasPrefix("Paris", ""))
        #expect(TextComparison.hasPrefix("Paris", "Paris"))
        #expect(!TextComparison.hasPrefix("Paris", "Parisx"))
        #expect(!TextComparison.hasPrefix("Paris", "pa"))
        #expect(TextComparison.hasPrefix("Paris", "pa", options: .caseInsensitive))
        #expect(TextComparison.hasPrefix("Évian", "ev", options: [.caseInsensitive, .diacriticInsensitive]))
        #expect(!TextComparison.hasPrefix("é", "e")) // one scalar, two bytes: "e" is not a prefix

        #expect(TextComparison.hasSuffix("Paris", "ris"))
        #expect(TextComparison.hasSuffix("Paris", ""))
        #expect(!TextComparison.hasSuffix("Paris", "RIS"))
        #expect(TextComparison.hasSuffix("Paris", "RIS", options: .caseInsensitive))
        #expect(TextComparison.hasSuffix("naïve", "ive", options: .diacriticInsensitive))
        #expect(!TextComparison.hasSuffix("s", "is"))
    }

    @Test(
        arguments: [
            ("Paris", "P*s", true), ("Paris", "p*s", false), ("Paris", "P?ris", true), ("Paris", "P?is", false),
            ("Paris", "*", true), ("", "*", true), ("", "", true), ("", "?", false), ("a", "", false),
            ("Paris", "**a**", true),
            ("Paris", "*r*", true), ("Paris", "*x*", false), ("abcabc", "*abc", true), ("abcab", "*abc", false),
            ("aaa", "a*a*a", true), ("aa", "a*a*a", false), ("mississippi", "m*iss*pi", true),
            ("mississippi", "m*iss*px", false),
            ("a*b", "a\\*b", true), ("aXb", "a\\*b", false), ("a?", "a\\?", true), ("ab", "a\\?", false),
            ("a\\b", "a\\\\b", true), ("a\\", "a\\", true), ("ab", "a\\b", true),
            ("é", "?", true), ("e\u{301}", "?", false), ("e\u{301}", "??", true), ("日本語", "?本*", true),
            ("😀x", "?x", true),
        ] as [(String, String, Bool)])
    func like(text: String, pattern: String, matches: Bool) {
        #expect(TextComparison.like(text, pattern) == matches)
    }

    @Test func likeWithOptions() {
        #expect(TextComparison.like("PARIS", "p*s", options: .caseInsensitive))
        #expect(TextComparison.like("Évian", "ev?an", options: [.caseInsensitive, .diacriticInsensitive]))
        #expect(!TextComparison.like("Évian", "ev?an", options: .caseInsensitive))
        #expect(TextComparison.like("e\u{301}", "?", options: .caseInsensitive)) // composed first
        #expect(TextComparison.like("e\u{301}", "e", options: .diacriticInsensitive))
        #expect(TextComparison.like("STRASSE", "stra?e", options: .caseInsensitive) == false) // ß folds to two letters
        #expect(TextComparison.like("Straße", "strasse", options: .caseInsensitive))
    }

    /// `like` agrees with a plain recursive matcher on 30,000 random texts and patterns.
    @Test func likeMatchesAReferenceMatcher() {
        enum Token: Equatable { case literal(Unicode.Scalar), one, any }
        func tokens(_ pattern: [Unicode.Scalar]) -> [Token] {
            var result: [Token] = [], i = 0
            while i < pattern.count {
                if pattern[i] == "\\", i + 1 < pattern.count {
                    result.append(.literal(pattern[i + 1]))
                    i += 2
                    continue
                }
                result.append(pattern[i] == "*" ? .any : (pattern[i] == "?" ? .one : .literal(pattern[i])))
                i += 1
            }
            return result
        }
        func matches(_ text: ArraySlice<Unicode.Scalar>, _ pattern: ArraySlice<Token>) -> Bool {
            guard let first = pattern.first else { return text.isEmpty }
            switch first {
            case .any:
                return matches(text, pattern.dropFirst()) || (!text.isEmpty && matches(text.dropFirst(), pattern))
            case .one:
                return !text.isEmpty && matches(text.dropFirst(), pattern.dropFirst())
            case .literal(let scalar):
                return text.first == scalar && matches(text.dropFirst(), pattern.dropFirst())
            }
        }
        var random = SeededRandom(seed: 0x11CE)
        let textPieces = ["a", "b", "A", "é", "e\u{301}", "*", "?", "\\", "ß"]
        let patternPieces = ["a", "b", "A", "e", "é", "*", "*", "?", "?", "\\", "\\*", "\\?", "\\\\"]
        let optionSets: [StringOptions] = [
            [], .caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive],
        ]
        var disagreements: [String] = [], matched = 0
        for _ in 0..<30_000 {
            let text = (0..<random.int(0...7)).map { _ in random.pick(textPieces) }.joined()
            let pattern = (0..<random.int(0...6)).map { _ in random.pick(patternPieces) }.joined()
            let options = random.pick(optionSets)
            let expected = matches(
                Array(TextComparison.fold(text, options: options).unicodeScalars)[...],
                tokens(Array(TextComparison.fold(pattern, options: options).unicodeScalars))[...])
            if expected { matched += 1 }
            if TextComparison.like(text, pattern, options: options) != expected {
                disagreements.append("\(text.debugDescription) LIKE \(pattern.debugDescription) \(options.suffix)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
        #expect(matched > 1_000, "too few matches to mean much: \(matched)")
    }
}
