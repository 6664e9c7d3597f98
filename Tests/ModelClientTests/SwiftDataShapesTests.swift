import Foundation
import ModelClient
import Testing

/// SwiftData's own spellings compile and work here: `ModelContainer(for:configurations:)` with
/// `ModelConfiguration(isStoredInMemoryOnly: true)` (each such container a store of its own).
@Suite struct SwiftDataShapesTests {
    @Test func inMemoryContainersAreStoresOfTheirOwn() async throws {
        let first = try await ModelContainer(
            for: Maker.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let second = try await ModelContainer(
            for: Maker.self, configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(first)
        context.insert(Maker(name: "acme", country: "US"))
        try await context.save()
        #expect(try await ModelContext(first).fetchCount(FetchDescriptor<Maker>()) == 1)
        #expect(try await ModelContext(second).fetchCount(FetchDescriptor<Maker>()) == 0)
        #expect(first.storeIdentifier != second.storeIdentifier)
        await first.close()
        await second.close()
    }

    @Test func oneConfigurationAtMost() async throws {
        let error = await modelError {
            _ = try await ModelContainer(
                for: Maker.self,
                configurations: ModelConfiguration(isStoredInMemoryOnly: true),
                ModelConfiguration(isStoredInMemoryOnly: true))
        }
        #expect(error?.code == .invalidArgument && error?.message.contains("one configuration") == true)
    }
}
