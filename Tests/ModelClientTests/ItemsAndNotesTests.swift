import Foundation
import ModelClient
import Testing

/// The Item / Note model of "Reinventing Core Data Development with SwiftData Principles", on
/// both backends with the same test bodies.
@Suite struct ItemsAndNotesTests {
    @Test(arguments: Backend.allCases)
    func optionalsDefaultsEnumsAndCodableValuesRoundTrip(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let context = ModelContext(container)
            let options = [ItemOption(name: "colour", weight: 0.5), ItemOption(name: "size", weight: 2)]
            let full = Item(name: "fat", height: 1.82, valueDisplayMode: .average, options: options)
            full.createdAt = Date(timeIntervalSince1970: 1_700_000_000.123456)
            let bare = Item(name: "lean")
            context.insert(full)
            context.insert(bare)
            try await context.save()

            let items = try await ModelContext(container).fetch(FetchDescriptor<Item>(sortBy: [SortDescriptor(\.name)]))
            #expect(items.map(\.name) == ["fat", "lean"])
            #expect(items[0].height == 1.82 && items[1].height == nil)
            #expect(items[0].valueDisplayMode == .average && items[1].valueDisplayMode == .sum)
            #expect(items[0].options == options && items[1].options == nil)
            #expect(items[0].createdAt == Date(timeIntervalSince1970: 1_700_000_000.123456))

            // The enum is stored as its raw value, the options as JSON text.
            let average = DataDisplayMode.average
            let byRawValue = try await ModelContext(container).fetch(
                FetchDescriptor<Item>(predicate: #Predicate { $0.valueDisplayMode == average }))
            #expect(byRawValue.map(\.name) == ["fat"])
            var raw = FetchDescriptor<Item>()
            raw.storePredicate = try StorePredicate("valueDisplayMode == %@ AND options != nil", 2)
            #expect(try await ModelContext(container).fetch(raw).map(\.name) == ["fat"])
        }
    }

    @Test(arguments: Backend.allCases)
    func relationshipsAsSetsAfterInsertion(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let context = ModelContext(container)
            // As the article advises: insert first, then relate.
            let note = Note(name: "note1")
            context.insert(note)
            let item = Item(name: "fat")
            context.insert(item)
            item.note = note
            item.datas = [
                ItemData(value: 1, timestamp: day("2026-01-01")), ItemData(value: 2, timestamp: day("2026-01-02")),
            ]
            #expect(note.items.map(\.name) == ["fat"])
            try await context.save()

            let reader = ModelContext(container)
            let fetched = try #require(try await reader.fetch(FetchDescriptor<Item>()).first)
            #expect(fetched.note?.name == "note1")
            #expect(Set(fetched.datas?.map(\.value) ?? []) == [1, 2])
            #expect(fetched.datas?.allSatisfy { $0.item === fetched } == true)

            // Cascade: deleting the item deletes its data; nullify: the note stays, without it.
            reader.delete(fetched)
            try await reader.save()
            #expect(try await reader.fetchCount(FetchDescriptor<ItemData>()) == 0)
            let notes = try await ModelContext(container).fetch(FetchDescriptor<Note>())
            #expect(notes.map(\.name) == ["note1"] && notes[0].items.isEmpty)
        }
    }

