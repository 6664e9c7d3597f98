import CSQLite
import ModelCore
import ModelStorage

// SQLITE_CONSTRAINT_UNIQUE and _PRIMARYKEY are macros over expressions Swift does not import.
private let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
private let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)

extension ModelError {
    /// The error SQLite reported for `code` on `db`, with SQLite's message and the SQL that failed.
    static func sqlite(_ code: Int32, db: OpaquePointer?, sql: String? = nil) -> ModelError {
        let message =
            db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(code))
        return sqlite(code, message: message, sql: sql)
    }

    /// An SQLite failure as a ``ModelError``: the code says what class of failure it is, the
    /// message carries SQLite's words, and the context the extended result code and the SQL.
    static func sqlite(_ code: Int32, message: String, sql: String? = nil) -> ModelError {
        var context = ["sqliteCode": String(code)]
        if let sql { context["sql"] = String(sql.prefix(2000)) }
        let primary = code & 0xFF
        let modelCode: ModelError.Code
        let advice: String
        switch primary {
        case SQLITE_INTERRUPT:
            return ModelError.interrupted
        case SQLITE_ERROR
        where message.contains("parser stack overflow") || message.contains("too large") || message.contains("too many"):
            // A request within modeld's limits that SQLite still cannot compile.
            modelCode = .resourceExhausted
            advice =
                ": the request is too complex for the SQLite store (nested or sized beyond what SQLite compiles); simplify it"
        case SQLITE_CONSTRAINT where code == constraintUnique || code == constraintPrimaryKey:
            modelCode = .uniqueConstraint
            advice = ""
        case SQLITE_FULL:
            modelCode = .resourceExhausted
            advice =
                ": the disk holding the store (or the store's size limit, --max-store-size) is full; free space, and the store takes saves again"
        case SQLITE_TOOBIG, SQLITE_NOMEM:
            modelCode = .resourceExhausted
            advice = "; make the request smaller"
        case SQLITE_BUSY, SQLITE_LOCKED:
            // The store is there and will take the call once the other lets go: UNAVAILABLE,
            // which gRPC clients retry, not INTERNAL.
            modelCode = .unavailable
            advice = "; another connection held the database too long, try again"
        case SQLITE_NOTADB, SQLITE_CORRUPT:
            modelCode = .storageFailure
            advice = "; the file is not a usable SQLite database"
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY, SQLITE_AUTH:
            modelCode = .storageFailure
            advice = "; check that the path exists and is writable by this process"
        default:
            modelCode = .storageFailure
            advice = ""
        }
        return ModelError(modelCode, "SQLite error \(code): \(message)\(advice)", context: context)
    }
}
