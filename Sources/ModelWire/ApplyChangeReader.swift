import Foundation
import ModelCore

/// Reads the changes of a request (``ApplyRequestFields``), one message after another, then
/// hands them over (``finish()``).
///
/// Inserts without a temporary URI that follow one another, of one entity and naming the same
/// attributes, are read into one ``InsertRun``: each object's values are set by the position of
/// their names among the run's columns (told apart by their bytes), with no table and no
/// string per object. Other changes are usually of one entity too, so each one's attributes are
/// read into a copy of the previous one's table (``MapTemplate``, as a response's objects are).
struct ApplyChangeReader {
    private var changes: [ApplyRequestFields.Change] = []
    private var attributes = MapTemplate<Value>(blank: .null)
    /// The run being read, with where its first insert's entity and column names lie in the
    /// request (every change of a request is read from the same bytes).
    private var run: (run: InsertRun, entity: Range<Int>, columns: [Range<Int>])?
    /// One insert's entries as they are read (the first `entryCount`; the room is kept from one
    /// insert to the next).
    private var entryRoom: [(name: Range<Int>, value: Value)] = []
    private var entryCount = 0
    private var entries: ArraySlice<(name: Range<Int>, value: Value)> { entryRoom[..<entryCount] }
    /// For an insert appended to the run: the entry holding each column's value.
    private var entryOfColumn: [Int] = []

    /// The most columns a run has: a bit of a `UInt64` says which are set.
    private static var maximumColumns: Int { 64 }

    /// Reads one `Change` message; false when it is not in the plain form.
    mutating func read(_ reader: ProtobufReader) throws(ModelError) -> Bool {
        var reader = reader
        guard let (field, type) = try reader.tag(), type == 2 else { return false }
        let body = try reader.message()
        guard try reader.tag() == nil else { return false }
        let change: ApplyRequestFields.Change?
        switch field {
        case 1: return try insert(body)
        case 2: change = try update(body)
        case 3: change = try Self.delete(body)
        default: return false
        }
        guard let change else { return false }
        endRun()
        changes.append(change)
        return true
    }

    /// The changes read, in order.
    mutating func finish() -> [ApplyRequestFields.Change] {
        endRun()
        return changes
    }

    private mutating func endRun() {
        if let run { changes.append(.inserts(run.run)) }
        run = nil
    }

