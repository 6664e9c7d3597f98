/// The words of the predicate language. They are ``SchemaNames/reservedWords``, matched in any
/// case, so no entity or property can be named like one.
enum PredicateKeyword: String, CaseIterable, Sendable {
    case and, or, not, `in`, between, any, all, none, some, contains, beginswith, endswith, like, matches,
        truepredicate, falsepredicate, `nil`, null, `true`, `false`, yes, no, subquery, cast, `self`
}

/// One token of predicate text, with where it starts and ends (UTF-8 offsets).
struct PredicateToken: Sendable {
    enum Kind: Equatable, Sendable {
        /// A word that is not a keyword: a property name (checked by the parser).
        case identifier(String)
        /// A word of the language; `&&`, `||` and `!` read as `and`, `or`, `not`.
        case keyword(PredicateKeyword)
        /// `$name`: a SUBQUERY variable, without the `$`.
        case variable(String)
        /// `@count`, `@entity`…: the name after `@`, lowercased.
        case function(String)
        /// A quoted string, escapes resolved.
        case string(String)
        /// Digits as written (no sign); `isDouble` when it has a fraction or an exponent.
        case number(String, isDouble: Bool)
        /// `==`, `=`, `!=`, `<>`, `<`, `<=`, `=<`, `>`, `>=`, `=>`.
        case comparison(ComparisonOperator)
        /// `%@`: the next of the arguments given with the text, bound as a value.
        case argument
        case leftParen, rightParen, leftBrace, rightBrace, leftBracket, rightBracket, comma, dot
        case plus, minus, star, slash
        case end
    }

    var kind: Kind
    /// UTF-8 offset of the first byte.
    var start: Int
    /// UTF-8 offset just past the last byte.
    var end: Int
}

/// The text being parsed, and how to turn an offset in it into a column for messages.
struct PredicateSource: Sendable {
    let text: String
    let bytes: [UInt8]

    init(_ text: String) {
        self.text = text
        self.bytes = Array(text.utf8)
    }

    /// The 1-based column, in characters, of the UTF-8 offset `offset`.
    func column(_ offset: Int) -> Int {
        String(decoding: bytes[..<min(offset, bytes.count)], as: UTF8.self).count + 1
    }

    /// The source text of `start..<end`, shortened for messages.
    func excerpt(_ start: Int, _ end: Int, limit: Int = 40) -> String {
        let text = String(decoding: bytes[max(0, start)..<min(end, bytes.count)], as: UTF8.self)
        return text.count > limit ? String(text.prefix(limit - 3)) + "..." : text
    }

    /// An error at `offset`: the message gets " at column N" (and `hint` after it); the context
    /// holds the column and the text around it.
    func error(
        _ message: String, at offset: Int, hint: String? = nil,
        code: ModelError.Code = .invalidPredicate
    ) -> ModelError {
        let column = column(offset)
        let clamped = min(offset, bytes.count)
        let before = String(decoding: bytes[..<clamped], as: UTF8.self)
        let after = String(decoding: bytes[clamped...], as: UTF8.self)
        let near = String(before.suffix(12)) + String(after.prefix(12))
        return ModelError(
            code, "\(message) at column \(column)" + (hint.map { "; \($0)" } ?? ""),
            context: ["column": String(column), "near": near])
    }

    /// How a token reads in a message: `'=='`, `'name'`, `the end of the text`.
    func describe(_ token: PredicateToken) -> String {
        token.kind == .end ? "the end of the text" : "'\(excerpt(token.start, token.end, limit: 30))'"
    }
}

/// Splits predicate text into tokens, one at a time. A value type: copying it gives a lookahead
/// that does not disturb the original.
struct PredicateLexer: Sendable {
    let source: PredicateSource
    private(set) var offset = 0

    init(_ source: PredicateSource) { self.source = source }

    private var bytes: [UInt8] { source.bytes }

