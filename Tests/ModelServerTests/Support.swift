import Foundation
import ModelRemote
import ModelCore
import ModelTesting
import Synchronization
import Testing

// Foundation has types of these names too; in these tests they mean ModelCore's.
typealias Predicate = ModelCore.Predicate
typealias SortDescriptor = ModelCore.SortDescriptor

/// The `ModelError` a call throws (the daemon's, rebuilt by the client), or a recorded issue.
@discardableResult
func expectError(
    _ code: ModelError.Code, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> ModelError? {
    do {
        try await body()
        Issue.record("expected a \(code) error, but the call succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as ModelError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected a ModelError \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Predicate text, parsed; a bad text is a broken test.
func where_(_ text: String) -> Predicate {
    do { return try PredicateParser.parse(text) } catch { preconditionFailure("bad predicate in test: \(error)") }
}

/// A SampleTrips trip's attributes.
func trip(_ name: String, _ start: String, _ end: String, destination: String? = nil) -> [String: Value] {
    [
        "name": .string(name), "destination": .string(destination ?? name), "startDate": .string(start),
        "endDate": .string(end),
    ]
}

extension TestStore {
    /// Inserts objects in one save through a session of its own; returns their permanent identifiers.
    func insert(_ entity: String, _ objects: [[String: Value]], author: String? = nil) async throws
        -> [PersistentIdentifier]
    {
        let session = try await openSession(author: author)
        let temporary = try await session.stage(
            objects.map { .insert(entity: entity, attributes: $0, relationships: [:], id: nil) })
        let saved = try await session.save()
        try await session.close()
        return temporary.map { saved.remappedIdentifiers[$0] ?? $0 }
    }

    /// The values of `key` of the objects a fetch returns, as text.
    func values(_ entity: String, _ predicate: String? = nil, key: String, sort: [String] = []) async throws -> [String]
    {
        let descriptor = FetchDescriptor(
            entityName: entity, predicate: predicate.map(where_),
            sortBy: try sort.map { try SortDescriptor(parsing: $0) })
        return try await client.fetch(descriptor, in: name).objects.map { $0[key].textForm ?? "nil" }
    }
}
