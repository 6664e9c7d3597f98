import Foundation
import Synchronization
import ModelClient
import ModelClientTesting
import ModelTesting
import Testing

/// ModelClientTesting's trait: each test gets a container of its own, on a store no other test
/// sees, gone after the test.
@Suite(
    .modelContainer(
        for: Trip.self, PersonalTrip.self, BusinessTrip.self, BucketListItem.self, LivingAccommodation.self))
struct TestContainerTraitTests {
    /// Stores the tests of this suite were given (they run in parallel).
    static let seen = StoreLedger()

    @Test(arguments: 0..<4)
    func eachTestHasAnEmptyStoreOfItsOwn(_ n: Int) async throws {
        let container = try #require(TestContainer.current)
        let context = ModelContext(container)
        #expect(try await context.fetchCount(FetchDescriptor<Trip>()) == 0)
        context.insert(
            Trip(name: "trip \(n)", destination: "X", startDate: day("2026-01-01"), endDate: day("2026-01-02")))
        try await context.save()
        #expect(try await context.fetchCount(FetchDescriptor<Trip>()) == 1)
        #expect(Self.seen.add(container.storeIdentifier), "two tests were given the same store")
    }

    /// `withTestContainer` drops a daemon store afterwards, failing or not.
    @Test func aDaemonStoreIsDroppedAfterItsTest() async throws {
        struct Failed: Error {}
        var name: String?
        await #expect(throws: Failed.self) {
            try await withTestContainer(for: sampleTripsModels) { container in
                name = try await TestDaemon.shared.withClient { client in
                    try await client.stores().first { $0.storeIdentifier == container.storeIdentifier }?.name
                }
                throw Failed()
            }
        }
        let dropped = try #require(name)
        let names = try await TestDaemon.shared.withClient { try await $0.stores().map(\.name) }
        #expect(!names.contains(dropped))
    }
}

/// Store identifiers handed out, shared by parallel tests.
final class StoreLedger: Sendable {
    private let ids = Mutex(Set<UUID>())
    /// Whether `id` was new.
    func add(_ id: UUID) -> Bool { ids.withLock { $0.insert(id).inserted } }
}