    private func byte(at index: Int) -> UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func next() throws(ModelError) -> PredicateToken {
        while let b = byte(at: offset), b == 0x20 || (b >= 0x09 && b <= 0x0D) { offset += 1 }
        let start = offset
        guard let first = byte(at: offset) else { return PredicateToken(kind: .end, start: start, end: start) }
        func single(_ kind: PredicateToken.Kind, length: Int = 1) -> PredicateToken {
            offset += length
            return PredicateToken(kind: kind, start: start, end: offset)
        }
        let second = byte(at: offset + 1)
        switch first {
        case _ where Self.isWordStart(first):
            return word(from: start)
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number(from: start)
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            return try string(from: start)
        case UInt8(ascii: "$"):
            return try variable(from: start)
        case UInt8(ascii: "%") where second == UInt8(ascii: "@"):
            return single(.argument, length: 2)
        case UInt8(ascii: "@"):
            offset += 1
            let name = wordText()
            guard !name.isEmpty else {
                throw source.error("expected a function name such as @count after '@'", at: start)
            }
            return PredicateToken(kind: .function(name.lowercased()), start: start, end: offset)
        case UInt8(ascii: "("): return single(.leftParen)
        case UInt8(ascii: ")"): return single(.rightParen)
        case UInt8(ascii: "{"): return single(.leftBrace)
        case UInt8(ascii: "}"): return single(.rightBrace)
        case UInt8(ascii: "["): return single(.leftBracket)
        case UInt8(ascii: "]"): return single(.rightBracket)
        case UInt8(ascii: ","): return single(.comma)
        case UInt8(ascii: "."): return single(.dot)
        case UInt8(ascii: "+"): return single(.plus)
        case UInt8(ascii: "-"): return single(.minus)
        case UInt8(ascii: "*"): return single(.star)
        case UInt8(ascii: "/"): return single(.slash)
        case UInt8(ascii: "="):
            switch second {
            case UInt8(ascii: "="): return single(.comparison(.equal), length: 2)
            case UInt8(ascii: "<"): return single(.comparison(.lessOrEqual), length: 2)
            case UInt8(ascii: ">"): return single(.comparison(.greaterOrEqual), length: 2)
            default: return single(.comparison(.equal))
            }
        case UInt8(ascii: "!"):
            return second == UInt8(ascii: "=") ? single(.comparison(.notEqual), length: 2) : single(.keyword(.not))
        case UInt8(ascii: "<"):
            switch second {
            case UInt8(ascii: "="): return single(.comparison(.lessOrEqual), length: 2)
            case UInt8(ascii: ">"): return single(.comparison(.notEqual), length: 2)
            default: return single(.comparison(.less))
            }
        case UInt8(ascii: ">"):
            return second == UInt8(ascii: "=")
                ? single(.comparison(.greaterOrEqual), length: 2) : single(.comparison(.greater))
        case UInt8(ascii: "&"):
            guard second == UInt8(ascii: "&") else {
                throw source.error("a single '&' is not an operator", at: start, hint: "write && or AND")
            }
            return single(.keyword(.and), length: 2)
        case UInt8(ascii: "|"):
            guard second == UInt8(ascii: "|") else {
                throw source.error("a single '|' is not an operator", at: start, hint: "write || or OR")
            }
            return single(.keyword(.or), length: 2)
        default:
            throw source.error("unexpected character \(characterDescription(at: start))", at: start)
        }
    }

    /// `'#'` for a printable character, `U+0000` for others.
    private func characterDescription(at index: Int) -> String {
        let text = String(decoding: bytes[index..<min(index + 4, bytes.count)], as: UTF8.self)
        guard let scalar = text.unicodeScalars.first else { return "?" }
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        if scalar.properties.generalCategory == .control || scalar.properties.isWhitespace
            || scalar.properties.generalCategory == .format || scalar.properties.generalCategory == .unassigned
            || scalar.properties.generalCategory == .surrogate || scalar.properties.generalCategory == .privateUse
        {
            return code
        }
        return "'\(scalar)' (\(code))"
    }