    @Test(arguments: Backend.allCases)
    func savesSendOnlyTheChangedProperties(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let context = ModelContext(container)
            let item = Item(name: "fat", height: 1)
            context.insert(item)
            try await context.save()
            let token = try await container.currentHistoryToken()
            item.height = 2
            #expect(item.hasChanges && item.changedPropertyNames == ["height"])
            try await context.save()
            #expect(!item.hasChanges)
            let history = try await context.fetchHistory(after: token)
            #expect(history.count == 1)
            guard case .update(let update as DefaultHistoryUpdate<Item>)? = history.first?.changes.first else {
                Issue.record("expected one update of an Item, got \(history)")
                return
            }
            #expect(update.updatedPropertyNames == ["height"])
            #expect(update.updatedAttributes == [\Item.height])
            // Nothing changed: nothing saved.
            try await context.save()
            #expect(try await context.fetchHistory(after: token).count == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func modelsAreObservable(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let context = ModelContext(container)
            let item = Item(name: "fat")
            context.insert(item)
            try await context.save()
            let changed = Counter()
            withObservationTracking {
                _ = item.name
            } onChange: {
                changed.increment()
            }
            item.name = "lean"
            #expect(changed.value == 1)
            try await context.save()

            // A fetch that brings a new value tells observers too.
            let other = ModelContext(container)
            let copy = try #require(try await other.fetch(FetchDescriptor<Item>()).first)
            copy.height = 3
            try await other.save()
            let refreshed = Counter()
            withObservationTracking {
                _ = copy.height
            } onChange: {
                refreshed.increment()
            }
            let sameContext = try await other.fetch(FetchDescriptor<Item>())
            #expect(sameContext.first === copy && refreshed.value == 0)
            let heightSeen = Counter()
            withObservationTracking {
                _ = item.height
            } onChange: {
                heightSeen.increment()
            }
            _ = try await context.fetch(FetchDescriptor<Item>())
            #expect(heightSeen.value == 1 && item.height == 3)
        }
    }

    @Test(arguments: Backend.allCases)
    func aStaleSaveConflictsUnlessTheMergePolicySaysOtherwise(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let first = ModelContext(container), second = ModelContext(container)
            let item = Item(name: "fat", height: 1)
            first.insert(item)
            try await first.save()
            let copy = try #require(try await second.model(for: item.persistentModelID, as: Item.self))
            copy.height = 2
            try await second.save()

            item.name = "lean"
            let error = await modelError { try await first.save() }
            #expect(
                error?.code == .conflict && error?.message.contains(item.persistentModelID.uriRepresentation) == true)
            #expect(first.hasChanges)
            first.mergePolicy = .objectTrump
            try await first.save()
            let saved = try #require(
                try await ModelContext(container).model(for: item.persistentModelID, as: Item.self))
            #expect(saved.name == "lean" && saved.height == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func aModelActorPassesIdentifiers(backend: Backend) async throws {
        try await backend.withContainer(for: itemModels) { container in
            let handler = DataHandler(modelContainer: container)
            let id = try await handler.createItem(named: "fat", height: 1.5)
            #expect(!id.isTemporary)
            try await handler.rename(id, to: "lean")
            // The handler's own context, from inside it.
            #expect(try await handler.names() == ["lean"])
            // Another context elsewhere sees what it saved.
            let item = try await ModelContext(container).model(for: id, as: Item.self)
            #expect(item?.name == "lean" && item?.height == 1.5)
            // Operations on one actor run one at a time, even while they wait for the store.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<8 {
                    group.addTask { _ = try await handler.createItem(named: "item \(index)", height: Double(index)) }
                }
                try await group.waitForAll()
            }
            let names = try await handler.names()
            #expect(names.count == 9, "\(names)")
            // Inserts only the context holds, saved at once: each save that finishes while the
            // next are waiting keeps their objects (they were freed, and their saves reported
            // success without them).
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<8 { group.addTask { try await handler.createUnheldItem(named: "unheld \(index)") } }
                try await group.waitForAll()
            }
            let all = try await ModelContext(container).fetch(FetchDescriptor<Item>()).map(\.name)
            #expect(all.filter { $0.hasPrefix("unheld") }.sorted() == (0..<8).map { "unheld \($0)" }, "\(all)")
            #expect(try await !handler.hasChanges())
        }
    }
}

/// A persistence service as the article writes one: an actor that owns a context, taking and
/// returning identifiers only.
@ModelActor
actor DataHandler {
    func createItem(named name: String, height: Double?) async throws -> PersistentIdentifier {
        let item = Item(name: name, height: height)
        modelContext.insert(item)
        try await modelContext.save()
        return item.persistentModelID
    }

    /// Inserts an item and saves, keeping no reference to it: until its save, only the context
    /// holds it.
    func createUnheldItem(named name: String) async throws {
        modelContext.insert(Item(name: name, height: nil))
        try await modelContext.save()
    }

    func hasChanges() -> Bool { modelContext.hasChanges }

    func rename(_ id: PersistentIdentifier, to name: String) async throws {
        guard let item = try await model(for: id, as: Item.self) else { throw ModelError(.notFound, "no item \(id)") }
        item.name = name
        try await modelContext.save()
    }

    func names() async throws -> [String] {
        try await modelContext.fetch(FetchDescriptor<Item>(sortBy: [SortDescriptor(\.name)])).map(\.name)
    }
}

/// A counter observers can bump from any thread.
final class Counter: @unchecked Sendable { // `count` is guarded by `lock`.
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}
