import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// `QueryService.DeleteHistory`: the oldest transactions go, up to a token; a bad token is
/// refused with INVALID_ARGUMENT and deletes nothing.
@Suite(.isolatedStore(schema: Catalog.schema))
struct DeleteHistoryTests {
    var store: TestStore {
        get throws { try #require(TestStore.current) }
    }

    @Test func theOldestTransactionsGoUpToAToken() async throws {
        let store = try store
        for name in ["a", "b", "c", "d"] {
            try await store.client.apply(
                [.insert(entity: "Library", attributes: ["name": .string(name)], relationships: [:], id: nil)],
                in: store.name)
        }
        #expect(try await store.client.deleteHistory(through: HistoryToken(2), in: store.name) == HistoryToken(2))
        #expect(try await store.client.history(after: nil, in: store.name).map(\.token.rawValue) == [3, 4])
        // Through a token already deleted: nothing more goes, and the answer says none did.
        #expect(try await store.client.deleteHistory(through: HistoryToken(2), in: store.name) == nil)
        #expect(try await store.client.deleteHistory(through: HistoryToken(1), in: store.name) == nil)
        #expect(try await store.client.history(after: nil, in: store.name).map(\.token.rawValue) == [3, 4])
        // The objects are untouched; new saves go on after the latest token.
        #expect(try await store.client.count(FetchDescriptor(entityName: "Library"), in: store.name) == 4)

        for bad in [Int64(0), -1, 5, 1_000] {
            await expectError(.invalidArgument) {
                try await store.client.deleteHistory(through: HistoryToken(bad), in: store.name)
            }
        }
        #expect(try await store.client.history(after: nil, in: store.name).map(\.token.rawValue) == [3, 4])
        await expectError(.notFound) {
            try await store.client.deleteHistory(through: HistoryToken(1), in: "no-such-store")
        }

        // After a deleted token: an error that says so (FAILED_PRECONDITION), not a gap.
        await expectError(.historyTokenExpired) {
            _ = try await store.client.history(after: HistoryToken(1), in: store.name)
        }
        #expect(try await store.client.history(after: HistoryToken(2), in: store.name).map(\.token.rawValue) == [3, 4])
        // A follower caught up goes on hearing saves after history before it is deleted.
        let heard = AsyncStream<Int64>.makeStream()
        let follower = Task {
            try await store.client.followHistory(after: HistoryToken(4), in: store.name) { transaction in
                heard.continuation.yield(transaction.token.rawValue)
            }
        }
        defer { follower.cancel() }
        #expect(try await store.client.deleteHistory(savedBefore: Date(), in: store.name) == HistoryToken(4))
        try await store.client.apply(
            [.insert(entity: "Library", attributes: ["name": .string("e")], relationships: [:], id: nil)],
            in: store.name)
        var tokens = heard.stream.makeAsyncIterator()
        #expect(await tokens.next() == 5)
        #expect(try await store.client.history(after: nil, in: store.name).map(\.token.rawValue) == [5])
        await expectError(.historyTokenExpired) {
            _ = try await store.client.history(after: HistoryToken(3), in: store.name)
        }
        #expect(
            try await store.client.deleteHistory(savedBefore: Date(timeIntervalSince1970: 946_684_800), in: store.name)
                == nil)

        // After a token past the latest (one kept from before the store was restored from an
        // older backup, say): refused, for a read and a follower, rather than skip what comes up
        // to it. The latest token itself reads as caught up.
        let past = await expectError(.historyTokenExpired) {
            _ = try await store.client.history(after: HistoryToken(9), in: store.name)
        }
        #expect(past?.message.contains("past the store's latest (5)") == true, "\(String(describing: past))")
        await expectError(.historyTokenExpired) {
            try await store.client.followHistory(after: HistoryToken(9), in: store.name) { _ in }
        }
        #expect(try await store.client.history(after: HistoryToken(5), in: store.name).isEmpty)
    }
}
