import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
import SQLiteStorage
import Testing

/// What the file keeps, and two stores (as two processes would) sharing one file.
@Suite struct PersistenceTests {
    @Test func reopeningKeepsDataIdentifierAndSchema() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("trips.sqlite").path
            let first = try await openStore(path, schema: SampleTrips.schema)
            let ids = try await first.insert(
                "PersonalTrip",
                [
                    [
                        "name": .string("Paris"), "destination": .string("FR"),
                        "startDate": date("2026-03-01"), "endDate": date("2026-03-10"),
                    ]
                ])
            let identifier = first.storeIdentifier
            let hash = try await first.schema().versionHash
            await first.close()

            let second = try await openStore(path)
            #expect(second.storeIdentifier == identifier)
            #expect(try await second.schema().versionHash == hash)
            let snapshot = try #require(try await second.snapshots(for: ids).first)
            #expect(snapshot["name"] == .string("Paris"))
            #expect(snapshot["reason"] == .string("unknown"))
            #expect(snapshot.id.entityName == "PersonalTrip")
            try await second.apply(schema: SampleTrips.schema)
            #expect(try await second.currentHistoryToken() == HistoryToken(1))
            await second.close()
        }
    }

    /// A store's labels (the daemon keeps a store's owner in one) are written with the commit
    /// that makes the store, and read back by every later open; a store made without has none.
    @Test func labelsAreKeptInTheFile() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("labelled.sqlite").path
            let made = try await SQLiteStorageFactory().create(
                StoreLocation(scheme: "sqlite", path: path), applying: SampleTrips.schema,
                labels: ["owner": "1001", "note": "ünïcode"])
            #expect((made as? SQLiteStore)?.labels == ["owner": "1001", "note": "ünïcode"])
            await made.close()
            let reopened = try await SQLiteStore.open(path: path)
            #expect(reopened.labels == ["owner": "1001", "note": "ünïcode"])
            #expect(try await reopened.schema().entities.count == SampleTrips.schema.entities.count)
            await reopened.close()

            let plain = try await SQLiteStore.open(path: directory.appendingPathComponent("plain.sqlite").path)
            #expect(plain.labels.isEmpty)
            await plain.close()
        }
    }

    @Test func aNewFileIsInWALModeWithItsSchemaOnDiskAndNoJournalLeft() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("new.sqlite").path
            let store = try await openStore(path, schema: SampleTrips.schema)
            // Bytes 18 and 19 of the header are the read and write versions: 2 means WAL.
            let header = try #require(FileManager.default.contents(atPath: path))
            #expect(header.count >= 100 && header[18] == 2 && header[19] == 2)
            #expect(!FileManager.default.fileExists(atPath: path + "-journal"))
            let ids = try await store.insert(
                "PersonalTrip",
                [
                    [
                        "name": .string("Lyon"), "destination": .string("FR"),
                        "startDate": date("2026-04-01"), "endDate": date("2026-04-02"),
                    ]
                ])
            // A second connection (another process) sees the schema and the object.
            let other = try await openStore(path)
            #expect(try await other.schema().versionHash == SampleTrips.schema.versionHash)
            #expect(try await other.snapshots(for: ids).first?["name"] == .string("Lyon"))
            await other.close()
            await store.close()
        }
    }

    /// Another process that opens a new store's file and closes it leaves the WAL in place, and
    /// every save stays. Creating the file once synced it through a descriptor of its own, whose
    /// closing dropped this process's locks on the file: the other process then took itself for
    /// the last connection, checkpointed, and deleted the WAL the store went on writing to, and
    /// what the store saved after that was lost when it closed.
    @Test func anotherProcessReadingANewFileLeavesItsWALAndSaves() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("new.sqlite").path
            let store = try await openStore(path, schema: SampleTrips.schema)
            func trip(_ name: String) -> [String: Value] {
                [
                    "name": .string(name), "destination": .string("FR"), "startDate": date("2026-04-01"),
                    "endDate": date("2026-04-02"),
                ]
            }
            func transactionsSeenByAnotherProcess() throws -> String {
                let shell = Process()
                let output = Pipe()
                shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
                shell.arguments = [path, "SELECT count(*) FROM _modeld_transaction"]
                shell.standardOutput = output
                try shell.run()
                shell.waitUntilExit()
                return String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            }
            _ = try await store.insert("PersonalTrip", [trip("Lyon")])
            #expect(try transactionsSeenByAnotherProcess() == "1\n")
            #expect(FileManager.default.fileExists(atPath: path + "-wal"), "the other process deleted the WAL")
            _ = try await store.insert("PersonalTrip", [trip("Nice")])
            #expect(try transactionsSeenByAnotherProcess() == "2\n")
            await store.close()
            #expect(try transactionsSeenByAnotherProcess() == "2\n")
        }
    }

    @Test func closingForRemovalSkipsTheCheckpointAndLosesNothingUntilDeleted() async throws {
        try await withTemporaryDirectory { directory in
            // An ordinary close copies the WAL into the file and removes it.
            let kept = directory.appendingPathComponent("kept.sqlite").path
            let first = try await openStore(kept, schema: SampleTrips.schema)
            _ = try await first.insert(
                "PersonalTrip",
                [
                    [
                        "name": .string("Oslo"), "destination": .string("NO"),
                        "startDate": date("2026-05-01"), "endDate": date("2026-05-03"),
                    ]
                ])
            await first.close()
            #expect(!FileManager.default.fileExists(atPath: kept + "-wal"))

            // Closing for removal leaves the WAL as it is (no copy, no sync): the files are
            // deleted next. Until then the data is intact: reopening recovers it from the WAL.
            let dropped = directory.appendingPathComponent("dropped.sqlite").path
            let second = try await openStore(dropped, schema: SampleTrips.schema)
            let ids = try await second.insert(
                "PersonalTrip",
                [
                    [
                        "name": .string("Rome"), "destination": .string("IT"),
                        "startDate": date("2026-06-01"), "endDate": date("2026-06-02"),
                    ]
                ])
            await second.closeForRemoval()
            let wal = try FileManager.default.attributesOfItem(atPath: dropped + "-wal")[.size] as? Int
            #expect((wal ?? 0) > 0)
            await #expect(throws: ModelError.self) { try await second.snapshots(for: ids) }
            let reopened = try await openStore(dropped)
            #expect(try await reopened.snapshots(for: ids).first?["name"] == .string("Rome"))
            await reopened.close()
        }
    }

    @Test func twoStoresOnOneFileShareIdentifiersAndHistory() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("shared.sqlite").path
            let a = try await openStore(path)
            let b = try await openStore(path)
            #expect(a.storeIdentifier == b.storeIdentifier)
            try await a.apply(schema: Articles.schema)
            // b opened before the schema was applied; it reads it from the file.
            #expect(try await b.schema().entityNames == Articles.schema.entities.map(\.name))

            let fromA = try await a.insert("Category", [["name": .string("tech")]], author: "a")
            let tokenA = try #require(try await a.currentHistoryToken())
            let seenByB = try await b.snapshots(for: fromA)
            #expect(seenByB.map(\.id) == fromA)
            #expect(seenByB.first?["name"] == .string("tech"))
            let uri = fromA[0].uriRepresentation
            #expect(try await b.snapshots(for: [PersistentIdentifier(uri: uri, in: b.storeIdentifier)]).count == 1)

            let fromB = try await b.insert("Category", [["name": .string("food")]], author: "b")
            let historyInA = try await a.history(after: tokenA, limit: nil)
            #expect(historyInA.map(\.author) == ["b"])
            #expect(historyInA.first?.changes == [HistoryChange(kind: .insert, id: fromB[0])])
            #expect(try await b.history(after: nil, limit: nil).map(\.author) == ["a", "b"])
            #expect(fromB[0].primaryKey == 2)
            await a.close()
            await b.close()
        }
    }

    @Test func keysAreNeverReusedEvenAfterDeletingTheHighest() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("keys.sqlite").path
            var store = try await openStore(path, schema: Articles.schema)
            let ids = try await store.insert(
                "Student", (1...3).map { ["name": .string("s\($0)"), "birthOfYear": .int(2000 + $0)] })
            #expect(ids.map(\.primaryKey) == [1, 2, 3])
            _ = try await store.save(ChangeSet(deletes: [DeletedObject(id: ids[2])]))
            #expect(
                try await store.insert("Student", [["name": .string("s4"), "birthOfYear": .int(2004)]]).first?
                    .primaryKey == 4)
            _ = try await store.save(ChangeSet(deletes: [DeletedObject(id: store.id("Student", 4))]))
            await store.close()
            store = try await openStore(path)
            #expect(
                try await store.insert("Student", [["name": .string("s5"), "birthOfYear": .int(2005)]]).first?
                    .primaryKey == 5)
            await store.close()
        }
    }

    @Test func theFileUsesWriteAheadLogging() async throws {
        try await withStore(Articles.schema) { store, path in
            try await store.insert("Student", [["name": .string("Ada"), "birthOfYear": .int(1815)]])
            let header = try Data(contentsOf: URL(fileURLWithPath: path)).prefix(20)
            // Bytes 18 and 19 of the header are the file format versions: 2 means WAL.
            #expect(Array(header.suffix(2)) == [2, 2])
            #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        }
    }

    @Test func factoryCreatesTheDirectoryAndDestroyRemovesTheFiles() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("nested/deeper/store.sqlite").path
            let factory = SQLiteStorageFactory()
            #expect(factory.scheme == "sqlite")
            let location = try StoreLocation(url: "sqlite://\(path)")
            let store = try await factory.open(location)
            try await store.apply(schema: Articles.schema)
            _ = try await store.save(
                ChangeSet(inserts: [
                    InsertedObject(
                        id: .temporary(storeIdentifier: store.storeIdentifier, entityName: "Student"),
                        attributes: ["name": .string("x"), "birthOfYear": .int(1)])
                ]))
            #expect(FileManager.default.fileExists(atPath: path))
            await store.close()
            try await factory.destroy(location)
            for suffix in ["", "-wal", "-shm"] { #expect(!FileManager.default.fileExists(atPath: path + suffix)) }
            try await factory.destroy(location) // nothing left to remove is fine
        }
    }

    @Test func concurrentReadsAndWritesAllSucceed() async throws {
        try await withStore(Articles.schema) { store, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        for round in 0..<10 {
                            try await store.insert(
                                "Student",
                                [["name": .string("w\(writer)-\(round)"), "birthOfYear": .int(Int64(round))]])
                        }
                    }
                }
                for _ in 0..<8 {
                    group.addTask {
                        for _ in 0..<10 {
                            let count = try await store.fetch(
                                FetchDescriptor(entityName: "Student", resultType: .count)
                            ).count
                            #expect(count <= 40)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.fetch(FetchDescriptor(entityName: "Student", resultType: .count)).count == 40)
            #expect(try await store.currentHistoryToken() == HistoryToken(40))
        }
    }
}

