import Foundation
import ModelClient
import Testing

/// What one context does with another context's objects.
@Suite struct ContextBoundaryTests {
    /// Deleting an object another context fetched deletes the stored object it stands for (it was
    /// ignored: nothing marked, the save a success, the object still stored).
    @Test(arguments: Backend.everyKind)
    func deletingAnotherContextsObjectDeletesItsStoredObject(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let writer = ModelContext(container)
            writer.insert(Item(name: "kept"))
            writer.insert(Item(name: "gone"))
            try await writer.save()
            let reader = ModelContext(container)
            let gone = try #require(
                try await reader.fetch(FetchDescriptor<Item>(predicate: #Predicate { $0.name == "gone" })).first)
            writer.delete(gone)
            #expect(writer.hasChanges && writer.deletedModelsArray.count == 1)
            try await writer.save()
            let names = try await ModelContext(container).fetch(FetchDescriptor<Item>()).map(\.name)
            #expect(names == ["kept"])
        }
    }

    /// A context used after its container is closed says so, on every kind of store (the
    /// daemon's said it could not reach modeld: "is modeld running?").
    @Test(arguments: Backend.everyKind)
    func aContextOfAClosedContainerSaysItIsClosed(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let context = ModelContext(container)
            context.insert(Item(name: "a"))
            try await context.save()
            await container.close()
            let error = await modelError { _ = try await context.fetch(FetchDescriptor<Item>()) }
            #expect(error?.code == .closed, "\(String(describing: error))")
        }
    }
}
