import ModelCore

/// What the saves of one group (``GroupCommit``) remember in the writer's transaction, on every
/// backend: the sequences they read (locked, where the backend locks rows, until the commit) and
/// advanced (keys, history tokens), written back once before the group commits rather than read
/// and written by every save; and the schema version the store was found at (the writer's lock
/// keeps another process from migrating the store until the group ends). Two statements a
/// sequence a group instead of two or three a save, and one schema check.
///
/// A save undone in its group (`ROLLBACK TO`) takes the memo back to what it was before it; a
/// transaction rolled back drops the memo with it.
public final class GroupMemo {
    /// Each sequence's value, and whether a save set it since the last ``takeWrites()``: a list
    /// looked through by name, since a group reads and sets a few (its entities' and the
    /// history's). Four look-ups a save in a table hashed the name each time, about 1,200 of the
    /// writer's instructions a grouped save (callgrind).
    private var sequences: [Sequence] = []

    private struct Sequence {
        let name: String
        var value: Int64
        var isSet: Bool
    }

    /// The schema version a save found the store at.
    public var checkedSchema: String?
    /// The history rows the group's saves wrote, for the backend to write together before the
    /// group commits (SQLite's writer does).
    public var history = DeferredHistory()

    public init() {}

    /// A copy, to go back to when a save is undone.
    public func copy() -> GroupMemo {
        let copy = GroupMemo()
        copy.sequences = sequences
        copy.checkedSchema = checkedSchema
        copy.history = history
        return copy
    }

    /// The value sequence `name` was read or set to in this group, if it was.
    public func value(of name: String) -> Int64? {
        index(of: name).map { sequences[$0].value }
    }

    /// The value read from the store.
    public func read(_ name: String, _ value: Int64) {
        if let index = index(of: name) {
            sequences[index].value = value
        } else {
            sequences.append(Sequence(name: name, value: value, isSet: false))
        }
    }

    /// A value set: handed back by ``takeWrites()``.
    public func set(_ name: String, to value: Int64) {
        if let index = index(of: name) {
            sequences[index].value = value
            sequences[index].isSet = true
        } else {
            sequences.append(Sequence(name: name, value: value, isSet: true))
        }
    }

    /// The sequences set since the last call, by name, for the backend to write before the
    /// group commits.
    public func takeWrites() -> [(name: String, value: Int64)] {
        var writes: [(name: String, value: Int64)] = []
        for index in sequences.indices where sequences[index].isSet {
            writes.append((sequences[index].name, sequences[index].value))
            sequences[index].isSet = false
        }
        return writes.sorted { $0.name < $1.name }
    }

    /// Where sequence `name` is in ``sequences``, looked for from the last one added.
    private func index(of name: String) -> Int? {
        sequences.lastIndex { $0.name == name }
    }
}
