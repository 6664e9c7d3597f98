import Foundation
import ModelClient
import ModelTesting
import Testing

/// SwiftData's versioned schemas and migration plans, over the daemon and embedded: a store
/// written by V1 opens with V2 by inference, and with V3 through the plan's custom stage; a
/// plan takes a V1 store to V3 in one unit; a stage that fails leaves the store as it was.
@Suite struct MigrationPlanTests {
    /// Runs `body` with the URL of a new, empty store of `backend`.
    static func withStoreURL(_ backend: Backend, _ body: (URL) async throws -> Void) async throws {
        switch backend {
        case .daemon:
            try await withTestStore { store in try await body(store.url) }
        case .embedded:
            let directory = try TemporaryDirectory.make(prefix: "modelclient")
            defer { try? FileManager.default.removeItem(at: directory) }
            try await body(URL(string: "sqlite://" + directory.appendingPathComponent("trips.sqlite").path)!)
        case .memory:
            // A memory store is gone when its container closes: there is nothing to migrate.
            Issue.record("migration tests need a store that outlives its container (Backend.shared)")
        }
    }

    /// Opens a container, runs `body` with a context, and closes it.
    static func with(
        _ types: [any PersistentModel.Type], plan: (any SchemaMigrationPlan.Type)? = nil, at url: URL,
        _ body: (ModelContext) async throws -> Void = { _ in }
    ) async throws {
        let container = try await ModelContainer(
            for: types, migrationPlan: plan, configurations: [ModelConfiguration(url: url)])
        do {
            try await body(ModelContext(container))
        } catch {
            await container.close()
            throw error
        }
        await container.close()
    }

    /// Kyoto (with two bucket-list items) and Paris, written by V1.
    static func writeV1(at url: URL) async throws {
        try await with(TripsV1.models, at: url) { context in
            let kyoto = TripsV1.Trip(name: "Kyoto", destination: "Japan", startDate: day("2026-04-01"))
            context.insert(kyoto)
            kyoto.bucketList = [TripsV1.BucketListItem(title: "Temple"), TripsV1.BucketListItem(title: "Garden")]
            context.insert(TripsV1.Trip(name: "Paris", destination: "France", startDate: day("2026-03-01")))
            try await context.save()
        }
    }

    /// What V3 sees: each trip as "name place budget label items".
    static func readV3(at url: URL) async throws -> [String] {
        var found: [String] = []
        try await with(TripsV3.models, plan: TripsPlan.self, at: url) { context in
            let trips = try await context.fetch(FetchDescriptor<TripsV3.Trip>(sortBy: [SortDescriptor(\.name)]))
            found = trips.map { "\($0.name) \($0.place) \($0.budget) \($0.label) \($0.bucketList.count)" }
        }
        return found
    }

    @Test(arguments: Backend.shared)
    func threeVersionsOneAtATime(_ backend: Backend) async throws {
        try await Self.withStoreURL(backend) { url in
            try await Self.writeV1(at: url)
            // V2 adds an optional attribute: inferred, no plan needed.
            try await Self.with(TripsV2.models, at: url) { context in
                let trips = try await context.fetch(FetchDescriptor<TripsV2.Trip>(sortBy: [SortDescriptor(\.name)]))
                #expect(trips.map(\.budget) == [nil, nil])
                trips[0].budget = 900
                try await context.save()
            }
            // V3 without the plan: budget becomes required with Paris holding none — refused,
            // saying how many objects, and the store stays at V2.
            let refused = await modelError { try await Self.with(TripsV3.models, at: url) }
            #expect(refused?.code == .schemaMismatch, "\(String(describing: refused))")
            #expect(refused?.message.contains("budget") == true, "\(String(describing: refused))")
            try await Self.with(TripsV2.models, at: url) { context in
                let count = try await context.fetchCount(FetchDescriptor<TripsV2.Trip>())
                #expect(count == 2)
            }
            // With the plan: willMigrate gives Paris a budget, the step renames destination to
            // place, didMigrate writes the labels from the old values.
            #expect(
                try await Self.readV3(at: url) == [
                    "Kyoto Japan 900.0 Kyoto in Japan 2", "Paris France 0.0 Paris in France 0",
                ])
        }
    }

    @Test(arguments: Backend.shared)
    func aPlanTakesTheOldestVersionToTheNewestInOneUnit(_ backend: Backend) async throws {
        try await Self.withStoreURL(backend) { url in
            try await Self.writeV1(at: url)
            #expect(
                try await Self.readV3(at: url) == [
                    "Kyoto Japan 0.0 Kyoto in Japan 2", "Paris France 0.0 Paris in France 0",
                ])
            // Opened again, nothing migrates: the store is at V3.
            #expect(
                try await Self.readV3(at: url) == [
                    "Kyoto Japan 0.0 Kyoto in Japan 2", "Paris France 0.0 Paris in France 0",
                ])
        }
    }

    @Test(arguments: Backend.shared)
    func aFailingStageLeavesTheStoreAsItWas(_ backend: Backend) async throws {
        try await Self.withStoreURL(backend) { url in
            try await Self.writeV1(at: url)
            await #expect(throws: FailingTripsPlan.Refused.self) {
                try await Self.with(TripsV3.models, plan: FailingTripsPlan.self, at: url)
            }
            // Still V1, every value as it was (the lightweight first stage was undone too).
            try await Self.with(TripsV1.models, at: url) { context in
                let trips = try await context.fetch(FetchDescriptor<TripsV1.Trip>(sortBy: [SortDescriptor(\.name)]))
                #expect(trips.map(\.destination) == ["Japan", "France"])
                #expect(trips.map(\.bucketList.count) == [2, 0])
            }
            // And the real plan still works afterwards.
            #expect(
                try await Self.readV3(at: url) == [
                    "Kyoto Japan 0.0 Kyoto in Japan 2", "Paris France 0.0 Paris in France 0",
                ])
        }
    }
}
