/// A key of a connection's statement cache: the statement's SQL text, hashed by its length and
/// three 8-byte samples of it (its start, middle and end) rather than by every byte. SipHash
/// over a statement's 100-300 bytes was most of a cache lookup (about 1,000 instructions; a
/// save alone looks up 5 or 6 statements). Two texts that hash alike are still told apart by
/// comparing them whole.
struct StatementKey: Hashable {
    let sql: String

    init(_ sql: String) {
        self.sql = sql
    }

    static func == (lhs: StatementKey, rhs: StatementKey) -> Bool {
        lhs.sql == rhs.sql
    }

    func hash(into hasher: inout Hasher) {
        var sql = sql
        sql.withUTF8 { bytes in
            hasher.combine(bytes.count)
            guard bytes.count >= 8 else { return hasher.combine(bytes: UnsafeRawBufferPointer(bytes)) }
            let raw = UnsafeRawBufferPointer(bytes)
            hasher.combine(raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: (bytes.count - 8) / 2, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
        }
    }
}
