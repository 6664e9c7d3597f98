import CSQLite
import Foundation
import ModelCore

/// The groups of a ``HashAggregate``: found by the stored bytes of their keys in an open
/// addressing table, each with its counters. (Swift's `Dictionary` keyed by byte arrays spent
/// twice SQLite's scan time hashing byte by byte and building keys.)
///
/// Rows come in as the arguments of `modeld_group_count` (see ``GroupCounter``): the group keys,
/// then one value per counter, which counts the rows where it is not NULL. The rows of one short
/// key counted by every counter are counted in C instead (``shortCountStorageClass``), and added
/// when the scan ends (``add(shortCounts:)``).
struct GroupTable {
    /// A key stored in another storage class than its type's (a real in an integer column,
    /// written by another tool), or one group too many.
    struct GivenUp: Error {}

    struct SortKey {
        enum Column { case key(Int), counter(Int) }
        let column: Column
        let ascending: Bool
    }

    let keyTypes: [AttributeType]
    let counterCount: Int
    let groupLimit: Int
    /// Whether every counter counts every row (`count(*)`, whose argument is the constant 1):
    /// a row then adds one to each without its arguments being looked at.
    let countsEveryRow: Bool
    /// The storage class each key's type is written in (see ``SQLiteStatement/bind(_:at:)``).
    private let storageClasses: [Int32]
    private(set) var groupCount = 0
    private var counters: [Int64] = []
    /// Each group's encoded keys, back to back, ending at `keyEnds[group]`, and their hashes.
    private var keyBytes: [UInt8] = []
    private var keyEnds: [Int] = []
    private var hashes: [UInt64] = []
    /// Each group's ``ShortKey``, or ``ShortKey/none`` for a group whose keys do not fit one.
    private var shortKeys: [ShortKey] = []
    /// The hash table: a group index, or -1 for an empty slot; a power of two long, at most a
    /// quarter full (at half full, perf put a sixth of a look-up's samples on the branch that
    /// probes past a taken slot). A hash's slot is its top bits (``slot(of:)``).
    private var slots = [Int32](repeating: -1, count: 64)
    /// 64 less the number of bits in a slot's index.
    private var slotShift: UInt64 = 64 - 6
    private let seed = UInt64.random(in: 0...UInt64.max)
    /// This row's keys, encoded (see ``encode(_:)``); reused from row to row.
    private let scratch = ScratchBytes()

    init(keyTypes: [AttributeType], counterCount: Int, groupLimit: Int, countsEveryRow: Bool = false) {
        self.keyTypes = keyTypes
        self.counterCount = counterCount
        self.groupLimit = groupLimit
        self.countsEveryRow = countsEveryRow
        storageClasses = keyTypes.map(Self.storageClass)
    }

    /// An empty table for the same keys and counters as `other` (with its own scratch buffer and
    /// seed: a copy of a table would share its scratch buffer).
    init(like other: GroupTable) {
        self.init(
            keyTypes: other.keyTypes, counterCount: other.counterCount, groupLimit: other.groupLimit,
            countsEveryRow: other.countsEveryRow)
    }

    /// The storage class values of `type` are written in. (A hash table never counts by doubles
    /// or decimals: their equal values can differ in their bytes.)
    static func storageClass(_ type: AttributeType) -> Int32 {
        switch type {
        case .int, .bool, .date: SQLITE_INTEGER
        case .data: SQLITE_BLOB
        case .double: SQLITE_FLOAT
        case .string, .json, .uuid, .url, .decimal: SQLITE_TEXT
        }
    }

    /// The arguments `modeld_group_count` is called with: the keys, then the values the counters
    /// count, none when every counter counts every row (``countsEveryRow``: a constant argument
    /// per counter cost SQLite an instruction and the call an argument, every row).
    var argumentCount: Int { keyTypes.count + (countsEveryRow ? 0 : counterCount) }

    /// Counts one row: `arguments` holds its keys, then the values its counters count (none when
    /// every counter counts every row).
    mutating func add(_ arguments: UnsafeMutablePointer<OpaquePointer?>) throws(GivenUp) {
        let group = try group(of: arguments)
        if countsEveryRow {
            for counter in 0..<counterCount { counters[group &* counterCount &+ counter] &+= 1 }
            return
        }
        let keyCount = keyTypes.count
        for counter in 0..<counterCount where sqlite3_value_type(arguments[keyCount + counter]) != SQLITE_NULL {
            counters[group &* counterCount &+ counter] &+= 1
        }
    }

