import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import ModelRemote
import ModelTesting
import StandardBackends
import Testing

/// Saves by another process on the store's file whose history is deleted before the daemon's
/// watches read it: the watches still hear of them (every one looks again), and a migration
/// among them still ends them as a migration does.
extension WatchRPCTests {
    /// A watch of how many Items the store holds, its first answer (none) read, and the store's
    /// file opened by another process (an embedded stack).
    func itemCountBesideAnotherProcess(_ store: TestStore) async throws -> (WatchFeed, ModelContainer) {
        let path = try #require(store.info.path)
        let feed = WatchFeed(store.client, .count(FetchDescriptor(entityName: "Item")), store: store.name)
        #expect(try await feed.next().result == .count(0))
        return (feed, try await ModelContainer.open(url: "sqlite://\(path)", registry: .standard))
    }

    @Test(.timeLimit(.minutes(1)))
    func savesOfAnotherProcessWhoseHistoryIsDeletedStillReachWatches() async throws {
        let (feed, embedded) = try await itemCountBesideAnotherProcess(try store)
        let context = embedded.makeContext(author: "embedded")
        _ = try await context.insert("Item", attributes: ["title": .string("from outside")])
        let token = try #require(try await context.save().token)
        try await embedded.deleteHistory(through: token)
        let update = try await feed.next()
        #expect(update.result == .count(1))
        #expect(update.token == token)
        await embedded.close()
    }

    @Test(.timeLimit(.minutes(1)))
    func aMigrationByAnotherProcessWhoseHistoryIsDeletedEndsWatches() async throws {
        let store = try store
        let path = try #require(store.info.path)
        // An object in the store, so that the other process migrates it (a store without
        // objects takes a new schema as its first, which history does not record).
        try await store.client.apply(
            [.insert(entity: "Item", attributes: ["title": .string("lamp")], relationships: [:], id: nil)],
            in: store.name)
        let items = FetchDescriptor(entityName: "Item", sortBy: [SortDescriptor("title")])
        let feed = WatchFeed(
            store.client, .fetch(items), store: store.name, storeIdentifier: store.info.storeIdentifier)
        #expect(try await feed.next().result == .objects(try await store.client.fetch(items, in: store.name).objects))
        var coloured = Catalog.schema
        let item = try #require(coloured.entities.firstIndex { $0.name == "Item" })
        coloured.entities[item].attributes.append(AttributeDescription(name: "colour", type: .string, isOptional: true))
        let embedded = try await ModelContainer.open(url: "sqlite://\(path)", schema: coloured, registry: .standard)
        let token = try #require(try await embedded.currentHistoryToken())
        try await embedded.deleteHistory(through: token)
        let ended = try await feed.end() as? ModelError
        #expect(ended?.code == .schemaMismatch, "\(String(describing: ended))")
        #expect(ended?.message.contains("schema changed") == true, "\(String(describing: ended))")
        await embedded.close()
    }

    /// A watched fetch is checked as Fetch checks it: a result type other than objects is
    /// refused (a watch reports objects), as a batch size out of range is.
    @Test func aWatchedFetchOfIdentifiersIsRefused() async throws {
        let store = try store
        let identifiers = FetchDescriptor(entityName: "Item", resultType: .identifiers)
        let refused = try await WatchFeed(store.client, .fetch(identifiers), store: store.name).end() as? ModelError
        #expect(refused?.code == .invalidArgument)
        #expect(refused?.message.contains("a watched fetch reports objects") == true, "\(String(describing: refused))")
    }
}
