import CSQLite
import ModelCore

/// The SQL aggregate function `modeld_group_count(key…, counted…)` of one connection, which
/// counts each row it is given into a ``GroupTable``: a ``HashAggregate`` scans with
/// `SELECT modeld_group_count(…) FROM … WHERE …`.
///
/// Counting inside the statement, rather than stepping it row by row and reading each row's
/// columns, keeps the scan in SQLite's virtual machine: over 1M rows in 100 groups, in process,
/// the count went from 200-230 ms to 135-145 ms (see docs/sqlite-storage.md).
///
/// The function reports to this object, which its connection owns: ``count(into:_:)`` lends it
/// a table to fill for the length of one statement.
final class GroupCounter {
    static let functionName = "modeld_group_count"

    /// The table being filled; only valid inside ``count(into:_:)``.
    @exclusivity(unchecked) private var table = GroupTable(keyTypes: [], counterCount: 0, groupLimit: 0)
    private var isCounting = false
    private var gaveUp = false

    /// Registers `modeld_group_count` on `db`, reporting to this counter (which must outlive `db`).
    func register(on db: OpaquePointer) throws(ModelError) {
        // Not deterministic: it reports to this object. DIRECTONLY: not from triggers or views.
        let flags = SQLITE_UTF8 | SQLITE_DIRECTONLY
        let code = sqlite3_create_function_v2(
            db, Self.functionName, -1, flags, Unmanaged.passUnretained(self).toOpaque(),
            nil, groupCountStep, groupCountFinal, nil)
        guard code == SQLITE_OK else { throw ModelError.sqlite(code, db: db) }
    }

    /// Runs `scan` (which runs a `modeld_group_count` statement) with `table` to count into;
    /// the filled table, or nil when the table gave up (see ``GroupTable/GivenUp``).
    func count(into table: GroupTable, _ scan: () throws -> Void) throws -> GroupTable? {
        precondition(!isCounting, "one grouped count at a time per connection")
        self.table = table
        isCounting = true
        gaveUp = false
        defer {
            isCounting = false
            self.table = GroupTable(keyTypes: [], counterCount: 0, groupLimit: 0)
        }
        do {
            try scan()
        } catch {
            if gaveUp { return nil }
            throw error
        }
        return gaveUp ? nil : self.table
    }

    /// Counts one row; the message to stop the statement with when it cannot.
    fileprivate func step(_ arguments: UnsafeMutablePointer<OpaquePointer?>?, count: Int32) -> String? {
        guard isCounting, let arguments, Int(count) == table.keyTypes.count + table.counterCount else {
            return "\(Self.functionName) was called outside a grouped count or with the wrong number of arguments"
        }
        guard !gaveUp else { return Self.gaveUpMessage }
        do {
            try table.add(arguments)
            return nil
        } catch {
            gaveUp = true
            return Self.gaveUpMessage
        }
    }

    private static let gaveUpMessage = "\(functionName) stopped: these rows are left to GROUP BY"
}

private let groupCountStep: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
    context, count, arguments in
    let failure = Unmanaged<GroupCounter>.fromOpaque(sqlite3_user_data(context)!)
        ._withUnsafeGuaranteedRef { $0.step(arguments, count: count) }
    if let failure { sqlite3_result_error(context, failure, -1) }
}

private let groupCountFinal: @convention(c) (OpaquePointer?) -> Void = { context in
    sqlite3_result_null(context)
}