    static func isWordStart(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "_")
    }

    static func isWordByte(_ b: UInt8) -> Bool {
        isWordStart(b) || (b >= 0x30 && b <= 0x39)
    }

    /// Reads letters, digits and underscores from `offset`.
    private mutating func wordText() -> String {
        let start = offset
        while let b = byte(at: offset), Self.isWordByte(b) { offset += 1 }
        return String(decoding: bytes[start..<offset], as: UTF8.self)
    }

    private mutating func word(from start: Int) -> PredicateToken {
        let text = wordText()
        if text.utf8.count <= 14, let keyword = PredicateKeyword(rawValue: text.lowercased()) {
            return PredicateToken(kind: .keyword(keyword), start: start, end: offset)
        }
        return PredicateToken(kind: .identifier(text), start: start, end: offset)
    }

    private mutating func variable(from start: Int) throws(ModelError) -> PredicateToken {
        offset += 1
        let name = wordText()
        guard !name.isEmpty else {
            throw source.error("expected a variable name after '$'", at: start, hint: "write $name")
        }
        guard SchemaNames.isWellFormed(name) else {
            throw source.error(
                "'$\(name.prefix(70))' is not a valid variable name", at: start,
                hint: "use a letter followed by letters, digits or underscores, at most 64 characters")
        }
        return PredicateToken(kind: .variable(name), start: start, end: offset)
    }

    private mutating func digits() {
        while let b = byte(at: offset), b >= 0x30, b <= 0x39 { offset += 1 }
    }

    private func isDigit(_ index: Int) -> Bool {
        guard let b = byte(at: index) else { return false }
        return b >= 0x30 && b <= 0x39
    }

    private mutating func number(from start: Int) throws(ModelError) -> PredicateToken {
        var isDouble = false
        digits()
        if byte(at: offset) == UInt8(ascii: "."), isDigit(offset + 1) {
            isDouble = true
            offset += 1
            digits()
        }
        if let e = byte(at: offset), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            var index = offset + 1
            if let sign = byte(at: index), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { index += 1 }
            if isDigit(index) {
                isDouble = true
                offset = index
                digits()
            }
        }
        if let b = byte(at: offset), Self.isWordByte(b) {
            var end = offset
            while let b = byte(at: end), Self.isWordByte(b) || b == UInt8(ascii: ".") { end += 1 }
            throw source.error(
                "malformed number '\(source.excerpt(start, end))'", at: start,
                hint: "write numbers as 42, -7, 3.5 or 1e+16")
        }
        let text = String(decoding: bytes[start..<offset], as: UTF8.self)
        return PredicateToken(kind: .number(text, isDouble: isDouble), start: start, end: offset)
    }

    private mutating func string(from start: Int) throws(ModelError) -> PredicateToken {
        let quote = bytes[start]
        offset += 1
        var out: [UInt8] = []
        while true {
            guard let b = byte(at: offset) else {
                throw source.error(
                    "unterminated string starting", at: start,
                    hint: "close it with \(quote == UInt8(ascii: "'") ? "'" : "\"")")
            }
            if b == quote {
                offset += 1
                break
            }
            guard b == UInt8(ascii: "\\") else {
                out.append(b)
                offset += 1
                continue
            }
            let escape = offset
            guard let e = byte(at: offset + 1) else {
                throw source.error(
                    "unterminated string starting", at: start, hint: "a backslash at the end escapes nothing")
            }
            offset += 2
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "\\"): out.append(e)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                let scalar = try unicodeEscape(at: escape)
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
            default:
                let shown =
                    e >= 0x21 && e < 0x7F
                    ? "'\\\(Character(Unicode.Scalar(e)))'"
                    : "(a backslash followed by \(characterDescription(at: escape + 1)))"
                throw source.error(
                    "unknown escape \(shown)", at: escape, hint: "use \\\" \\' \\\\ \\n \\r \\t or \\u{hex}")
            }
        }
        return PredicateToken(kind: .string(String(decoding: out, as: UTF8.self)), start: start, end: offset)
    }

    /// Reads `{hex}` after `\u` (the backslash is at `escape`, `offset` just past the `u`).
    private mutating func unicodeEscape(at escape: Int) throws(ModelError) -> Unicode.Scalar {
        let hint = "write \\u{…} with 1 to 8 hex digits of a Unicode scalar, such as \\u{e9}"
        guard byte(at: offset) == UInt8(ascii: "{") else {
            throw source.error("malformed \\u escape", at: escape, hint: hint)
        }
        offset += 1
        var value: UInt32 = 0, count = 0
        while let b = byte(at: offset), let digit = Self.hexValue(b) {
            guard count < 8 else { throw source.error("malformed \\u escape", at: escape, hint: hint) }
            value = value << 4 | UInt32(digit)
            count += 1
            offset += 1
        }
        guard count > 0, byte(at: offset) == UInt8(ascii: "}") else {
            throw source.error("malformed \\u escape", at: escape, hint: hint)
        }
        offset += 1
        guard let scalar = Unicode.Scalar(value) else {
            throw source.error("\\u{\(String(value, radix: 16))} is not a Unicode scalar", at: escape, hint: hint)
        }
        return scalar
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - 0x30
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - 0x61 + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - 0x41 + 10
        default: nil
        }
    }
}