    /// The index of the group of the row's keys, added if new.
    private mutating func group(of arguments: UnsafeMutablePointer<OpaquePointer?>) throws(GivenUp) -> Int {
        guard storageClasses.count == 1 else {
            try encode(arguments)
            return try group(prefix: 0, prefixCount: 0, payload: scratch.bytes)
        }
        // One key (the common case) is looked up in place, without copying it into `scratch`:
        // as a ``ShortKey`` when it fits one.
        let value = arguments[0]
        let storage = sqlite3_value_type(value)
        if storage == SQLITE_NULL {
            return try group(oneKey: storage, payload: UnsafeRawBufferPointer(start: nil, count: 0))
        }
        guard storage == storageClasses[0] else { throw GivenUp() }
        if storage == SQLITE_INTEGER {
            var integer = sqlite3_value_int64(value)
            return try withUnsafeBytes(of: &integer) { bytes throws(GivenUp) in
                try group(oneKey: storage, payload: bytes)
            }
        }
        let (start, count) = Self.bytes(of: value, storage: storage)
        return try group(
            oneKey: storage, payload: UnsafeRawBufferPointer(start: start, count: start == nil ? 0 : count))
    }

    /// The index of the group of one key stored in `storage` (NULL with no bytes, an integer's
    /// 8 bytes, or a text's or blob's), added if new.
    private mutating func group(oneKey storage: Int32, payload: UnsafeRawBufferPointer) throws(GivenUp) -> Int {
        if storage == SQLITE_NULL || storage == SQLITE_INTEGER {
            return try group(
                ShortKey(storage: storage, bytes: payload), prefix: UInt64(storage), prefixCount: 1, payload: payload)
        }
        let prefix = UInt64(storage) | UInt64(UInt32(payload.count)) << 8
        if payload.count <= ShortKey.capacity {
            return try group(
                ShortKey(storage: storage, bytes: payload), prefix: prefix, prefixCount: 5, payload: payload)
        }
        return try group(prefix: prefix, prefixCount: 5, payload: payload)
    }

    /// The storage class of the one key whose rows C's step counts in a table of its own
    /// (CSQLite's group_count.h), when it may: one key, stored as an integer, text or blob, and
    /// counts of every row. Nil otherwise: every row then comes to ``add(_:)``.
    var shortCountStorageClass: Int32? {
        guard storageClasses.count == 1, countsEveryRow else { return nil }
        let storageClass = storageClasses[0]
        return storageClass == SQLITE_INTEGER || storageClass == SQLITE_TEXT || storageClass == SQLITE_BLOB
            ? storageClass : nil
    }

    /// Adds the groups C's step counted (see ``shortCountStorageClass``) to this table's, each
    /// count to every counter; gives up when the groups together are more than ``groupLimit``.
    mutating func add(shortCounts: UnsafePointer<csqlite_short_counts>) throws(GivenUp) {
        let counted = shortCounts.pointee
        for index in 0..<Int(counted.group_count) {
            // The key's bytes, then in its last byte its storage class and length.
            var payload = counted.payloads[index]
            let target = try withUnsafeBytes(of: &payload) { bytes throws(GivenUp) in
                let tag = bytes[15]
                return try self.group(
                    oneKey: Int32(tag & 7), payload: UnsafeRawBufferPointer(rebasing: bytes[..<Int(tag >> 3)]))
            }
            for counter in 0..<counterCount { counters[target &* counterCount &+ counter] &+= counted.counts[index] }
        }
    }

    /// The index of the group of one key, `key` (its encoding: `prefix`'s first `prefixCount`
    /// bytes, then `payload`), added if new: compared as two words, without hashing bytes one by
    /// one or reading the group's stored bytes.
    private mutating func group(_ key: ShortKey, prefix: UInt64, prefixCount: Int, payload: UnsafeRawBufferPointer)
        throws(GivenUp) -> Int
    {
        let hash = ((key.low ^ seed) &* 0x9E37_79B9_7F4A_7C15 ^ key.high) &* 0xBF58_476D_1CE4_E5B9
        let mask = slots.count - 1
        var slot = slot(of: hash)
        while slots[slot] >= 0 {
            let group = Int(slots[slot])
            if shortKeys[group] == key { return group }
            slot = (slot + 1) & mask
        }
        return try add(
            slot: slot, hash: hash, shortKey: key, prefix: prefix, prefixCount: prefixCount, payload: payload)
    }

