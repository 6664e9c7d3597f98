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
        var text = ""
        var index = 0
        var quote: Character?
        var escaped = false
        var characters = format.makeIterator()
        var pending = characters.next()
        while let character = pending {
            pending = characters.next()
            if let open = quote {
                text.append(character)
                if escaped {
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == open {
                    quote = nil
                }
                continue
            }
            if character == "\"" || character == "'" { quote = character }
            if character == "%", pending == "@" {
                pending = characters.next()
                guard index < arguments.count else {
                    throw ModelError(
                        .invalidPredicate, "the predicate has more %@ than the \(arguments.count) argument(s) given")
                }
                text += " " + (try PredicateTranslator.literal(arguments[index], codec: nil)).description + " "
                index += 1
                continue
            }
            text.append(character)
        }
        guard index == arguments.count else {
            throw ModelError(
                .invalidPredicate, "the predicate has \(index) %@ but \(arguments.count) argument(s) were given")
        }
        predicate = try PredicateParser.parse(text)
    }

    /// The predicate, in canonical text.
    public var description: String { predicate.description }
}
