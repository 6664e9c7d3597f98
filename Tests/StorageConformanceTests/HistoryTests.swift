import Foundation
import ModelCore
import ModelFixtures
import Testing

/// History: one transaction per save, tokens 1, 2, 3…, authors, changes in order, changed
/// property names, tombstones, reading after a token, deleting old history.
@Suite struct HistoryTests {
    @Test(arguments: BackendKind.allCases)
    func everySaveIsOneTransaction(_ kind: BackendKind) async throws {
        try await withStore(kind, SampleTrips.schema) { store in
            #expect(try await store.backend.currentHistoryToken() == nil)
            #expect(try await store.backend.history(after: nil, limit: nil).isEmpty)
            let started = Timestamp(Date().addingTimeInterval(-60))

            var first = store.changes(author: "alice")
            let paris = first.insert(
                "PersonalTrip",
                [
                    "name": .string("Paris"), "destination": .string("FR"),
                    "startDate": date("2026-03-01"), "endDate": date("2026-03-10"),
                ])
            let open = first.insert(
                "Trip", ["name": .string("Open"), "destination": .string("?"), "startDate": date("2026-05-01")])
            let louvre = first.insert("BucketListItem", ["title": .string("Louvre")])
            first.link(louvre, "trip", paris)
            let s = try await store.save(first)
            #expect(s.result.token == HistoryToken(1))

            var second = store.changes()
            second.update(s[paris], ["destination": .string("France"), "name": .string("Paris!")], expectedVersion: 1)
            let eiffel = second.insert("BucketListItem", ["title": .string("Eiffel")])
            second.link(eiffel, "trip", s[paris])
            second.delete(s[open])
            let s2 = try await store.save(second)
            #expect(s2.result.token == HistoryToken(2))

            var third = store.changes(author: "bob")
            third.delete(s[paris])
            third.delete(s[louvre])
            third.delete(s2[eiffel])
            #expect(try await store.save(third).result.token == HistoryToken(3))
            #expect(try await store.save(store.changes()).result.token == nil)

            let history = try await store.backend.history(after: nil, limit: nil)
            #expect(history.map(\.token) == [HistoryToken(1), HistoryToken(2), HistoryToken(3)])
            #expect(history.map(\.author) == ["alice", nil, "bob"])
            #expect(
                history.allSatisfy {
                    $0.timestamp >= started && $0.timestamp <= Timestamp(Date().addingTimeInterval(60))
                })
            #expect(
                history[0].changes == [
                    HistoryChange(kind: .insert, id: s[paris]), HistoryChange(kind: .insert, id: s[open]),
                    HistoryChange(kind: .insert, id: s[louvre]),
                ])
            #expect(
                history[1].changes == [
                    HistoryChange(kind: .insert, id: s2[eiffel]),
                    HistoryChange(
                        kind: .update, id: s[paris], changedProperties: ["bucketList", "destination", "name"]),
                    HistoryChange(
                        kind: .delete, id: s[open],
                        tombstone: [
                            "name": .string("Open"), "startDate": date("2026-05-01"), "endDate": .null,
                        ]),
                ])
            #expect(
                history[2].changes == [
                    HistoryChange(
                        kind: .delete, id: s[paris],
                        tombstone: [
                            "name": .string("Paris!"), "startDate": date("2026-03-01"), "endDate": date("2026-03-10"),
                        ]),
                    HistoryChange(kind: .delete, id: s[louvre]),
                    HistoryChange(kind: .delete, id: s2[eiffel]),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func readingAfterATokenAndDeletingOldHistory(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            for index in 1...4 {
                var c = store.changes(author: "writer \(index)")
                c.insert("Shelf", ["name": .string("S\(index)")])
                try await store.save(c)
            }
            let backend = store.backend
            #expect(try await backend.history(after: HistoryToken(1), limit: nil).map(\.token.rawValue) == [2, 3, 4])
            #expect(try await backend.history(after: HistoryToken(1), limit: 2).map(\.token.rawValue) == [2, 3])
            #expect(try await backend.history(after: nil, limit: 1).map(\.token.rawValue) == [1])
            #expect(try await backend.history(after: HistoryToken(4), limit: nil).isEmpty)
            #expect(try await backend.history(after: HistoryToken(99), limit: nil).isEmpty)
            #expect(try await backend.history(after: nil, limit: 0).isEmpty)

            try await backend.deleteHistory(before: HistoryToken(3))
            #expect(try await backend.history(after: nil, limit: nil).map(\.token.rawValue) == [3, 4])
            #expect(try await backend.history(after: nil, limit: nil).first?.author == "writer 3")
            #expect(try await backend.currentHistoryToken() == HistoryToken(4))
            try await backend.deleteHistory(before: HistoryToken(100))
            #expect(try await backend.history(after: nil, limit: nil).isEmpty)
            #expect(try await backend.currentHistoryToken() == HistoryToken(4))

            var c = store.changes()
            c.insert("Shelf", ["name": .string("S5")])
            #expect(try await store.save(c).result.token == HistoryToken(5))
            #expect(try await backend.history(after: nil, limit: nil).map(\.token.rawValue) == [5])
        }
    }
}