    /// The index of the group whose encoded keys are `prefix`'s first `prefixCount` bytes (little
    /// endian) followed by `payload`, added if new.
    private mutating func group(prefix: UInt64, prefixCount: Int, payload: UnsafeRawBufferPointer) throws(GivenUp)
        -> Int
    {
        let hash = Self.hash(payload, seed: seed ^ prefix)
        let mask = slots.count - 1
        var slot = slot(of: hash)
        while slots[slot] >= 0 {
            let group = Int(slots[slot])
            if hashes[group] == hash, isKey(of: group, prefix: prefix, prefixCount: prefixCount, payload) {
                return group
            }
            slot = (slot + 1) & mask
        }
        return try add(
            slot: slot, hash: hash, shortKey: .none, prefix: prefix, prefixCount: prefixCount, payload: payload)
    }

    /// Adds a group in the empty `slot`; its index.
    private mutating func add(
        slot: Int, hash: UInt64, shortKey: ShortKey, prefix: UInt64, prefixCount: Int,
        payload: UnsafeRawBufferPointer
    ) throws(GivenUp) -> Int {
        let group = groupCount
        guard group < groupLimit else { throw GivenUp() }
        groupCount += 1
        slots[slot] = Int32(group)
        hashes.append(hash)
        shortKeys.append(shortKey)
        withUnsafeBytes(of: prefix) { keyBytes.append(contentsOf: $0.prefix(prefixCount)) }
        keyBytes.append(contentsOf: payload)
        keyEnds.append(keyBytes.count)
        counters.append(contentsOf: repeatElement(0, count: counterCount))
        if groupCount * 4 > slots.count { grow() }
        return group
    }

    /// Adds `other`'s groups and counts to this table's: another part of the same scan, counted
    /// on another connection (see ``ParallelGroupScan``). Gives up when the groups together are
    /// more than ``groupLimit``.
    mutating func merge(_ other: GroupTable) throws(GivenUp) {
        precondition(
            other.keyTypes == keyTypes && other.counterCount == counterCount, "merging the tables of two aggregates")
        for source in 0..<other.groupCount {
            let target = try other.keyBytes.withUnsafeBytes { bytes in
                Result { () throws(GivenUp) in
                    try group(
                        encoded: UnsafeRawBufferPointer(rebasing: bytes[other.keyRange(of: source)]),
                        shortKey: other.shortKeys[source])
                }
            }.get()
            for counter in 0..<counterCount {
                counters[target &* counterCount &+ counter] &+= other.counts(source, counter)
            }
        }
    }

    /// The index of the group whose stored keys are `encoded`, added if new: looked up as
    /// ``group(of:)`` looks up the row the keys came from (one key's storage class, and a text's
    /// or blob's length, as the prefix, and as a ``ShortKey`` when the group had one).
    private mutating func group(encoded: UnsafeRawBufferPointer, shortKey: ShortKey) throws(GivenUp) -> Int {
        guard storageClasses.count == 1 else { return try group(prefix: 0, prefixCount: 0, payload: encoded) }
        let storage = Int32(encoded[0])
        let prefixCount = storage == SQLITE_TEXT || storage == SQLITE_BLOB ? 5 : 1
        var prefix: UInt64 = 0
        for index in 0..<prefixCount { prefix |= UInt64(encoded[index]) << (8 * index) }
        let payload = UnsafeRawBufferPointer(rebasing: encoded[prefixCount...])
        if shortKey == .none { return try group(prefix: prefix, prefixCount: prefixCount, payload: payload) }
        return try group(shortKey, prefix: prefix, prefixCount: prefixCount, payload: payload)
    }

