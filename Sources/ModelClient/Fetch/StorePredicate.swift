import ModelCore

/// A predicate in NSPredicate's syntax, for what `#Predicate` can't say: `SUBQUERY(…)`,
/// `@sum`/`@avg`/`@min`/`@max` over to-many key paths, `ANY`/`ALL`/`NONE`, `LIKE`, `[c]` and `[d]`
/// options, `ENDSWITH`, `@entity`. Each `%@` takes the next argument as a value (a model object
/// stands for itself), so values are never spliced into the text:
///
///     try StorePredicate("SUBQUERY(bucketList, $i, $i.title CONTAINS[c] %@).@count > 1", "museum")
public struct StorePredicate: Sendable, CustomStringConvertible {
    let predicate: ModelCore.Predicate

    public init(_ format: String, _ arguments: Any...) throws {
        predicate = try PredicateParser.parse(
            format, arguments: try arguments.map { try PredicateTranslator.literal($0, codec: nil) })
    }

    /// The predicate, in canonical text.
    public var description: String { predicate.description }
}
