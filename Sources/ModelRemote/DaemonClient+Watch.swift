import Foundation
import ModelCore
import ModelWire

extension DaemonClient {
    /// Watches `query` on `store` (a live query): `body` gets the first result, then each result
    /// a save changed, with its difference from the previous one, until the calling task is
    /// cancelled or the daemon ends the watch (the error says why: the store dropped, its schema
    /// changed, the daemon stopping). With `storeIdentifier`, every URI must be that store's.
    public func watch(
        _ query: WatchedQuery, in store: String, storeIdentifier: UUID? = nil,
        _ body: @Sendable @escaping (WatchUpdate) async throws -> Void
    ) async throws {
        try await call(small: true) {
            try await serverStreaming(Modeld_V1_QueryService.Method.Watch.self, query.wire(store: store)) { messages in
                var assembler = WatchResponseAssembler(query: query, storeIdentifier: storeIdentifier)
                for try await message in messages {
                    if let update = try assembler.add(message) { try await body(update) }
                }
            }
        }
    }
}
