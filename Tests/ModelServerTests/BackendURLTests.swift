import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Synchronization
import Testing

/// Stores on a backend named by scheme, or at a URL of their own (attached), over a real socket.
@Suite struct BackendURLTests {
    /// A store made at a URL outside the data directory is served, listed with its backend and
    /// URL, remembered across a restart, and attachable by a second daemon; dropping it deletes
    /// its files and leaves nothing else in that directory.
    @Test func aStoreAtAURLOfItsOwnIsRememberedAndDroppedWhole() async throws {
        try await withTemporaryDirectory { elsewhere in
            let file = elsewhere.appendingPathComponent("trips.sqlite").path
            let url = "sqlite://\(file)"
            let directory = try TemporaryDirectory.make(prefix: "mu")
            defer { try? FileManager.default.removeItem(at: directory) }
            let made = try await TestDaemon.withDaemon(directory: directory) { daemon in
                try await daemon.withClient { client in
                    let info = try await client.createStore("trips", backend: nil, url: url, schema: SampleTrips.schema)
                    #expect(
                        info.backend == "sqlite" && info.kind == .sqlite && info.url == url && info.path == file,
                        "\(info)")
                    try await client.apply(
                        [
                            .insert(
                                entity: "Trip", attributes: trip("Kyoto", "2026-04-01", "2026-04-09"),
                                relationships: [:], id: nil)
                        ], in: "trips")
                    return info
                }
            }
            #expect(FileManager.default.fileExists(atPath: file))

            // A second daemon, on another data directory, attaches the same file.
            try await TestDaemon.withDaemon { other in
                try await other.withClient { client in
                    let info = try await client.createStore("shared", backend: nil, url: url)
                    #expect(info.storeIdentifier == made.storeIdentifier, "the same store, by its UUID")
                    #expect(info.historyToken == HistoryToken(1), "its history, as attached")
                    #expect(try await client.count(FetchDescriptor(entityName: "Trip"), in: "shared") == 1)
                }
            }

            // The first daemon, restarted, serves it again under its name.
            try await TestDaemon.withDaemon(directory: directory) { daemon in
                try await daemon.withClient { client in
                    let info = try await client.store("trips")
                    #expect(info.storeIdentifier == made.storeIdentifier && info.url == url)
                    #expect(try await client.count(FetchDescriptor(entityName: "Trip"), in: "trips") == 1)
                    try await client.dropStore("trips")
                }
            }
            let left = try FileManager.default.contentsOfDirectory(atPath: elsewhere.path)
            #expect(left.isEmpty, "dropping an attached store leaves \(left)")

            // And the restarted daemon has forgotten it.
            try await TestDaemon.withDaemon(directory: directory) { daemon in
                let stores = try await daemon.withClient { try await $0.stores() }
                #expect(stores.isEmpty, "\(stores.map(\.name))")
            }
        }
    }

    /// A daemon that restarts opens a remembered URL only if its store is still there: a file
    /// deleted meanwhile (a drop by another daemon) is reported, not made anew and empty.
    @Test func aRememberedStoreThatIsGoneIsNotMadeAnew() async throws {
        try await withTemporaryDirectory { elsewhere in
            let file = elsewhere.appendingPathComponent("gone.sqlite").path
            let directory = try TemporaryDirectory.make(prefix: "mg")
            defer { try? FileManager.default.removeItem(at: directory) }
            try await TestDaemon.withDaemon(directory: directory) { daemon in
                try await daemon.withClient { client in
                    try await client.createStore(
                        "gone", backend: nil, url: "sqlite://\(file)", schema: SampleTrips.schema)
                    try await client.createStore("kept", schema: SampleTrips.schema)
                }
            }
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
            try await TestDaemon.withDaemon(directory: directory) { daemon in
                let stores = try await daemon.withClient { try await $0.stores() }
                #expect(stores.map(\.name) == ["kept"], "\(stores.map(\.name))")
                #expect(!FileManager.default.fileExists(atPath: file), "no empty store was made at \(file)")
                // A call naming it hears why it is not served, not that there is no such store.
                let told = await expectError(.storageFailure) {
                    _ = try await daemon.withClient {
                        try await $0.count(FetchDescriptor(entityName: "Trip"), in: "gone")
                    }
                }
                #expect(
                    told?.message.contains("could not be opened when modeld started") == true,
                    "\(String(describing: told))")
            }
        }
    }

    /// A store the daemon placed whose file was emptied (cut short) is not served as a new, empty
    /// store under a new UUID, and one whose file is no database is named as such to its callers;
    /// the other stores are served.
    @Test func storesWhoseFilesAreBrokenAreNotServedAndSaySo() async throws {
        let directory = try TemporaryDirectory.make(prefix: "mb")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                for name in ["good", "hollow", "junk"] {
                    try await client.createStore(name, schema: SampleTrips.schema)
                }
            }
        }
        let stores = directory.appendingPathComponent("data/stores")
        for suffix in ["-wal", "-shm"] {
            for name in ["hollow", "junk"] {
                try? FileManager.default.removeItem(at: stores.appendingPathComponent(name + ".sqlite" + suffix))
            }
        }
        try Data().write(to: stores.appendingPathComponent("hollow.sqlite"))
        try Data(repeating: 0x2a, count: 8192).write(to: stores.appendingPathComponent("junk.sqlite"))
        try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                let served = try await client.stores().map(\.name)
                #expect(served == ["good"])
                let hollow = await expectError(.storageFailure) {
                    _ = try await client.count(FetchDescriptor(entityName: "Trip"), in: "hollow")
                }
                #expect(hollow?.message.contains("is empty") == true, "\(String(describing: hollow))")
                let junk = await expectError(.storageFailure) {
                    _ = try await client.count(FetchDescriptor(entityName: "Trip"), in: "junk")
                }
                #expect(
                    junk?.message.contains("could not be opened when modeld started") == true,
                    "\(String(describing: junk))")
                let good = try await client.count(FetchDescriptor(entityName: "Trip"), in: "good")
                #expect(good == 0)
            }
        }
        let hollow = try Data(contentsOf: stores.appendingPathComponent("hollow.sqlite"))
        #expect(hollow.isEmpty, "nothing was made of it")

        // Such a store is dropped, or a backup restored over it, without a restart or a hand in
        // the data directory: what its log tells an operator to do.
        try await TestDaemon.withDaemon(directory: directory) { daemon in
            try await daemon.withClient { client in
                let now = Value.date(Timestamp(Date()))
                try await client.apply(
                    [
                        .insert(
                            entity: "Trip",
                            attributes: [
                                "name": .string("Oslo"), "destination": .string("Oslo"), "startDate": now,
                                "endDate": now,
                            ],
                            relationships: [:], id: nil)
                    ], in: "good")
                let backup = Mutex(Data())
                _ = try await client.backupStore("good") { chunk in backup.withLock { $0.append(chunk) } }
                let whole = backup.withLock { $0 }
                let sent = Mutex(false)
                let restored = try await client.restoreStore("junk", replace: true, newIdentity: true) {
                    sent.withLock { sent in
                        defer { sent = true }
                        return sent ? nil : whole
                    }
                }
                #expect(restored.name == "junk")
                #expect(try await client.count(FetchDescriptor(entityName: "Trip"), in: "junk") == 1)
                #expect(try await client.dropStore("hollow") == 0)
                #expect(!FileManager.default.fileExists(atPath: stores.appendingPathComponent("hollow.sqlite").path))
                _ = try await client.createStore("hollow", schema: SampleTrips.schema)
                #expect(try await client.stores().map(\.name) == ["good", "hollow", "junk"])
            }
        }
    }

    /// A URL naming a file that is not an SQLite database is the caller's mistake: refused with
    /// INVALID_ARGUMENT naming it (it was INTERNAL), and the file is left as it was.
    @Test func aURLAtAFileOfSomethingElseIsRefused() async throws {
        try await withTemporaryDirectory { elsewhere in
            let file = elsewhere.appendingPathComponent("notes.sqlite")
            try Data("shopping: milk, eggs\n".utf8).write(to: file)
            try await TestDaemon.withDaemon { daemon in
                try await daemon.withClient { client in
                    let refused = await expectError(.invalidArgument) {
                        _ = try await client.createStore("notes", backend: nil, url: "sqlite://\(file.path)")
                    }
                    #expect(
                        refused?.message.contains("is not an SQLite database") == true, "\(String(describing: refused))"
                    )
                    let stores = try await client.stores()
                    #expect(stores.isEmpty)
                }
            }
            let kept = try Data(contentsOf: file)
            #expect(kept == Data("shopping: milk, eggs\n".utf8))

            // An SQLite database of another program's is refused as it was found: not switched
            // to WAL first (it was).
            let database = elsewhere.appendingPathComponent("theirs.sqlite")
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
            shell.arguments = [database.path, "CREATE TABLE t(a); INSERT INTO t VALUES (1);"]
            try shell.run()
            shell.waitUntilExit()
            let before = try Data(contentsOf: database)
            try await TestDaemon.withDaemon { daemon in
                try await daemon.withClient { client in
                    let refused = await expectError(.invalidArgument) {
                        _ = try await client.createStore("theirs", backend: nil, url: "sqlite://\(database.path)")
                    }
                    #expect(refused?.message.contains("not a modeld store") == true, "\(String(describing: refused))")
                }
            }
            let after = try Data(contentsOf: database)
            #expect(after == before, "the refused database was changed")

            // A URL naming a directory, or a path under a file, is the caller's mistake too.
            try await TestDaemon.withDaemon { daemon in
                try await daemon.withClient { client in
                    for (url, words) in [
                        ("sqlite://\(elsewhere.path)", "is a directory"),
                        ("sqlite://\(file.path)/under/s.sqlite", "is a file, so no store can be made under it"),
                    ] {
                        let refused = await expectError(.invalidArgument) {
                            _ = try await client.createStore("misplaced", backend: nil, url: url)
                        }
                        #expect(refused?.message.contains(words) == true, "\(String(describing: refused))")
                    }
                }
            }
        }
    }

    /// `backend` names a registered scheme; the store is placed by that backend.
    @Test func aBackendIsChosenByScheme() async throws {
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                let scratch = try await client.createStore("scratch", backend: "memory")
                #expect(scratch.kind == .memory && scratch.backend == "memory" && scratch.path == nil, "\(scratch)")
                let placed = try await client.createStore("placed", backend: "sqlite")
                let path = try #require(placed.path)
                #expect(placed.backend == "sqlite" && placed.url == "sqlite://\(path)", "\(placed)")
            }
        }
    }

    /// Bad backends and URLs are refused with what to do instead, and leave no store behind.
    @Test func badBackendsAndURLsAreExplained() async throws {
        try await withTemporaryDirectory { elsewhere in
            try await TestDaemon.withDaemon { daemon in
                try await daemon.withClient { client in
                    var error = await expectError(.invalidArgument) {
                        try await client.createStore("a", backend: "oracle")
                    }
                    #expect(
                        error?.message.contains("no storage backend for scheme 'oracle'; available: ") == true,
                        "\(String(describing: error))")
                    error = await expectError(.invalidArgument) {
                        try await client.createStore("b", backend: nil, url: "nope://x")
                    }
                    #expect(error?.message.contains("'nope'") == true, "\(String(describing: error))")
                    error = await expectError(.invalidArgument) {
                        try await client.createStore("c", backend: nil, url: "sqlite:relative.sqlite")
                    }
                    #expect(error?.message.contains("absolute path") == true, "\(String(describing: error))")
                    let inside = daemon.directory.appendingPathComponent("data/stores/sneaky.sqlite").path
                    error = await expectError(.invalidArgument) {
                        try await client.createStore("d", backend: nil, url: "sqlite://\(inside)")
                    }
                    #expect(
                        error?.message.contains("inside the daemon's stores directory") == true,
                        "\(String(describing: error))")

                    let url = "sqlite://\(elsewhere.path)/one.sqlite"
                    try await client.createStore("one", backend: nil, url: url, schema: SampleTrips.schema)
                    error = await expectError(.uniqueConstraint) {
                        try await client.createStore("two", backend: nil, url: url)
                    }
                    #expect(
                        error?.message.contains("served already, as the store 'one'") == true,
                        "\(String(describing: error))")
                    #expect(try await client.stores().map(\.name) == ["one"])

                    // A copy of a served store's file has its UUID: refused, and left as it was.
                    try await client.apply(
                        [
                            .insert(
                                entity: "Trip", attributes: trip("Kyoto", "2026-04-01", "2026-04-09"),
                                relationships: [:], id: nil)
                        ],
                        in: "one")
                    let copy = "\(elsewhere.path)/copy.sqlite"
                    #expect(FileManager.default.createFile(atPath: copy, contents: nil))
                    let output = try FileHandle(forWritingTo: URL(fileURLWithPath: copy))
                    let backup = try await client.backupStore("one") { try output.write(contentsOf: $0) }
                    try output.close()
                    error = await expectError(.uniqueConstraint) {
                        try await client.createStore("twin", backend: nil, url: "sqlite://\(copy)")
                    }
                    #expect(
                        error?.message.contains("UUID of the store 'one'") == true
                            && error?.message.contains(backup.storeIdentifier.uuidString.lowercased()) == true,
                        "\(String(describing: error))")
                    #expect(try await client.stores().map(\.name) == ["one"])
                    // Nothing of the copy was lost: with the original gone, it is served.
                    try await client.dropStore("one")
                    let twin = try await client.createStore("twin", backend: nil, url: "sqlite://\(copy)")
                    #expect(twin.storeIdentifier == backup.storeIdentifier)
                    #expect(try await client.count(FetchDescriptor(entityName: "Trip"), in: "twin") == 1)
                }
            }
        }
    }
}