    /// Writes the row's keys into `scratch`: per key its storage class, then an integer's 8
    /// bytes, or the length and bytes of a text or blob, so that equal encodings are equal keys.
    private func encode(_ arguments: UnsafeMutablePointer<OpaquePointer?>) throws(GivenUp) {
        scratch.count = 0
        for index in 0..<storageClasses.count {
            let value = arguments[index]
            let storage = sqlite3_value_type(value)
            scratch.append(UInt8(truncatingIfNeeded: storage))
            if storage == SQLITE_NULL { continue }
            guard storage == storageClasses[index] else { throw GivenUp() }
            if storage == SQLITE_INTEGER {
                scratch.append(sqlite3_value_int64(value))
            } else {
                let (start, count) = Self.bytes(of: value, storage: storage)
                scratch.append(UInt32(count))
                scratch.append(UnsafeRawBufferPointer(start: start, count: start == nil ? 0 : count))
            }
        }
    }

    /// The bytes of a text (UTF-8) or blob value; the text is read before its length, as SQLite asks.
    private static func bytes(of value: OpaquePointer?, storage: Int32) -> (UnsafeRawPointer?, Int) {
        let start = storage == SQLITE_TEXT ? UnsafeRawPointer(sqlite3_value_text(value)) : sqlite3_value_blob(value)
        return (start, Int(sqlite3_value_bytes(value)))
    }

    private func isKey(of group: Int, prefix: UInt64, prefixCount: Int, _ payload: UnsafeRawBufferPointer) -> Bool {
        let stored = keyRange(of: group)
        guard stored.count == prefixCount + payload.count else { return false }
        return keyBytes.withUnsafeBytes { bytes in
            let start = bytes.baseAddress! + stored.lowerBound
            for index in 0..<prefixCount
            where start.load(fromByteOffset: index, as: UInt8.self) != UInt8(truncatingIfNeeded: prefix >> (8 * index))
            {
                return false
            }
            return payload.isEmpty || memcmp(start + prefixCount, payload.baseAddress!, payload.count) == 0
        }
    }

    private func keyRange(of group: Int) -> Range<Int> {
        (group == 0 ? 0 : keyEnds[group - 1])..<keyEnds[group]
    }

    /// The first slot to look for `hash` in: its top bits, where a multiplication leaves the
    /// most mixed ones.
    @inline(__always)
    private func slot(of hash: UInt64) -> Int {
        Int(truncatingIfNeeded: hash >> slotShift)
    }

    private mutating func grow() {
        slots = [Int32](repeating: -1, count: slots.count * 2)
        slotShift -= 1
        let mask = slots.count - 1
        for (group, hash) in hashes.enumerated() {
            var slot = slot(of: hash)
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(group)
        }
    }

    /// A seeded hash of `bytes`, 8 at a time (splitmix64's finaliser as the mixer).
    private static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        var hash = seed ^ UInt64(bytes.count)
        var offset = 0
        while offset + 8 <= bytes.count {
            hash = mix(hash ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        return mix(hash ^ tail ^ 0x9E37_79B9_7F4A_7C15)
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var x = value
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        return x ^ (x >> 31)
    }

    func counts(_ group: Int, _ counter: Int) -> Int64 { counters[group * counterCount + counter] }

    /// The keys of `group` as values of their types, as ``SQLiteStatement/value(_:as:)`` reads
    /// them; `paths` names the keys in the error about a stored value that is not one.
    func keys(of group: Int, paths: [PropertyPath]) throws(ModelError) -> [Value] {
        let cells = GroupKeyCell.decode(keyBytes[keyRange(of: group)])
        var values: [Value] = []
        for (index, cell) in cells.enumerated() {
            values.append(try cell.value(as: keyTypes[index], path: paths[index]))
        }
        return values
    }

    /// Every group's index, in `order` (which ends with every key, so no two groups tie).
    func sortedGroups(by order: [SortKey]) -> [Int] {
        let cells = (0..<groupCount).map { GroupKeyCell.decode(keyBytes[keyRange(of: $0)]) }
        return (0..<groupCount).sorted { a, b in
            for key in order {
                let comparison: Int
                switch key.column {
                case .key(let index): comparison = cells[a][index].compare(cells[b][index])
                case .counter(let index):
                    let (x, y) = (counts(a, index), counts(b, index))
                    comparison = x < y ? -1 : (x > y ? 1 : 0)
                }
                if comparison != 0 { return key.ascending ? comparison < 0 : comparison > 0 }
            }
            return false
        }
    }
}
