import Foundation
import SystemdHarness
import Testing

/// `modelctl store retention`: shows a store's history retention and sets its own limits.
@Suite struct RetentionCommandTests {
    @Test func aStoresRetentionIsShownSetAndReset() async throws {
        try await CLITestbed.with(["--history-retention-age", "30d"]) { bed in
            let shown = try await bed.run(["store", "retention", "--format", "json"])
            let initial = try #require(shown.json as? [String: Any], "\(shown)")
            #expect(initial["history_retention_age_seconds"] as? Int == 2592000)
            #expect(initial["history_retention_age_from"] as? String == "daemon")
            #expect(initial["history_retention_transactions"] is NSNull)

            let set = try await bed.run([
                "store", "retention", "default", "--age", "7d", "--transactions", "1000", "--format", "json",
            ])
            let own = try #require(set.json as? [String: Any], "\(set)")
            #expect(own["history_retention_age_seconds"] as? Int == 604800)
            #expect(own["history_retention_age_from"] as? String == "store")
            #expect(own["history_retention_transactions"] as? Int == 1000)
            let info = try await bed.run(["store", "info", "--format", "json"])
            let described = try #require(info.json as? [String: Any], "\(info)")
            #expect(described["history_retention_transactions"] as? Int == 1000)
            #expect(described["history_retention_transactions_from"] as? String == "store")

            // No limit of the store's own kind differs from following the daemon's: both say whose.
            let unlimited = try await bed.run(["store", "retention", "--age", "none", "--format", "json"])
            #expect((unlimited.json as? [String: Any])?["history_retention_age_seconds"] is NSNull, "\(unlimited)")
            let unlimitedInfo = try #require(
                try await bed.run(["store", "info", "--format", "json"]).json as? [String: Any])
            #expect(
                unlimitedInfo["history_retention_age_seconds"] is NSNull
                    && unlimitedInfo["history_retention_age_from"] as? String == "store", "\(unlimitedInfo)")
            let reset = try await bed.run(["store", "retention", "--age", "default", "--format", "json"])
            let back = try #require(reset.json as? [String: Any])
            #expect(back["history_retention_age_seconds"] as? Int == 2592000)
            #expect(back["history_retention_age_from"] as? String == "daemon")

            for (bad, reason) in [
                (["--age", "soon"], "is not an age"), (["--age", "30"], "is not an age"),
                (["--age", "0.5s"], "is not an age"), (["--transactions=-5"], "is not a positive whole number"),
                (["--transactions", "0"], "is not a positive whole number"),
            ] {
                let refused = try await bed.run(["store", "retention"] + bad)
                #expect(refused.status == 64 && refused.error.contains(reason), "\(bad): \(refused)")
            }
            // The daemon's form, fractions included: 1.5h is 5,400 s.
            let fractional = try await bed.run(["store", "retention", "--age", "1.5h", "--format", "json"])
            let fractionalInfo = try #require(fractional.json as? [String: Any], "\(fractional)")
            #expect(fractionalInfo["history_retention_age_seconds"] as? Int == 5400)
        }
    }
}