/// History records the saving user (``ChangeSet/savingUser``, which the daemon sets to its
/// caller) beside the author; a store made before it did gains the column when opened.
@Suite struct HistoryUserTests {
    static let schema = Schema(entities: [
        EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])
    ])

    @Test func historyRecordsTheSavingUserAndOldStoresGainTheColumn() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("old.sqlite").path
            let store = try await SQLiteStore.open(path: path, applying: Self.schema)
            try await store.insert("Note", [["text": .string("before")]], author: "app")
            await store.close()
            // As a store of an earlier modeld: no user column.
            let dropped = Process()
            dropped.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
            dropped.arguments = [path, "ALTER TABLE _modeld_transaction DROP COLUMN user"]
            try dropped.run()
            dropped.waitUntilExit()
            try #require(dropped.terminationStatus == 0)

            let reopened = try await SQLiteStore.open(path: path)
            try await ChangeSet.$savingUser.withValue("alice") {
                try await reopened.insert("Note", [["text": .string("after")]], author: "app")
            }
            let history = try await reopened.history(after: nil, limit: nil)
            #expect(history.map(\.author) == ["app", "app"])
            #expect(history.map(\.user) == [nil, "alice"])
            #expect(try await reopened.integrityCheck() == ["ok"])
            await reopened.close()
        }
    }
}
