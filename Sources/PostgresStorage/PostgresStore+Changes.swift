import Foundation
import Logging
import ModelCore
import ModelStorage
import PostgresNIO

extension PostgresStore: StorageChangeFeed {
    /// Hears every save of the store, through any process, as it commits: each save notifies
    /// the store's channel with its history token (`pg_notify` in its transaction, delivered at
    /// commit), and this listens on a connection of its own. `body` gets each token; returning
    /// false ends the listening. `listening` is called once the server listens for this
    /// connection (saves committed from then on are heard). A follower reads history after the token it last read whenever
    /// it hears one, so a notification lost with a broken connection costs nothing but delay.
    public func followChanges(
        listening: @escaping @Sendable () -> Void = {}, _ body: @escaping @Sendable (HistoryToken) async throws -> Bool
    ) async throws {
        let endpoint = endpoint
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnectionQueue.connect(endpoint).get()
        } catch {
            throw PostgresSession.connectionError(error, endpoint: endpoint)
        }
        do {
            try await connection.listen(on: PostgresMetadata(namespace: endpoint.namespace).channel) { notifications in
                listening()
                for try await notification in notifications {
                    guard let token = Int64(notification.payload) else { continue }
                    guard try await body(HistoryToken(token)) else { return }
                }
            }
        } catch {
            try? await connection.close()
            throw PostgresSession.error(error, endpoint: endpoint)
        }
        try? await connection.close()
    }
}
