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

    /// The default merge policy (`.error`) refuses a save that would overwrite a change saved
    /// since the context read the object, however it read it: from saved data alone
    /// (`includePendingChanges = false`), or before its settings changed (a new unit of work).
    /// Both saved silently over the other context's change.
    @Test(arguments: Backend.everyKind)
    func aChangeSavedSinceTheReadIsNotOverwritten(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let writer = ModelContext(container)
            writer.insert(Item(name: "a", height: 1))
            writer.insert(Item(name: "b", height: 1))
            try await writer.save()
            func item(_ name: String, in context: ModelContext, saved: Bool = false) async throws -> Item {
                var descriptor = FetchDescriptor<Item>(predicate: #Predicate { $0.name == name })
                descriptor.includePendingChanges = !saved
                return try #require(try await context.fetch(descriptor).first)
            }
            let savedRead = ModelContext(container), renamed = ModelContext(container)
            let a = try await item("a", in: savedRead, saved: true)
            let b = try await item("b", in: renamed)
            renamed.author = "someone else" // a unit of work of its own from here
            // Another context changes both.
            let other = ModelContext(container)
            for name in ["a", "b"] { try await item(name, in: other).height = 2 }
            try await other.save()

            a.height = 3
            #expect(await modelError { try await savedRead.save() }?.code == .conflict)
            b.height = 3
            #expect(await modelError { try await renamed.save() }?.code == .conflict)
            let stored = try await ModelContext(container).fetch(
                FetchDescriptor<Item>(sortBy: [SortDescriptor(\.name)]))
            #expect(stored.map(\.height) == [2, 2])

            // Read again, the change saves; and again after that save, with nothing in between.
            let fresh = ModelContext(container)
            let again = try await item("a", in: fresh, saved: true)
            again.height = 4
            try await fresh.save()
            again.height = 5
            try await fresh.save()
            // A policy that resolves conflicts still does.
            savedRead.mergePolicy = .objectTrump
            try await savedRead.save()
            #expect(try await item("a", in: ModelContext(container)).height == 3)
        }
    }

    /// An object changed only as the other side of a relationship, then read through the
    /// context's unit of work (which shows it as the save would make it, a version on), and then
    /// changed itself: its save expects the stored version, and saves.
    @Test(arguments: Backend.everyKind)
    func anInverseChangeReadBackMakesNoConflict(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let writer = ModelContext(container)
            writer.insert(Item(name: "pen"))
            writer.insert(Note(name: "desk"))
            try await writer.save()
            let context = ModelContext(container)
            let pen = try #require(try await context.fetch(FetchDescriptor<Item>()).first)
            let desk = try #require(try await context.fetch(FetchDescriptor<Note>()).first)
            pen.note = desk
            _ = try await context.fetch(FetchDescriptor<Note>())
            desk.name = "drawer"
            try await context.save()
            let stored = try #require(try await ModelContext(container).fetch(FetchDescriptor<Note>()).first)
            #expect(stored.name == "drawer" && stored.items.map(\.name) == ["pen"])
            desk.name = "shelf"
            try await context.save()
            // Changed only as the other side of a relationship by a save, then changed itself.
            let lamp = Note(name: "lamp")
            context.insert(lamp)
            try await context.save()
            pen.note = lamp
            try await context.save()
            desk.name = "cupboard"
            lamp.name = "lantern"
            try await context.save()
        }
    }

    /// An object the context saved, then changed by another context while the first's unit of
    /// work was replaced (a new author): the first's next save of it conflicts, from the version
    /// its own save answered with.
    @Test(arguments: Backend.everyKind)
    func aChangeSavedSinceTheContextsOwnSaveIsNotOverwritten(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let context = ModelContext(container)
            let pen = Item(name: "pen", height: 1)
            context.insert(pen)
            try await context.save()
            pen.height = 2
            try await context.save()
            context.author = "another author"
            let other = ModelContext(container)
            try #require(try await other.fetch(FetchDescriptor<Item>()).first).height = 3
            try await other.save()
            pen.height = 4
            #expect(await modelError { try await context.save() }?.code == .conflict)
            #expect(try await ModelContext(container).fetch(FetchDescriptor<Item>()).map(\.height) == [3])
        }
    }
}
