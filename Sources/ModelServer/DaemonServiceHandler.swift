import Foundation
import GRPCCore
import ModelCore
import ModelWire

/// modeld.v1.DaemonService: what the daemon is and how busy.
struct DaemonServiceHandler: Modeld_V1_DaemonService.SimpleServiceProtocol {
    let core: DaemonCore

    func status(request: Modeld_V1_StatusRequest, context: ServerContext) async throws -> Modeld_V1_StatusResponse {
        try await core.rpc.handle("Status") { status() }
    }

    func metrics(request: Modeld_V1_MetricsRequest, context: ServerContext) async throws -> Modeld_V1_MetricsResponse {
        try await core.rpc.handle("Metrics") {
            let caller = Caller.current
            guard core.access.isAdministrator(caller) else {
                throw ModelError(
                    .permissionDenied,
                    "user \(caller.description) may not read the daemon's metrics, which name every store: administrators may (root, the daemon's user, modeld --admin-group)",
                    context: ["uid": String(caller.uid)])
            }
            let text = await core.metrics.exposition(core)
            return Modeld_V1_MetricsResponse.with { $0.text = text }
        }
    }

    /// The daemon's figures; its counts of stores, sessions and watches are of the stores the
    /// caller may read (all of them for an administrator), as ListStores lists them, so that no
    /// caller learns what others keep or do.
    private func status() -> Modeld_V1_StatusResponse {
        let readable = core.catalog.all().filter { core.mayRead($0.name) }
        let names = Set(readable.map(\.name))
        return Modeld_V1_StatusResponse.with {
            $0.version = core.configuration.version
            $0.uptimeSeconds = (ContinuousClock.now - core.startedAt).components.seconds
            $0.stores = Int64(readable.count)
            $0.openSessions = Int64(core.sessions.count { names.contains($0.store.name) })
            $0.openWatches = Int64(readable.reduce(0) { $0 + $1.watches.watchCount })
            $0.watchMemoryBytes = Int64(core.watchMemory.held)
            $0.maxWatchMemoryBytes = Int64(core.watchMemory.capacity)
            $0.maxSessions = Int64(core.configuration.maximumSessions)
            $0.idleTimeoutSeconds = core.configuration.idleTimeout.components.seconds
            $0.dataDirectory = core.configuration.dataDirectory
            $0.pid = Int64(ProcessInfo.processInfo.processIdentifier)
        }
    }
}

/// grpc.health.v1.Health: SERVING for the daemon ("") and for each of its services while it
/// runs; NOT_SERVING once it is shutting down.
struct HealthServiceHandler: Grpc_Health_V1_Health.SimpleServiceProtocol {
    let isServing: @Sendable () -> Bool

    static let services: Set<String> = [
        "", "modeld.v1.StoreService", "modeld.v1.SessionService", "modeld.v1.QueryService", "modeld.v1.DaemonService",
    ]

    func check(request: Grpc_Health_V1_HealthCheckRequest, context: ServerContext) async throws
        -> Grpc_Health_V1_HealthCheckResponse
    {
        guard Self.services.contains(request.service) else {
            throw RPCError(
                code: .notFound,
                message:
                    "unknown service '\(request.service)'; modeld serves \(Self.services.sorted().dropFirst().joined(separator: ", "))"
            )
        }
        return Grpc_Health_V1_HealthCheckResponse.with { $0.status = isServing() ? .serving : .notServing }
    }

    func watch(
        request: Grpc_Health_V1_HealthCheckRequest, response: RPCWriter<Grpc_Health_V1_HealthCheckResponse>,
        context: ServerContext
    ) async throws {
        let known = Self.services.contains(request.service)
        var last: Grpc_Health_V1_HealthCheckResponse.ServingStatus?
        while !context.cancellation.isCancelled {
            let status: Grpc_Health_V1_HealthCheckResponse.ServingStatus =
                known ? (isServing() ? .serving : .notServing) : .serviceUnknown
            if status != last {
                try await response.write(Grpc_Health_V1_HealthCheckResponse.with { $0.status = status })
                last = status
            }
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await Task.sleep(for: .seconds(1)) }
                    group.addTask { try await context.cancellation.cancelled }
                    try await group.next()
                    group.cancelAll()
                }
            } catch {
                return
            }
        }
    }
}
