import Foundation
import ModelCore
import ModelFixtures
import ModelRemote
import ModelTesting
import Testing

/// A session of a PostgreSQL store stages only what the store can keep: text PostgreSQL's cannot
/// hold (U+0000) is refused when staged, so that nothing of it is staged and the session's reads,
/// which show what it stages, go on answering.
@Suite struct PostgresSessionTests {
    @Test func textPostgreSQLCannotKeepIsRefusedWhenStaged() async throws {
        let url = try PostgresServer.freshStoreURL()
        try await TestDaemon.withDaemon { daemon in
            try await daemon.withClient { client in
                try await client.createStore("far", backend: nil, url: url, schema: SampleTrips.schema)
                let session = try await client.openSession(on: "far")
                let trips = FetchDescriptor(entityName: "Trip")
                let refused = await expectError(.invalidArgument) {
                    _ = try await session.stage([
                        .insert(
                            entity: "Trip",
                            attributes: trip("Kyoto", "2026-04-01", "2026-04-09", destination: "Ky\u{0}oto"),
                            relationships: [:], id: nil)
                    ])
                }
                #expect(
                    refused?.message.contains("'Trip.destination' holds the NUL character (U+0000)") == true,
                    "\(String(describing: refused))")
                #expect(try await session.count(trips) == 0)
                _ = try await session.stage([
                    .insert(
                        entity: "Trip", attributes: trip("Kyoto", "2026-04-01", "2026-04-09"), relationships: [:],
                        id: nil)
                ])
                #expect(try await session.count(trips) == 1)
                #expect(try await session.save().remappedIdentifiers.count == 1)
                #expect(
                    try await client.fetch(FetchDescriptor(entityName: "Trip", resultType: .count), in: "far")
                        == .count(1))
            }
        }
    }
}
