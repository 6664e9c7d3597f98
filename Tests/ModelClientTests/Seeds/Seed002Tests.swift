import Foundation
import ModelClient
import Testing

// Seed 002 (an app's move to SwiftData): its model, with an `id` of its own, and its
// persistence service as an actor, written as the article writes them with `await` added.

@Model
final class StatusEntity {
    var id: String
    var content: String
    var createdAt: Date
    init(id: String, content: String, createdAt: Date) {
        self.id = id
        self.content = content
        self.createdAt = createdAt
    }
}

// PersistenceService usage
actor StatusPersistenceService {
    private let modelContext: ModelContext

    init(modelContainer: ModelContainer) {
        modelContext = ModelContext(modelContainer)
    }

    func fetchStatuses() async throws -> [StatusEntity] {
        let descriptor = FetchDescriptor<StatusEntity>(
            sortBy: [SortDescriptor(\.createdAt, order: .reverse)]
        )
        return try await modelContext.fetch(descriptor)
    }

    func store(id: String, content: String, createdAt: Date) async throws {
        modelContext.insert(StatusEntity(id: id, content: content, createdAt: createdAt))
        try await modelContext.save()
    }

    func status(id: String) async throws -> String? {
        try await modelContext.fetch(FetchDescriptor<StatusEntity>(predicate: #Predicate { $0.id == id })).first?
            .content
    }

    func contents() async throws -> [String] { try await fetchStatuses().map(\.content) }
}

@Suite struct Seed002Tests {
    @Test(arguments: Backend.allCases)
    func theActorServiceFetchesNewestFirstAndFindsByItsOwnID(backend: Backend) async throws {
        try await backend.withContainer(for: [StatusEntity.self]) { container in
            let service = StatusPersistenceService(modelContainer: container)
            for (n, id) in ["b", "c", "a"].enumerated() {
                try await service.store(
                    id: id, content: "status \(id)", createdAt: Date(timeIntervalSince1970: Double(n) * 60))
            }
            #expect(try await service.contents() == ["status a", "status c", "status b"])
            // `id` is the model's own attribute, not its persistent identifier.
            #expect(try await service.status(id: "c") == "status c")
            #expect(try await service.status(id: "z") == nil)
        }
    }
}
