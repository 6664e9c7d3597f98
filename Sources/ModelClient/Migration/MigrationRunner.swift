import ModelCore

/// Runs a ``SchemaMigrationPlan`` on a store: works out the stages from the store's version to
/// the container's models, and carries them out in one staged migration (a driver's: the
/// daemon's migration session, or a backend in-process), rolled back on any error.
enum MigrationRunner {
    /// One stage, with the models of the versions it goes between.
    struct Leg {
        let stage: MigrationStage
        let from: ModelTypes
        let to: ModelTypes
    }

    /// The stages from the store's schema version `storeVersion` towards `target`, in order;
    /// nil when the store's version is none of the plan's, or no stage leaves it (the container
    /// then migrates by inference, as without a plan).
    static func route(_ plan: any SchemaMigrationPlan.Type, from storeVersion: String, to target: ModelTypes) throws
        -> [Leg]?
    {
        var models: [ObjectIdentifier: ModelTypes] = [:]
        func types(_ version: any VersionedSchema.Type) throws -> ModelTypes {
            if let known = models[ObjectIdentifier(version)] { return known }
            let made = try ModelTypes(version.models)
            models[ObjectIdentifier(version)] = made
            return made
        }
        guard var current = try plan.schemas.first(where: { try types($0).resolved.versionHash == storeVersion }) else {
            return nil
        }
        var legs: [Leg] = []
        // Each stage at most once: a plan whose stages go round in a circle ends.
        var stages = plan.stages
        while try types(current).resolved.versionHash != target.resolved.versionHash,
            let next = stages.firstIndex(where: { ObjectIdentifier($0.fromVersion) == ObjectIdentifier(current) })
        {
            let stage = stages.remove(at: next)
            legs.append(Leg(stage: stage, from: try types(stage.fromVersion), to: try types(stage.toVersion)))
            current = stage.toVersion
        }
        return legs.isEmpty ? nil : legs
    }

    /// Runs `legs` through `driver`, then a last inferred step to `target` if the last stage
    /// did not reach it, and commits; any error rolls everything back.
    static func run(
        _ legs: [Leg], to target: ModelTypes, configuration: ModelConfiguration, driver: any MigrationDriver
    )
        async throws
    {
        do {
            for leg in legs {
                if case .custom(_, _, let willMigrate?, _) = leg.stage {
                    try await run(willMigrate, models: leg.from, configuration: configuration, driver: driver)
                }
                try await driver.step(to: leg.to.schema, allowDataLoss: true)
                if case .custom(_, _, _, let didMigrate?) = leg.stage {
                    try await run(didMigrate, models: leg.to, configuration: configuration, driver: driver)
                }
            }
            if legs.last?.to.resolved.versionHash != target.resolved.versionHash {
                try await driver.step(to: target.schema, allowDataLoss: false)
            }
            try await driver.commit()
        } catch {
            await driver.rollback()
            throw error
        }
    }

    /// Runs a stage's closure with a context of `models` inside the migration; saves what it
    /// left unsaved.
    private static func run(
        _ body: @Sendable (ModelContext) async throws -> Void, models: ModelTypes, configuration: ModelConfiguration,
        driver: any MigrationDriver
    ) async throws {
        let store = StageStore(
            connection: try await driver.contextConnection(), storeIdentifier: driver.storeIdentifier)
        let context = ModelContext(ModelContainer(types: models, configuration: configuration, store: store))
        try await body(context)
        if context.hasChanges { try await context.save() }
    }
}

/// Where a staged migration runs.
protocol MigrationDriver: Sendable {
    var storeIdentifier: UUID { get }
    /// The unit of work of the current stage.
    func contextConnection() async throws -> any ContextConnection
    /// Migrates by inference to `schema`, inside the migration.
    func step(to schema: ModelCore.Schema, allowDataLoss: Bool) async throws
    func commit() async throws
    func rollback() async
}

/// The store a stage's context sees: the migration's unit of work, never closed by a context
/// (closing the daemon's migration session would roll the migration back).
final class StageStore: StoreConnection {
    let connection: any ContextConnection
    let storeIdentifier: UUID

    init(connection: any ContextConnection, storeIdentifier: UUID) {
        self.connection = connection
        self.storeIdentifier = storeIdentifier
    }

    /// The migration's one unit of work, whatever the stage's context asks (it was opened with
    /// the migration's author and policies).
    func openContext(_ settings: ContextSettings) async throws -> any ContextConnection {
        StageConnection(inner: connection)
    }

    func deleteHistory(through token: HistoryToken) async throws {
        throw ModelError(.invalidArgument, "history cannot be deleted inside a migration stage")
    }

    func followHistory(
        after token: HistoryToken?, author: String?,
        _ body: @Sendable @escaping (HistoryTransaction) async throws -> Void
    ) async throws {
        throw ModelError(.invalidArgument, "history cannot be followed inside a migration stage")
    }

    func batchUpdate(
        _ entity: String, where predicate: ModelCore.Predicate?, set attributes: [String: Value], author: String?
    ) async throws -> Int {
        throw ModelError(
            .invalidArgument,
            "a batch update cannot run inside a migration stage, which saves once at its end: change the objects through the stage's context"
        )
    }

    func fetchSaved(_ descriptor: ModelCore.FetchDescriptor) async throws -> FetchResult {
        try await connection.fetch(descriptor)
    }

    func aggregateSaved(_ descriptor: ModelCore.AggregateDescriptor) async throws -> [AggregateRow] {
        try await connection.aggregate(descriptor)
    }

    func history(after token: HistoryToken?, author: String?, limit: Int?) async throws -> [HistoryTransaction] {
        throw ModelError(
            .invalidArgument, "history is not read inside a migration stage; read it once the container is open")
    }

    func currentHistoryToken() async throws -> HistoryToken? { nil }

    func watch(_ query: WatchedQuery, _ body: @Sendable @escaping (WatchUpdate) async throws -> Void) async throws {
        throw ModelError(.invalidArgument, "a migration stage cannot watch queries; watch once the container is open")
    }

    func close() async {}
}

/// A stage context's connection: the migration's, which it does not close.
private final class StageConnection: ContextConnection {
    let inner: any ContextConnection

    init(inner: any ContextConnection) {
        self.inner = inner
    }

    func stage(_ edits: [ObjectEdit]) async throws { try await inner.stage(edits) }
    func save(applying edits: [ObjectEdit]) async throws -> SaveReport { try await inner.save(applying: edits) }
    func rollback() async throws { try await inner.rollback() }
    func fetch(_ descriptor: ModelCore.FetchDescriptor) async throws -> FetchResult {
        try await inner.fetch(descriptor)
    }
    func count(_ descriptor: ModelCore.FetchDescriptor) async throws -> Int { try await inner.count(descriptor) }

    func aggregate(_ descriptor: ModelCore.AggregateDescriptor) async throws -> [AggregateRow] {
        try await inner.aggregate(descriptor)
    }

    func close() async {}
}
