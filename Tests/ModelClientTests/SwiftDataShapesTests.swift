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

/// A model with an `id` of its own: `id` is that attribute, not the identity.
@Model final class Badge {
    var id: String
    var label: String

    init(id: String, label: String) {
        self.id = id
        self.label = label
    }
}

@Suite struct IdentifiableModelTests {
    @Test func idIsTheIdentityUnlessTheClassDeclaresOne() async throws {
        let container = try await ModelContainer(
            for: Gadget.self, SpecialGadget.self, Badge.self,
            configurations: ModelConfiguration(isStoredInMemoryOnly: true))
        let context = ModelContext(container)
        let special = SpecialGadget(name: "lathe", price: 900, count: 1, level: 3)
        context.insert(special)
        context.insert(SpecialGadget(name: "drill", price: 90, count: 2, level: 1))
        context.insert(Badge(id: "b-1", label: "first"))
        context.insert(Badge(id: "b-2", label: "second"))
        try await context.save()
        // A subclass's `id` is its identity too.
        let id = special.persistentModelID
        #expect(special.id == id)
        let found = try await context.fetch(FetchDescriptor<SpecialGadget>(predicate: #Predicate { $0.id == id }))
        #expect(found.map(\.name) == ["lathe"])
        // Badge's own `id` is an attribute, compared as one.
        let badges = try await context.fetch(FetchDescriptor<Badge>(predicate: #Predicate { $0.id == "b-2" }))
        #expect(badges.map(\.label) == ["second"])
        await container.close()
    }
}
