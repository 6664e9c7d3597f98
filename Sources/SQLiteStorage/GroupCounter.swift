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
/// a table to fill for the length of one statement. Its step is C's (`csqlite_short_count_step`,
/// CSQLite's group_count.h), which counts the rows of the common case (one key of at most 15
/// bytes, counts of every row) in a table of its own and hands every other row to this object's
/// ``step(_:count:)``; the C table's groups join the Swift table's when the scan ends.
final class GroupCounter {
    static let functionName = "modeld_group_count"

    /// The table being filled; only valid inside ``count(into:_:)``.
    @exclusivity(unchecked) private var table = GroupTable(keyTypes: [], counterCount: 0, groupLimit: 0)
    private var isCounting = false
    private var gaveUp = false
    /// How many groups of the last count C's step counted (tests tell its rows from Swift's by it).
    var groupsCountedInC: Int { Int(shortCounts.pointee.group_count) }
    /// The C step's table, the function's user data: owned by this object, freed with it.
    private let shortCounts: UnsafeMutablePointer<csqlite_short_counts>

    init() {
        // A connection without the few bytes of its counter could not run at all.
        guard let shortCounts = csqlite_short_counts_create() else { fatalError("out of memory for a grouped count") }
        self.shortCounts = shortCounts
        shortCounts.pointee.seed = UInt64.random(in: 0...UInt64.max)
        shortCounts.pointee.fallback = groupCountFallback
        shortCounts.pointee.owner = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        csqlite_short_counts_destroy(shortCounts)
    }

    /// Registers `modeld_group_count` on `db`, reporting to this counter (which must outlive `db`).
    func register(on db: OpaquePointer) throws(ModelError) {
        // Not deterministic: it reports to this object. DIRECTONLY: not from triggers or views.
        let flags = SQLITE_UTF8 | SQLITE_DIRECTONLY
        let code = sqlite3_create_function_v2(
            db, Self.functionName, -1, flags, UnsafeMutableRawPointer(shortCounts),
            nil, csqlite_short_count_step, csqlite_short_count_final, nil)
        guard code == SQLITE_OK else { throw ModelError.sqlite(code, db: db) }
    }

    /// Runs `scan` (which runs a `modeld_group_count` statement) with `table` to count into;
    /// the filled table, or nil when the table gave up (see ``GroupTable/GivenUp``).
    func count(into table: GroupTable, _ scan: () throws -> Void) throws -> GroupTable? {
        precondition(!isCounting, "one grouped count at a time per connection")
        self.table = table
        isCounting = true
        gaveUp = false
        csqlite_short_counts_reset(shortCounts)
        // The C table's arrays are made at the first count that can use them.
        if let storageClass = table.shortCountStorageClass, csqlite_short_counts_allocate(shortCounts) != 0 {
            shortCounts.pointee.argument_count = Int32(table.argumentCount)
            shortCounts.pointee.storage_class = storageClass
            shortCounts.pointee.group_limit = Int32(min(Int(CSQLITE_SHORT_COUNT_GROUPS), table.groupLimit))
            shortCounts.pointee.enabled = 1
        }
        defer {
            shortCounts.pointee.enabled = 0
            isCounting = false
            self.table = GroupTable(keyTypes: [], counterCount: 0, groupLimit: 0)
        }
        do {
            try scan()
        } catch {
            if gaveUp { return nil }
            throw error
        }
        if gaveUp { return nil }
        do {
            try self.table.add(shortCounts: shortCounts)
        } catch {
            return nil
        }
        return self.table
    }

    /// Counts one row; the message to stop the statement with when it cannot.
    fileprivate func step(_ arguments: UnsafeMutablePointer<OpaquePointer?>?, count: Int32) -> String? {
        guard isCounting, let arguments, Int(count) == table.argumentCount else {
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

/// The rows the C step does not take: `owner` is the ``GroupCounter`` (its C table's `owner`).
private let groupCountFallback:
    @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
        owner, context, count, arguments in
        // `owner` is set by the counter's init and the counter outlives its connection.
        let failure = Unmanaged<GroupCounter>.fromOpaque(owner!)
            ._withUnsafeGuaranteedRef { $0.step(arguments, count: count) }
        if let failure { sqlite3_result_error(context, failure, -1) }
    }
