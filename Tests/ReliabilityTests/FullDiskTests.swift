#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import ModelRemote
import ModelCore
import ModelServer
import ModelTesting
import Testing

/// A full disk: saves fail with RESOURCE_EXHAUSTED naming the cause, reads go on, nothing saved
/// is lost, and saves succeed again once there is room. On a real small filesystem (a 3 MiB tmpfs
/// mounted for the test, as root can) with the spawned modeld; where mounting is not allowed,
/// with a store size limit (--max-store-size), which fails saves the same way.
@Suite struct FullDiskTests {
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Note",
            attributes: [
                AttributeDescription(name: "title", type: .string), AttributeDescription(name: "body", type: .string),
            ])
    ])

    @Test func aFullDiskRefusesSavesKeepsReadsAndRecovers() async throws {
        let directory = try TemporaryDirectory.make(prefix: "fd")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        // MODELD_TEST_NO_MOUNT=1 tries the fallback where mounting would work.
        let mounted =
            ProcessInfo.processInfo.environment["MODELD_TEST_NO_MOUNT"] == nil
            && mount("tmpfs", data.path, "tmpfs", 0, "size=3m,mode=0700") == 0
        defer { if mounted { umount2(data.path, Int32(MNT_DETACH)) } }
        let ballast = data.appendingPathComponent("ballast")
        if mounted {
            // Room that the test frees later, as an operator would.
            try Data(repeating: 1, count: 1_000_000).write(to: ballast)
        }
        let daemon = try await ModeldProcess.launch(
            arguments: ["--default-store", ""] + (mounted ? [] : ["--max-store-size", "1M"]),
            directory: directory)
        do {
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                try await client.createStore("notes", schema: Self.schema)
                let body = String(repeating: "lorem ipsum ", count: 4_000)
                var saved: [PersistentIdentifier] = []
                var failure: ModelError?
                for index in 0..<400 {
                    do {
                        let outcome = try await client.apply(
                            [
                                .insert(
                                    entity: "Note", attributes: ["title": .string("n\(index)"), "body": .string(body)],
                                    relationships: [:], id: nil)
                            ], in: "notes")
                        saved += outcome.remappedIdentifiers.values
                    } catch let error as ModelError {
                        failure = error
                        break
                    }
                }
                #expect(failure?.code == .resourceExhausted, "\(String(describing: failure))")
                #expect(failure?.message.contains("is full") == true, "\(String(describing: failure))")
                #expect(saved.count > 10, "the store filled up only after \(saved.count) saves")

                // Reads go on, and everything saved is there.
                #expect(try await client.count(FetchDescriptor(entityName: "Note"), in: "notes") == saved.count)
                #expect(try await client.objects(saved, in: "notes").count == saved.count)
                #expect(try await client.history(after: nil, in: "notes").count == saved.count)
                // Another try while still full fails the same way, and changes nothing.
                await #expect(throws: ModelError.self) {
                    try await client.apply(
                        [
                            .insert(
                                entity: "Note", attributes: ["title": .string("again"), "body": .string(body)],
                                relationships: [:], id: nil)
                        ], in: "notes")
                }
                #expect(try await client.count(FetchDescriptor(entityName: "Note"), in: "notes") == saved.count)
            }
            // Make room: free the ballast (on tmpfs), or restart without the limit.
            if mounted {
                try FileManager.default.removeItem(at: ballast)
            } else {
                try await daemon.stop()
                try await daemon.relaunch(arguments: ["--default-store", ""])
            }
            try await DaemonClient.withClient(socketPath: daemon.socketPath) { client in
                let before = try await client.count(FetchDescriptor(entityName: "Note"), in: "notes")
                try await client.apply(
                    [
                        .insert(
                            entity: "Note", attributes: ["title": .string("after"), "body": .string("room again")],
                            relationships: [:], id: nil)
                    ],
                    in: "notes")
                #expect(try await client.count(FetchDescriptor(entityName: "Note"), in: "notes") == before + 1)
            }
            #expect(try await daemon.stop() == 0)
        } catch {
            Issue.record("\(error)\n\(daemon.log.suffix(3000))")
        }
        await daemon.remove()
    }
}
