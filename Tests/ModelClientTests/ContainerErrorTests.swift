import Foundation
import ModelClient
import ModelTesting
import Testing

/// What a developer gets wrong when opening a container, each an error saying what to change.
@Suite struct ContainerErrorTests {
    @Test(arguments: [
        ("http://example.com/store", "has a scheme modeld doesn't know"),
        ("unix:relative.sock?store=x", "has no absolute socket path"),
        ("unix:///tmp/modeld.sock?store=", "names an empty store"),
        ("sqlite:store.sqlite", "has no absolute file path"),
    ])
    func aStoreURLThatNamesNoStoreIsRefused(_ url: String, _ why: String) async {
        let error = await modelError { _ = try await ModelContainer(for: Maker.self, url: URL(string: url)!) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains(why) == true)
        #expect(
            error?.message.contains("unix:///path/to/modeld.sock?store=NAME, sqlite:///path/to/file.sqlite, or memory:")
                == true)
    }

    @Test func aDaemonThatIsNotRunningIsNamed() async throws {
        let directory = try TemporaryDirectory.make(prefix: "nodaemon")
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = directory.appendingPathComponent("modeld.sock").path
        let error = await modelError {
            _ = try await ModelContainer(for: Maker.self, url: URL(string: "unix://\(socket)?store=x")!)
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains(socket) == true)
        #expect(error?.message.contains("is modeld running?") == true)
    }

    @Test(arguments: [
        (WithLock.self as any PersistentModel.Type, ["'WithLock.lock'", "NSLock", "can't be stored"]),
        (WithDoubleOptional.self, ["'WithDoubleOptional.rating'", "optional of an optional"]),
        (WithValueRelationship.self, ["WithValueRelationship.address", "@Relationship", "not a model"]),
        (WithComputedUnique.self, ["#Unique<WithComputedUnique>", "not a persisted property"]),
        (UnmarkedSubclass.self, ["UnmarkedSubclass", "add @Model"]),
    ])
    func aModelTheStoreCannotHoldIsRefusedWhenTheContainerIsMade(_ type: any PersistentModel.Type, _ words: [String])
        async
    {
        let error = await modelError {
            _ = try await ModelContainer(
                for: [Maker.self, type], configuration: ModelConfiguration(isStoredInMemoryOnly: true))
        }
        #expect(error?.code == .invalidSchema)
        for word in words {
            #expect(error?.message.contains(word) == true, "\(error?.message ?? "no error") should mention \(word)")
        }
    }

    @Test(arguments: Backend.allCases)
    func aModelOutsideTheContainerIsNamed(_ backend: Backend) async throws {
        try await backend.withContainer(for: [Maker.self]) { container in
            let context = ModelContext(container)
            let error = await modelError { _ = try await context.fetch(FetchDescriptor<Item>()) }
            #expect(error?.code == .unknownEntity)
            #expect(error?.message.contains("Item is not a model of this container") == true)
            // The models its relationships lead to are in it without being listed.
            let parts = try await context.fetchCount(FetchDescriptor<Part>())
            #expect(parts == 0)
        }
    }

    @Test func aDaemonStoreHoldingOtherModelsIsNotTakenOver() async throws {
        try await withTestStore { store in
            let first = try await ModelContainer(for: [Maker.self], configuration: ModelConfiguration(url: store.url))
            let context = ModelContext(first)
            context.insert(Maker(name: "acme", country: "US"))
            try await context.save()
            await first.close()

            let error = await modelError {
                _ = try await ModelContainer(for: [Item.self], configuration: ModelConfiguration(url: store.url))
            }
            #expect(error != nil)
            #expect(error?.message.contains("Maker") == true, "\(error?.message ?? "")")
            // The store is as it was.
            let again = try await ModelContainer(for: [Maker.self], configuration: ModelConfiguration(url: store.url))
            #expect(try await ModelContext(again).fetch(FetchDescriptor<Maker>()).map(\.name) == ["acme"])
            await again.close()
        }
    }

    /// Containers that open a store the daemon does not have yet, all at once, all open the
    /// one store (those that lost the race to create it were refused "already exists").
    @Test func containersOpeningAMissingStoreAtOnceAllOpenIt() async throws {
        try await withTestStore { store in
            let name = store.name + "-new"
            var components = URLComponents(url: store.url, resolvingAgainstBaseURL: false)! // made by TestStore
            components.queryItems = [URLQueryItem(name: "store", value: name)]
            let url = try #require(components.url)
            let opened = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        let container = try await ModelContainer(
                            for: [Maker.self], configuration: ModelConfiguration(url: url))
                        let count = try await ModelContext(container).fetchCount(FetchDescriptor<Maker>())
                        await container.close()
                        return count
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(opened == Array(repeating: 0, count: 6))
            #expect(try await store.client.stores().filter { $0.name == name }.count == 1)
            _ = try await store.client.dropStore(name, force: true)
        }
    }
}
