/// A key of a connection's statement cache: the statement's SQL text, hashed by its length and
/// three 8-byte samples of it (its start, middle and end) rather than by every byte. SipHash
/// over a statement's 100-300 bytes was most of a cache lookup (about 1,000 instructions; a
/// save alone looks up 5 or 6 statements). Two texts that hash alike are still told apart by
/// comparing them whole.
///
/// The sample is kept in the key and compared before the texts: a table looks at every key on
/// its probe from the hashed slot to the one asked for, and comparing each of those texts whole
/// cost a point read up to about 480 instructions (five comparisons a look-up in one daemon,
/// none in another: how long a probe is depends on the hash seed each process picks; callgrind).
struct StatementKey: Hashable {
    let sql: String
    /// The text's length and samples, mixed; equal for equal texts.
    private let sample: UInt64

    init(_ sql: String) {
        self.sql = sql
        sample = Self.sample(of: sql)
    }

    static func == (lhs: StatementKey, rhs: StatementKey) -> Bool {
        lhs.sample == rhs.sample && lhs.sql == rhs.sql
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(sample)
    }

    /// `sql`'s length and its first, middle and last eight bytes (all of a shorter text), mixed
    /// into one word; the table's hasher, seeded per process, spreads it.
    private static func sample(of sql: String) -> UInt64 {
        var sql = sql
        return sql.withUTF8 { bytes -> UInt64 in
            let raw = UnsafeRawBufferPointer(bytes)
            var mixed = UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15
            guard bytes.count >= 8 else {
                for byte in bytes { mixed = (mixed ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
                return mixed
            }
            func mix(_ offset: Int) {
                mixed = (mixed ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
                mixed ^= mixed >> 29
            }
            mix(0)
            mix((bytes.count - 8) / 2)
            mix(bytes.count - 8)
            return mixed
        }
    }
}
