import ModelCore

/// What the saves of one group (``SaveBatcher``) remember in the writer's transaction: the
/// sequences they read and advanced (keys, history tokens), written back once before the group
/// commits rather than read and written by every save, and the schema version the store was
/// found at (the write lock keeps another process from migrating the file until the group ends).
/// Two statements a sequence a group instead of two a save, and one schema check.
///
/// A save undone in its group (`ROLLBACK TO`) takes the memo back to what it was before it; a
/// transaction rolled back drops the memo with it.
final class GroupMemo {
    private var values: [String: Int64] = [:]
    private var dirty: Set<String> = []
    /// The schema version a save found the store at.
    var checkedSchema: String?

    init() {}

    private init(values: [String: Int64], dirty: Set<String>, checkedSchema: String?) {
        self.values = values
        self.dirty = dirty
        self.checkedSchema = checkedSchema
    }

    /// A copy, to go back to when a save is undone.
    func copy() -> GroupMemo {
        GroupMemo(values: values, dirty: dirty, checkedSchema: checkedSchema)
    }

    /// The value sequence `name` was read or set to in this group, if it was.
    func value(of name: String) -> Int64? { values[name] }

    /// The value read from the table.
    func read(_ name: String, _ value: Int64) {
        values[name] = value
    }

    /// A value set: written back by ``flush(_:)``.
    func set(_ name: String, to value: Int64) {
        values[name] = value
        dirty.insert(name)
    }

    /// Writes the sequences set back to the table, in the group's transaction.
    func flush(_ connection: SQLiteConnection) throws {
        for name in dirty.sorted() {
            guard let value = values[name] else { continue }
            try StoreMetadata.writeSequence(name, to: value, connection)
        }
        dirty = []
    }
}
