import Dispatch
import ModelClient
import Synchronization
import Testing

/// A model actor's context is its own: every operation on it runs on the actor, so the actor's
/// other tasks (which insert and change objects between the operation's awaits) never touch
/// the context at the same time. An operation that ran its body on the global executor instead
/// lost objects inserted meanwhile (a save returned with one of eight inserts unsent, its
/// identifier still temporary).
@Suite struct ModelActorIsolationTests {
    /// The actor runs on a queue of its own; a value the context encodes while saving says
    /// whether it was encoded there. Eight saves at once, each waiting for the one before.
    @Test(arguments: Backend.everyKind)
    func aContextsOperationsRunOnTheActorThatOwnsIt(backend: Backend) async throws {
        try await backend.withContainer(for: [Probed.self]) { container in
            let handler = ProbeHandler(modelContainer: container)
            let mark = (Backend.everyKind.firstIndex(of: backend) ?? 0) + 1 // 0: the default value's
            let ids = try await withThrowingTaskGroup(of: PersistentIdentifier.self) { group in
                for index in 0..<8 {
                    group.addTask { try await handler.insert(named: "probe \(index)", mark: mark) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(ids.allSatisfy { !$0.isTemporary }, "\(ids)")
            #expect(try await handler.names() == (0..<8).map { "probe \($0)" })
            let encodings = Probe.encodings.withLock { $0[mark] ?? [] }
            #expect(encodings.count >= 8)
            #expect(encodings.allSatisfy { $0 }, "encoded off the actor: \(encodings.filter { !$0 }.count)")
            // The blocks a context runs for its caller run on the actor too.
            let places = try await handler.placesOfBlocks()
            #expect(places.count == 8 + 1 && places.allSatisfy { $0 }, "\(places)")
        }
    }
}

/// A serial executor on a dispatch queue of its own, which knows when code runs on it.
final class QueueExecutor: SerialExecutor {
    private static let key = DispatchSpecificKey<Bool>()
    private let queue = DispatchQueue(label: "model-actor-isolation")

    init() {
        queue.setSpecific(key: Self.key, value: true)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    /// Whether the calling code runs on the queue of a `QueueExecutor`.
    static var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }
}

/// A Codable value the context encodes (as JSON) when it sends the object it belongs to: it
/// notes, under its mark, whether it was encoded on a ``QueueExecutor``'s queue.
struct Probe: Codable, Sendable {
    /// For each mark, whether each encoding of a probe with it ran on a queue executor.
    static let encodings = Mutex<[Int: [Bool]]>([:])

    var mark: Int

    init(mark: Int) {
        self.mark = mark
    }

    func encode(to encoder: any Encoder) throws {
        let isCurrent = QueueExecutor.isCurrent
        Self.encodings.withLock { $0[mark, default: []].append(isCurrent) }
        var container = encoder.singleValueContainer()
        try container.encode(mark)
    }

    init(from decoder: any Decoder) throws {
        mark = try decoder.singleValueContainer().decode(Int.self)
    }
}

@Model
final class Probed {
    var name: String = ""
    var probe: Probe = Probe(mark: 0)

    init(name: String, probe: Probe) {
        self.name = name
        self.probe = probe
    }
}

/// A persistence service on a queue of its own, inserting and saving one object a call.
@ModelActor
actor ProbeHandler {
    nonisolated let executor = QueueExecutor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    func insert(named name: String, mark: Int) async throws -> PersistentIdentifier {
        let probed = Probed(name: name, probe: Probe(mark: mark))
        modelContext.insert(probed)
        try await modelContext.save()
        return probed.persistentModelID
    }

    /// For each object `enumerate` hands over, then for `transaction`'s block: whether it ran
    /// on this actor's queue.
    func placesOfBlocks() async throws -> [Bool] {
        var places: [Bool] = []
        try await modelContext.enumerate(FetchDescriptor<Probed>(), batchSize: 3) { _ in
            places.append(QueueExecutor.isCurrent)
        }
        try await modelContext.transaction {
            places.append(QueueExecutor.isCurrent)
        }
        return places
    }

    func names() async throws -> [String] {
        try await modelContext.fetch(FetchDescriptor<Probed>(sortBy: [SortDescriptor(\.name)])).map(\.name)
    }
}
