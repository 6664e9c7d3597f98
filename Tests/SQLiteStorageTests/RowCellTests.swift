import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
@testable import SQLiteStorage
import Testing

/// A row's columns handed to a sink as cells (``RowCell``), as the daemon writes a fetch's
/// answer: numbers and ASCII strings as they lie, any other text made a string (mended where
/// another tool stored bytes that are not UTF-8), the rest as values; the same values as
/// `fetch(_:)`, and a column that cannot be read fails the read as it fails `fetch(_:)`.
@Suite struct RowCellTests {
    /// What the sink was handed: per object, each attribute's cell, as text bytes or its value.
    struct Cells: ObjectRowSink {
        enum Seen: Equatable {
            case text([UInt8])
            case other(Value)
        }
        var objects: [[String: Seen]] = []

        mutating func add(_ row: ObjectRow) -> Bool {
            Issue.record("a row handed over as values: \(row.shape.entityName)")
            return true
        }

        mutating func add(_ snapshot: ObjectSnapshot) -> Bool {
            Issue.record("a snapshot handed over: \(snapshot.id)")
            return true
        }

        mutating func add(
            id: PersistentIdentifier, version: Int64, shape: ObjectShape, toOne: [PersistentIdentifier?],
            cells: (Int) -> RowCell
        ) -> Bool {
            var seen: [String: Seen] = [:]
            for (index, name) in shape.attributeNames.enumerated() {
                switch cells(index) {
                case .text(let bytes): seen[name] = .text(Array(bytes))
                case let cell: seen[name] = .other(cell.value)
                }
            }
            objects.append(seen)
            return true
        }
    }

    static let byName = FetchDescriptor(entityName: "Vehicle", sortBy: [SortDescriptor(PropertyPath(["name"]))])

    @Test func cellsHoldWhatFetchReturns() async throws {
        try await withStore(ReadRowsWithoutWaitingTests.schema) { store, _ in
            _ = try await store.save(
                ChangeSet(inserts: [
                    InsertedObject(
                        id: store.temporary("Vehicle"),
                        attributes: [
                            "name": .string("a plain cart"), "wheels": .int(-3), "weight": .double(2.5),
                            "electric": .bool(false), "built": .date(Timestamp(microsecondsSince1970: -17)),
                            "spec": .json("[1]"),
                        ]),
                    InsertedObject(id: store.temporary("Vehicle"), attributes: ["name": .string("b vélo")]),
                ]))
            var sink = Cells()
            #expect(try store.fetchWithoutWaiting(Self.byName, into: &sink) == 2)
            let fetched = try await store.fetch(Self.byName).objects
            #expect(sink.objects.count == 2)
            #expect(sink.objects.first?["name"] == .text(Array("a plain cart".utf8)))
            #expect(sink.objects.last?["name"] == .other(.string("b vélo")))
            #expect(sink.objects.first?["wheels"] == .other(.int(-3)))
            #expect(sink.objects.first?["built"] == .other(.date(Timestamp(microsecondsSince1970: -17))))
            for (cells, object) in zip(sink.objects, fetched) {
                let values = cells.mapValues { seen in
                    switch seen {
                    case .text(let bytes): Value.string(String(decoding: bytes, as: UTF8.self))
                    case .other(let value): value
                    }
                }
                #expect(values == object.attributes, "\(object.id)")
            }
        }
    }

    /// Values another tool stored in another storage class than their attribute's (ones the
    /// column's affinity keeps as they are) are read as SQLite converts them, the same by
    /// `fetch(_:)` and as cells: bytes as text, text as a number by its numeric prefix (none:
    /// 0), a real as an integer by truncation; a real in an int column stays a double, as an
    /// int sum that overflowed comes back.
    @Test func storageClassesAnotherToolChoseAreReadAsSQLiteConvertsThem() async throws {
        try await withStore(ReadRowsWithoutWaitingTests.schema) { store, path in
            try await store.insert("Vehicle", [["name": .string("x")]])
            try asAnotherTool(
                #"UPDATE "Vehicle" SET "name" = X'6869', "wheels" = 7.5, "weight" = '4.5 kg', "electric" = 'yes', "built" = 3.9"#,
                on: path)
            let expected: [String: Value] = [
                "name": .string("hi"), "wheels": .double(7.5), "weight": .double(4.5), "electric": .bool(false),
                "built": .date(Timestamp(microsecondsSince1970: 3)),
            ]
            let fetched = try #require(try await store.fetch(Self.byName).objects.first)
            var sink = Cells()
            #expect(try store.fetchWithoutWaiting(Self.byName, into: &sink) == 1)
            for (name, value) in expected {
                #expect(fetched.attributes[name] == value, "\(name)")
                let cell = sink.objects.first?[name]
                #expect(cell == (name == "name" ? .text(Array("hi".utf8)) : .other(value)), "\(name)")
            }
        }
    }

    /// Bytes another tool stored that are not UTF-8 come out mended, as `fetch(_:)` mends them;
    /// a UUID column holding other text fails the read with `storageFailure`, naming the column.
    @Test func textAnotherToolStoredIsReadAsFetchReadsIt() async throws {
        try await withStore(ReadRowsWithoutWaitingTests.schema) { store, path in
            try await store.insert("Vehicle", [["name": .string("x")]])
            try asAnotherTool(#"UPDATE "Vehicle" SET "name" = CAST(X'61FF62' AS TEXT)"#, on: path)
            var sink = Cells()
            #expect(try store.fetchWithoutWaiting(Self.byName, into: &sink) == 1)
            let fetched = try await store.fetch(Self.byName).objects
            #expect(fetched.first?.attributes["name"] == .string("a\u{FFFD}b"))
            #expect(sink.objects.first?["name"] == .other(.string("a\u{FFFD}b")))

            try asAnotherTool(#"UPDATE "Vehicle" SET "vin" = 'not a uuid'"#, on: path)
            let refused = #expect(throws: ModelError.self) {
                var sink = Cells()
                _ = try store.fetchWithoutWaiting(Self.byName, into: &sink)
            }
            #expect(refused?.code == .storageFailure)
            #expect(refused?.message.contains("is not a valid uuid") == true, "\(String(describing: refused))")
        }
    }
}
