/// The rules for entity, attribute and relationship names. Names become SQL identifiers and
/// predicate key paths, so they are plain: a letter, then letters, digits or underscores, at most
/// 64 characters, and not a word of the predicate language.
public enum SchemaNames {
    /// Words of the predicate language, which cannot name a property or an entity (any case).
    public static let reservedWords: Set<String> = [
        "and", "or", "not", "in", "between", "any", "all", "none", "some", "contains", "beginswith",
        "endswith", "like", "matches", "truepredicate", "falsepredicate", "nil", "null", "true", "false",
        "yes", "no", "subquery", "cast", "self",
    ]

    /// Whether `name` is a well-formed name (ignoring reserved words).
    public static func isWellFormed(_ name: String) -> Bool {
        isWellFormed(name.utf8)
    }

    /// ``isWellFormed(_:)`` over a name's UTF-8 bytes.
    static func isWellFormed(_ bytes: some Collection<UInt8>) -> Bool {
        guard let first = bytes.first, bytes.count <= 64, isLetter(first) else { return false }
        return bytes.allSatisfy { isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "_") }
    }

    /// Throws `invalidSchema` naming the culprit if `name` cannot be used for a `kind`
    /// ("entity", "attribute", "relationship").
    public static func check(_ name: String, kind: String, in entity: String? = nil) throws(ModelError) {
        let location = entity.map { " in entity '\($0)'" } ?? ""
        guard isWellFormed(name) else {
            throw ModelError(
                .invalidSchema,
                "\(kind) name '\(name.prefix(80))'\(location) is not valid: use a letter followed by letters, digits or underscores, at most 64 characters",
                context: [kind: String(name.prefix(80))])
        }
        guard !reservedWords.contains(name.lowercased()) else {
            throw ModelError(
                .invalidSchema,
                "\(kind) name '\(name)'\(location) is a reserved word of the predicate language; choose another name",
                context: [kind: name])
        }
        guard !name.lowercased().hasPrefix("sqlite_") else {
            throw ModelError(
                .invalidSchema, "\(kind) name '\(name)'\(location) may not begin with 'sqlite_'",
                context: [kind: name])
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }
}
