#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelCore
import ModelRemote
import ModelTesting
import Synchronization
import Testing

/// Online backup and restore against the spawned modeld: a backup taken while 16 clients write
/// is the store at its token, object for object; a restore checks what it is given and makes
/// nothing from a bad file; a full disk on the daemon's side fails the call and loses nothing.
@Suite struct BackupTests {
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Item",
            attributes: [
                AttributeDescription(name: "writer", type: .int), AttributeDescription(name: "seq", type: .int),
            ]),
        EntityDescription(
            name: "Counter",
            attributes: [
                AttributeDescription(name: "writer", type: .int), AttributeDescription(name: "value", type: .int),
            ]),
    ])

    /// One acknowledged save of a writer: its token, the writer and its sequence number.
    struct Saved: Sendable {
        let token: Int64
        let writer: Int64
        let seq: Int64
    }

    @Test func aBackupUnderSixteenWritersIsTheStoreAtItsToken() async throws {
        let daemon = try await ModeldProcess.launch(arguments: ["--default-store", ""])
        do {
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                try await client.createStore("shop", schema: Self.schema)
                let counters = try await client.apply(
                    (0..<16).map { writer in
                        .insert(
                            entity: "Counter", attributes: ["writer": .int(Int64(writer)), "value": .int(0)],
                            relationships: [:], id: nil)
                    }, in: "shop")
                let counterIDs = try await Self.objects("Counter", in: "shop", client).sorted {
                    $0.attributes["writer"]!.numericValue! < $1.attributes["writer"]!.numericValue! // ! set above
                }.map(\.id)
                #expect(counterIDs.count == 16)
                let firstToken = try #require(counters.token).rawValue

                let saved = Shared<[Saved]>([])
                let stop = Shared(false)
                let writers = Task {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for writer in 0..<16 {
                            group.addTask {
                                var seq: Int64 = 0
                                while !stop.value {
                                    seq += 1
                                    let outcome = try await client.apply(
                                        [
                                            .insert(
                                                entity: "Item",
                                                attributes: ["writer": .int(Int64(writer)), "seq": .int(seq)],
                                                relationships: [:], id: nil),
                                            .update(
                                                counterIDs[writer], attributes: ["value": .int(seq)], relationships: [:]
                                            ),
                                        ], in: "shop")
                                    let token = try #require(outcome.token).rawValue
                                    saved.withLock { $0.append(Saved(token: token, writer: Int64(writer), seq: seq)) }
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
                // Every writer is under way before the backup, and goes on during and after it.
                while saved.withLock({ Set($0.map(\.writer)).count < 16 || $0.count < 200 }) {
                    try await Task.sleep(for: .milliseconds(5))
                }
                let bytes = Shared(Data())
                let info = try await client.backupStore("shop") { data in bytes.withLock { $0.append(data) } }
                let countAtBackup = saved.withLock { $0.count }
                while saved.withLock({ $0.count }) < countAtBackup + 100 {
                    try await Task.sleep(for: .milliseconds(5))
                }
                stop.value = true
                try await writers.value

                let token = try #require(info.historyToken).rawValue
                let all = saved.withLock { $0 }
                let before = all.filter { $0.token <= token }
                #expect(before.count > 0 && before.count < all.count, "\(before.count) of \(all.count) saves before")
                #expect(Int64(bytes.withLock { $0.count }) == info.size)
                #expect(info.format == "sqlite")

                // Restored beside the source, with a new identity, then over it, keeping its own.
                #expect(client.transport == .framed)
                let file = daemon.directory.appendingPathComponent("shop.backup")
                try bytes.withLock { try $0.write(to: file) }
                // The copy goes over HTTP/2, the replacement over the framed socket.
                let copy = try await DaemonClient.withClient(socketPath: daemon.socketPath, transport: .http2) {
                    try await Self.restore(file, as: "copy", newIdentity: true, $0)
                }
                #expect(copy.storeIdentifier != info.storeIdentifier)
                let replaced = try await Self.restore(file, as: "shop", replace: true, client)
                #expect(replaced.storeIdentifier == info.storeIdentifier)
                for store in ["copy", "shop"] {
                    #expect(try await client.store(store).historyToken?.rawValue == token)
                    #expect(try await client.history(after: nil, in: store).last?.token.rawValue == token)
                    let items = try await Self.objects("Item", in: store, client).map {
                        "\($0.attributes["writer"]!)/\($0.attributes["seq"]!)" // ! every Item has both
                    }
                    #expect(Set(items) == Set(before.map { "\(Value.int($0.writer))/\(Value.int($0.seq))" }))
                    #expect(items.count == before.count)
                    for counter in try await Self.objects("Counter", in: store, client) {
                        let writer = try #require(counter.attributes["writer"]?.numericValue).rounded()
                        let mine = before.filter { Double($0.writer) == writer }
                        #expect(counter.attributes["value"] == .int(mine.map(\.seq).max() ?? 0))
                        #expect(counter.version == Int64(1 + mine.count))
                    }
                }
                #expect(firstToken < token)
                // The replaced store takes saves again, after the backup's token.
                let next = try await client.apply(
                    [
                        .insert(
                            entity: "Item", attributes: ["writer": .int(99), "seq": .int(1)], relationships: [:],
                            id: nil)
                    ],
                    in: "shop")
                #expect(next.token?.rawValue == token + 1)
            }
            #expect(try await daemon.stop() == 0)
        } catch {
            Issue.record("\(error)\n\(daemon.log.suffix(3000))")
        }
        await daemon.remove()
    }

    @Test func aRestoreRefusesWhatIsNotASoundBackupAndMakesNothing() async throws {
        let daemon = try await ModeldProcess.launch(arguments: ["--default-store", ""])
        do {
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                try await client.createStore("shop", schema: Self.schema)
                try await client.apply(
                    (0..<500).map { index in
                        .insert(
                            entity: "Item", attributes: ["writer": .int(1), "seq": .int(Int64(index))],
                            relationships: [:], id: nil)
                    }, in: "shop")
                let bytes = Shared(Data())
                try await client.backupStore("shop") { data in bytes.withLock { $0.append(data) } }
                let backup = bytes.withLock { $0 }
                let stores = try await client.stores().map(\.name)

                // Pages of the tables overwritten; not SQLite at all; SQLite but not modeld's; cut short.
                var corrupt = backup
                corrupt.replaceSubrange(8192..<12288, with: Data(repeating: 0xA5, count: 4096))
                let foreign = daemon.directory.appendingPathComponent("foreign.sqlite")
                try Self.sqlite(foreign.path, "CREATE TABLE t (x); INSERT INTO t VALUES (1);")
                // A sound backup given a trigger (which would run inside the daemon's saves) or a
                // view: modeld makes neither.
                func added(_ sql: String, as name: String) throws -> Data {
                    let file = daemon.directory.appendingPathComponent("\(name).sqlite")
                    try backup.write(to: file)
                    try Self.sqlite(file.path, sql)
                    return try Data(contentsOf: file)
                }
                let cases: [(String, Data)] = [
                    ("corrupt", corrupt),
                    ("text", Data("name,seq\nx,1\n".utf8)),
                    ("foreign", try Data(contentsOf: foreign)),
                    ("truncated", backup.prefix(backup.count / 2)),
                    ("empty", Data()),
                    (
                        "trigger",
                        try added(
                            "CREATE TRIGGER t AFTER UPDATE ON _modeld_meta BEGIN DELETE FROM _modeld_meta; END;",
                            as: "trigger")
                    ),
                    ("view", try added("CREATE VIEW v AS SELECT 1;", as: "view")),
                ]
                for (label, data) in cases {
                    let file = daemon.directory.appendingPathComponent("\(label).backup")
                    try data.write(to: file)
                    await #expect(throws: ModelError.self, "\(label)") {
                        do {
                            _ = try await Self.restore(file, as: "restored", newIdentity: true, client)
                        } catch let error as ModelError {
                            #expect(error.code == .invalidArgument, "\(label): \(error)")
                            #expect(error.message.contains("not a sound modeld backup"), "\(label): \(error)")
                            if label == "trigger" || label == "view" {
                                #expect(
                                    error.message.contains("1 trigger(s) or view(s), which modeld never makes"),
                                    "\(error)")
                            }
                            throw error
                        }
                    }
                }
                #expect(try await client.stores().map(\.name) == stores)
                // A reader that fails part-way ends the call with its own error (not a cancellation)
                // and makes nothing.
                struct ReadFailure: Error {}
                let chunks = Shared(0)
                await #expect(throws: ReadFailure.self) {
                    _ = try await client.restoreStore("half", newIdentity: true) {
                        guard
                            chunks.withLock({
                                $0 += 1; return $0
                            }) == 1
                        else { throw ReadFailure() }
                        return backup.prefix(64 * 1024)
                    }
                }
                #expect(try await client.stores().map(\.name) == stores)
                // A name taken, without replace: ALREADY_EXISTS, and the store is untouched.
                let good = daemon.directory.appendingPathComponent("good.backup")
                try backup.write(to: good)
                await #expect(throws: ModelError.self) {
                    do {
                        _ = try await Self.restore(good, as: "shop", client)
                    } catch let error as ModelError {
                        #expect(error.code == .uniqueConstraint, "\(error)")
                        throw error
                    }
                }
                #expect(try await client.count(FetchDescriptor(entityName: "Item"), in: "shop") == 500)
                // Nothing of the refused restores is left in the daemon's transfer directory.
                let transfers = URL(fileURLWithPath: daemon.dataDirectory).appendingPathComponent("stores/.transfers")
                #expect(try FileManager.default.contentsOfDirectory(atPath: transfers.path) == [])
                // Backups the daemon does not make say why.
                try await client.createStore("scratch", kind: .memory)
                await #expect(throws: ModelError.self) {
                    do {
                        try await client.backupStore("scratch") { _ in }
                    } catch let error as ModelError {
                        #expect(error.code == .invalidArgument && error.message.contains("memory"), "\(error)")
                        throw error
                    }
                }
                await #expect(throws: ModelError.self) {
                    do {
                        try await client.backupStore("nowhere") { _ in }
                    } catch let error as ModelError {
                        #expect(error.code == .notFound, "\(error)")
                        throw error
                    }
                }
            }
            #expect(try await daemon.stop() == 0)
        } catch {
            Issue.record("\(error)\n\(daemon.log.suffix(3000))")
        }
        await daemon.remove()
    }

    /// The daemon's disk fills during a backup and during a restore (an 8 MiB tmpfs as its data
    /// directory, mounted as root can, filled with ballast): each fails RESOURCE_EXHAUSTED saying so, leaves no file
    /// behind, and the store serves on unchanged.
    @Test func aFullDiskOnTheDaemonsSideFailsTheCallAndLosesNothing() async throws {
        let directory = try TemporaryDirectory.make(prefix: "bk")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        try #require(mount("tmpfs", data.path, "tmpfs", 0, "size=8m,mode=0700") == 0, "mount: \(errno)")
        defer { umount2(data.path, Int32(MNT_DETACH)) }
        let daemon = try await ModeldProcess.launch(arguments: ["--default-store", ""], directory: directory)
        do {
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                var schema = Self.schema
                schema.entities.append(
                    EntityDescription(name: "Note", attributes: [AttributeDescription(name: "body", type: .string)]))
                try await client.createStore("shop", schema: schema)
                let body = String(repeating: "lorem ipsum ", count: 84)
                for _ in 0..<3 {
                    try await client.apply(
                        (0..<100).map { _ in
                            .insert(entity: "Note", attributes: ["body": .string(body)], relationships: [:], id: nil)
                        }, in: "shop")
                }
                // Ballast leaves 16 KiB free: less than the store's copy needs.
                var info = statvfs()
                try #require(statvfs(data.path, &info) == 0)
                let ballast = data.appendingPathComponent("ballast")
                try Data(repeating: 1, count: Int(info.f_bavail) * Int(info.f_frsize) - 16_384).write(to: ballast)
                let count = try await client.count(FetchDescriptor(entityName: "Note"), in: "shop")
                await #expect(throws: ModelError.self) {
                    do {
                        try await client.backupStore("shop") { _ in }
                    } catch let error as ModelError {
                        #expect(error.code == .resourceExhausted && error.message.contains("full"), "\(error)")
                        throw error
                    }
                }
                let large = directory.appendingPathComponent("large.backup")
                try Data(repeating: 7, count: 3_000_000).write(to: large)
                await #expect(throws: ModelError.self) {
                    do {
                        _ = try await Self.restore(large, as: "big", client)
                    } catch let error as ModelError {
                        #expect(error.code == .resourceExhausted && error.message.contains("full"), "\(error)")
                        throw error
                    }
                }
                let transfers = data.appendingPathComponent("stores/.transfers")
                #expect(try FileManager.default.contentsOfDirectory(atPath: transfers.path) == [])
                #expect(try await client.stores().map(\.name) == ["shop"])
                #expect(try await client.count(FetchDescriptor(entityName: "Note"), in: "shop") == count)
                // With room again, the same backup is made.
                try FileManager.default.removeItem(at: ballast)
                let backup = try await client.backupStore("shop") { _ in }
                #expect(backup.size > 300_000)
                try await client.apply(
                    [.insert(entity: "Note", attributes: ["body": .string("room")], relationships: [:], id: nil)],
                    in: "shop")
            }
            #expect(try await daemon.stop() == 0)
        } catch {
            Issue.record("\(error)\n\(daemon.log.suffix(3000))")
        }
        await daemon.remove()
    }

    static func restore(
        _ file: URL, as name: String, replace: Bool = false, newIdentity: Bool = false, _ client: DaemonClient
    ) async throws -> StoreInfo {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        return try await client.restoreStore(name, replace: replace, newIdentity: newIdentity) {
            let data = try handle.read(upToCount: 64 * 1024)
            return data?.isEmpty == false ? data : nil
        }
    }

    static func objects(_ entity: String, in store: String, _ client: DaemonClient) async throws -> [ObjectSnapshot] {
        guard case .objects(let objects, _) = try await client.fetch(FetchDescriptor(entityName: entity), in: store)
        else { throw ModelError(.invalidArgument, "not objects") }
        return objects
    }

    /// A value tasks share, behind a lock.
    final class Shared<T: Sendable>: Sendable {
        private let lock: Mutex<T>
        init(_ value: T) { lock = Mutex(value) }
        func withLock<R>(_ body: (inout T) throws -> R) rethrows -> R { try lock.withLock { try body(&$0) } }
        var value: T {
            get { lock.withLock { $0 } }
            set { lock.withLock { $0 = newValue } }
        }
    }

    /// Runs `sql` with the sqlite3 shell on a new database file.
    static func sqlite(_ path: String, _ sql: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [path, sql]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
