import ModelCore

/// Reads an `AggregateResponse`'s bytes into rows by hand, as SwiftProtobuf's generated code and
/// the wire conversions (``Swift/Dictionary/init(wire:)``) read them: a map entry without a
/// value reads as NULL, a name written twice keeps its last value, unknown fields are skipped,
/// and a malformed value throws naming its key. SwiftProtobuf's generic map decoding cost a
/// grouped count's client about 20,000 instructions a row, a quarter of them looking up generic
/// type metadata. The rows of an answer have the same names, so each is read into a copy of the
/// one before (``MapTemplate``), as a fetch's objects are (``SnapshotReader``).
public enum AggregateResponseReader {
    public static func rows(serialized bytes: [UInt8]) throws(ModelError) -> [AggregateRow] {
        try ProtobufReader.reading(bytes) { (reader) throws(ModelError) in
            var rows: [AggregateRow] = []
            var template = MapTemplate<Value>(blank: .null)
            while let (field, type) = try reader.tag() {
                if (field, type) == (1, 2) {
                    rows.append(try row(reader.message(), template: &template))
                } else {
                    try reader.skip(type)
                }
            }
            return rows
        }
    }

    /// One `AggregateRow` message: its `values` map (field 1).
    private static func row(_ reader: ProtobufReader, template: inout MapTemplate<Value>) throws(ModelError)
        -> AggregateRow
    {
        var reader = reader
        var map = template.start()
        while let (field, type) = try reader.tag() {
            if (field, type) == (1, 2) {
                try template.setValueEntry(from: &reader, in: &map)
            } else {
                try reader.skip(type)
            }
        }
        return template.finish(map)
    }
}