    private mutating func insert(_ reader: ProtobufReader) throws(ModelError) -> Bool {
        var reader = reader
        var entity = 0..<0, uri = ""
        entryCount = 0
        // Room for a usual object's entries at once, rather than grown one entry at a time.
        if entryRoom.isEmpty { entryRoom.reserveCapacity(16) }
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): entity = try reader.stringRange()
            case (2, 2):
                guard let entry = try Self.entry(reader.message()) else { return false }
                if entryCount < entryRoom.count { entryRoom[entryCount] = entry } else { entryRoom.append(entry) }
                entryCount += 1
            case (4, 2): uri = try reader.string()
            default: return false
            }
        }
        guard uri.isEmpty else {
            var map = attributes.start()
            for (name, value) in entries { try attributes.set(value, nameAt: name, of: reader, in: &map) }
            endRun()
            changes.append(
                .insert(entity: try reader.text(in: entity), attributes: attributes.finish(map), temporaryURI: uri))
            return true
        }
        if appendToRun(entity: entity, of: reader) { return true }
        endRun()
        try startRun(entity: entity, of: reader)
        return true
    }

    /// Appends the insert just read to the run, when it is of the run's entity and names its
    /// columns, each once; false otherwise.
    private mutating func appendToRun(entity: Range<Int>, of reader: ProtobufReader) -> Bool {
        guard let columns = run?.columns, entryCount == columns.count,
            let runEntity = run?.entity, reader.bytes(in: entity, equalBytesIn: runEntity)
        else { return false }
        // Which entry holds each column's value. Names often come in the columns' order (a
        // client writing a table of its own may write each object's in another): look there
        // first.
        if entryOfColumn.count != columns.count { entryOfColumn = Array(repeating: 0, count: columns.count) }
        var filled: UInt64 = 0
        for position in 0..<entryCount {
            let name = entryRoom[position].name
            var column = position
            if !reader.bytes(in: name, equalBytesIn: columns[column]) {
                guard let found = columns.indices.first(where: { reader.bytes(in: name, equalBytesIn: columns[$0]) })
                else {
                    return false
                }
                column = found
            }
            guard filled & (1 << UInt64(column)) == 0 else { return false }
            filled |= 1 << UInt64(column)
            entryOfColumn[column] = position
        }
        // As many entries as columns, each naming another: every column has its value.
        let room = entryRoom, order = entryOfColumn
        run!.run.appendRow { room[order[$0]].value } // `run` was checked above.
        return true
    }

    /// Starts a run with the insert just read; one naming an attribute twice (the last value
    /// wins, as in a map) or too many is an insert of its own.
    private mutating func startRun(entity: Range<Int>, of reader: ProtobufReader) throws(ModelError) {
        let entityName = try reader.text(in: entity)
        var names: [String] = [], ranges: [Range<Int>] = []
        names.reserveCapacity(entryCount)
        ranges.reserveCapacity(entryCount)
        for (name, _) in entries {
            names.append(try reader.text(in: name))
            ranges.append(name)
        }
        guard names.count <= Self.maximumColumns, !Self.hasRepeats(names) else {
            var table: [String: Value] = [:]
            for (name, (_, value)) in zip(names, entries) { table[name] = value }
            changes.append(.insert(entity: entityName, attributes: table, temporaryURI: ""))
            return
        }
        var newRun = InsertRun(entityName: entityName, columns: names)
        newRun.reserveCapacity(objects: 1)
        let room = entryRoom
        newRun.appendRow { room[$0].value }
        run = (newRun, entity, ranges)
    }

    /// Whether a name comes twice: up to 16 names, each compared with those before it (a set of
    /// a one-object save's few names cost it more than the comparisons); more, through a set.
    private static func hasRepeats(_ names: [String]) -> Bool {
        guard names.count <= 16 else { return Set(names).count != names.count }
        for index in names.indices where names[..<index].contains(names[index]) { return true }
        return false
    }

    private mutating func update(_ reader: ProtobufReader) throws(ModelError) -> ApplyRequestFields.Change? {
        var reader = reader
        var uri = "", map = attributes.start()
        while let (field, type) = try reader.tag() {
            switch (field, type) {
            case (1, 2): uri = try reader.string()
            case (2, 2):
                guard let (name, value) = try Self.entry(reader.message()) else { return nil }
                try attributes.set(value, nameAt: name, of: reader, in: &map)
            default: return nil
            }
        }
        return .update(uri: uri, attributes: attributes.finish(map))
    }

    private static func delete(_ reader: ProtobufReader) throws(ModelError) -> ApplyRequestFields.Change? {
        var reader = reader
        var uri = ""
        while let (field, type) = try reader.tag() {
            guard (field, type) == (1, 2) else { return nil }
            uri = try reader.string()
        }
        return .delete(uri: uri)
    }

    /// A map entry of attributes: where its name's bytes are, and its value; nil when it is not
    /// plain: a key or value twice, another field, a value with another field or two kinds, or
    /// one that does not parse (a UUID that is not one…). A name is checked as UTF-8 when it
    /// becomes a string (a template's or a run's names were).
    private static func entry(_ entry: ProtobufReader) throws(ModelError) -> (name: Range<Int>, value: Value)? {
        var entry = entry
        var name: Range<Int>?, value = Value.null, hasValue = false
        while let (field, type) = try entry.tag() {
            switch (field, type) {
            case (1, 2) where name == nil: name = try entry.stringRange()
            case (2, 2) where !hasValue:
                hasValue = true
                var message = try entry.message()
                var kinds = 0
                while let (field, type) = try message.tag() {
                    kinds += 1
                    // One kind, of a known field (`valueKind` never reads a null).
                    guard kinds == 1, let kind = try? message.valueKind(field, type) else { return nil }
                    value = kind
                }
            default: return nil
            }
        }
        return (name ?? 0..<0, value)
    }
}
