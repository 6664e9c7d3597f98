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
    /// Each sequence's value, and whether a save set it since the last ``takeWrites()``: one
    /// table, so that a save's `set` hashes its name once.
    private var sequences: [String: (value: Int64, isSet: Bool)] = [:]
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
    public func value(of name: String) -> Int64? { sequences[name]?.value }

    /// The value read from the store.
    public func read(_ name: String, _ value: Int64) {
        sequences[name, default: (value, false)].value = value
    }

    /// A value set: handed back by ``takeWrites()``.
    public func set(_ name: String, to value: Int64) {
        sequences[name] = (value, true)
    }

    /// The sequences set since the last call, by name, for the backend to write before the
    /// group commits.
    public func takeWrites() -> [(name: String, value: Int64)] {
        var writes: [(name: String, value: Int64)] = []
        for (name, sequence) in sequences where sequence.isSet { writes.append((name, sequence.value)) }
        for write in writes { sequences[write.name]?.isSet = false }
        return writes.sorted { $0.name < $1.name }
    }
}
