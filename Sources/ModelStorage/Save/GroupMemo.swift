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
    private var values: [String: Int64] = [:]
    private var dirty: Set<String> = []
    /// The schema version a save found the store at.
    public var checkedSchema: String?

    public init() {}

    /// A copy, to go back to when a save is undone.
    public func copy() -> GroupMemo {
        let copy = GroupMemo()
        copy.values = values
        copy.dirty = dirty
        copy.checkedSchema = checkedSchema
        return copy
    }

    /// The value sequence `name` was read or set to in this group, if it was.
    public func value(of name: String) -> Int64? { values[name] }

    /// The value read from the store.
    public func read(_ name: String, _ value: Int64) {
        values[name] = value
    }

    /// A value set: handed back by ``takeWrites()``.
    public func set(_ name: String, to value: Int64) {
        values[name] = value
        dirty.insert(name)
    }

    /// The sequences set since the last call, by name, for the backend to write before the
    /// group commits.
    public func takeWrites() -> [(name: String, value: Int64)] {
        defer { dirty = [] }
        return dirty.sorted().compactMap { name in values[name].map { (name, $0) } }
    }
}
