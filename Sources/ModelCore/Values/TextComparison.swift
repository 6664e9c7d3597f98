import Foundation

/// Options of the string operators: `[c]` case-insensitive, `[d]` diacritic-insensitive.
public struct StringOptions: OptionSet, Hashable, Sendable, Codable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `[c]`: compare without regard to case (full Unicode case folding).
    public static let caseInsensitive = StringOptions(rawValue: 1)
    /// `[d]`: compare without regard to diacritics (`é` matches `e`).
    public static let diacriticInsensitive = StringOptions(rawValue: 2)

    /// The bracketed suffix of the text form: `[c]`, `[d]`, `[cd]` or empty.
    public var suffix: String {
        var letters = ""
        if contains(.caseInsensitive) { letters += "c" }
        if contains(.diacriticInsensitive) { letters += "d" }
        return letters.isEmpty ? "" : "[\(letters)]"
    }
}

/// The definition, made once, of how strings compare and match in modeld. The memory backend
/// calls these functions directly; the SQLite backend registers them as SQL functions, so both
/// give the same order and the same matches.
///
/// Without options strings compare as UTF-8 bytes (SQLite's BINARY collation). With options both
/// sides are first folded (``fold(_:options:)``) and then compared as bytes.
public enum TextComparison {
    /// Orders two strings by their UTF-8 bytes.
    public static func compare(_ a: String, _ b: String) -> ComparisonResult {
        var ai = a.utf8.makeIterator(), bi = b.utf8.makeIterator()
        while true {
            switch (ai.next(), bi.next()) {
            case (nil, nil): return .orderedSame
            case (nil, _): return .orderedAscending
            case (_, nil): return .orderedDescending
            case (let x?, let y?):
                if x != y { return x < y ? .orderedAscending : .orderedDescending }
            }
        }
    }

    /// Folds case and/or diacritics. ASCII-only text takes a fast path with the same result.
    public static func fold(_ text: String, options: StringOptions) -> String {
        guard !options.isEmpty else { return text }
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            guard options.contains(.caseInsensitive) else { return text }
            return String(decoding: text.utf8.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 + 0x20 : $0 }, as: UTF8.self)
        }
        var foldOptions: String.CompareOptions = []
        if options.contains(.caseInsensitive) { foldOptions.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { foldOptions.insert(.diacriticInsensitive) }
        return text.folding(options: foldOptions, locale: nil).precomposedStringWithCanonicalMapping
    }

    /// Compares with options: fold, then bytes.
    public static func compare(_ a: String, _ b: String, options: StringOptions) -> ComparisonResult {
        options.isEmpty ? compare(a, b) : compare(fold(a, options: options), fold(b, options: options))
    }

    /// `CONTAINS`: whether `needle` occurs in `text`. The empty string occurs in every string.
    public static func contains(_ text: String, _ needle: String, options: StringOptions = []) -> Bool {
        let hay = Array(fold(text, options: options).utf8), pin = Array(fold(needle, options: options).utf8)
        return firstIndex(of: pin, in: hay) != nil
    }

    /// `BEGINSWITH`.
    public static func hasPrefix(_ text: String, _ prefix: String, options: StringOptions = []) -> Bool {
        let hay = Array(fold(text, options: options).utf8), pin = Array(fold(prefix, options: options).utf8)
        return hay.count >= pin.count && hay[..<pin.count].elementsEqual(pin)
    }

    /// `ENDSWITH`.
    public static func hasSuffix(_ text: String, _ suffix: String, options: StringOptions = []) -> Bool {
        let hay = Array(fold(text, options: options).utf8), pin = Array(fold(suffix, options: options).utf8)
        return hay.count >= pin.count && hay[(hay.count - pin.count)...].elementsEqual(pin)
    }

    /// `LIKE`: `*` matches any run of characters (Unicode scalars), `?` exactly one, and a
    /// backslash makes the next character literal.
    public static func like(_ text: String, _ pattern: String, options: StringOptions = []) -> Bool {
        let value = Array(fold(text, options: options).unicodeScalars)
        let tokens = likeTokens(Array(fold(pattern, options: options).unicodeScalars))
        // Iterative wildcard matching with single-star backtracking: O(n·m) at worst.
        var v = 0, t = 0
        var starToken = -1, starValue = 0
        while v < value.count {
            if t < tokens.count, case .one = tokens[t] {
                v += 1; t += 1
            } else if t < tokens.count, case .literal(let scalar) = tokens[t], scalar == value[v] {
                v += 1; t += 1
            } else if t < tokens.count, case .any = tokens[t] {
                starToken = t; starValue = v; t += 1
            } else if starToken >= 0 {
                starValue += 1; v = starValue; t = starToken + 1
            } else {
                return false
            }
        }
        while t < tokens.count, case .any = tokens[t] { t += 1 }
        return t == tokens.count
    }

    private enum LikeToken { case literal(Unicode.Scalar), one, any }

    private static func likeTokens(_ pattern: [Unicode.Scalar]) -> [LikeToken] {
        var tokens: [LikeToken] = []
        var i = 0
        while i < pattern.count {
            switch pattern[i] {
            case "\\" where i + 1 < pattern.count:
                tokens.append(.literal(pattern[i + 1])); i += 2; continue
            case "*": tokens.append(.any)
            case "?": tokens.append(.one)
            default: tokens.append(.literal(pattern[i]))
            }
            i += 1
        }
        return tokens
    }

    private static func firstIndex(of needle: [UInt8], in hay: [UInt8]) -> Int? {
        if needle.isEmpty { return 0 }
        guard hay.count >= needle.count else { return nil }
        let first = needle[0]
        var i = 0
        let last = hay.count - needle.count
        while i <= last {
            if hay[i] == first, hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
