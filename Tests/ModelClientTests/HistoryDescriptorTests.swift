import Foundation
import ModelClient
import Testing

/// SwiftData's `HistoryDescriptor<DefaultHistoryTransaction>`: a `#Predicate` over the
/// transactions, a sort and a limit, on every container kind.
@Suite struct HistoryDescriptorTests {
    @Test(arguments: Backend.everyKind)
    func aPredicateOverTokenAndAuthorPicksTransactions(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let app = ModelContext(container)
            app.author = "app"
            let widget = ModelContext(container)
            widget.author = "widget"
            func trip(_ name: String) -> Trip {
                Trip(name: name, destination: "X", startDate: day("2026-06-01"), endDate: day("2026-06-02"))
            }
            app.insert(trip("first"))
            try await app.save()
            let historyToken = try #require(try await app.fetchHistory(HistoryDescriptor()).last?.token)
            let fromWidget = trip("from the widget")
            widget.insert(fromWidget)
            try await widget.save()
            app.insert(trip("from the app"))
            try await app.save()
            fromWidget.destination = "Y"
            try await widget.save()

            // The sample's findTransactions(after:author:).
            let author = "widget"
            var historyDescriptor = HistoryDescriptor<DefaultHistoryTransaction>()
            historyDescriptor.predicate = #Predicate { transaction in
                (transaction.token > historyToken) && (transaction.author == author)
            }
            let transactions = try await app.fetchHistory(historyDescriptor)
            #expect(transactions.count == 2)
            #expect(transactions.allSatisfy { $0.author == "widget" && $0.token > historyToken })
            #expect(transactions.map(\.token) == transactions.map(\.token).sorted())
            if case .update(let update as DefaultHistoryUpdate<Trip>) = transactions.last?.changes.first {
                #expect(update.updatedAttributes == [\Trip.destination])
            } else {
                Issue.record("the widget's second save is not an update of a Trip: \(transactions)")
            }

            // A sort and a limit: the newest two, newest first.
            let all = try await app.fetchHistory(HistoryDescriptor())
            var newest = HistoryDescriptor<DefaultHistoryTransaction>(sortBy: [SortDescriptor(\.token, order: .reverse)]
            )
            newest.fetchLimit = 2
            #expect(try await app.fetchHistory(newest).map(\.token) == all.suffix(2).reversed().map(\.token))
            // A limit alone: the oldest.
            var oldest = HistoryDescriptor<DefaultHistoryTransaction>()
            oldest.fetchLimit = 1
            #expect(try await app.fetchHistory(oldest).map(\.token) == [all[0].token])
        }
    }

    /// SwiftData's `deleteHistory(_:)`: the transactions up to a token go; a descriptor that
    /// would leave older ones behind is refused, deleting nothing.
    @Test(arguments: Backend.everyKind)
    func deleteHistoryDropsTheOldestTransactions(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            for n in 1...4 {
                context.insert(
                    Trip(name: "trip \(n)", destination: "X", startDate: day("2026-06-01"), endDate: day("2026-06-02")))
                try await context.save()
            }
            let tokens = try await context.fetchHistory(HistoryDescriptor()).map(\.token)
            #expect(tokens.count == 4)
            let second = tokens[1], newest = tokens[3]

            let gap = await modelError {
                try await context.deleteHistory(
                    HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.token == newest }))
            }
            #expect(gap?.code == .invalidArgument)
            #expect(try await context.fetchHistory(HistoryDescriptor()).map(\.token) == tokens)

            try await context.deleteHistory(
                HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.token <= second }))
            #expect(try await context.fetchHistory(HistoryDescriptor()).map(\.token) == Array(tokens.suffix(2)))
            #expect(try await context.fetchCount(FetchDescriptor<Trip>()) == 4)
            // SwiftData's expired token: history after a deleted one is an error, not a gap.
            let expired = await modelError { _ = try await context.fetchHistory(after: tokens[0]) }
            #expect(expired?.code == .historyTokenExpired, "\(String(describing: expired))")
            #expect(try await context.fetchHistory(after: second).map(\.token) == Array(tokens.suffix(2)))
        }
    }

    /// Following history: what was saved after the token, then each save as it happens, by any
    /// context; a consumer that falls behind misses nothing.
    @Test(.timeLimit(.minutes(2)), arguments: Backend.everyKind)
    func followHistoryBringsEverySaveAsItHappens(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            func insertTrip(_ context: ModelContext, _ name: String) async throws {
                context.insert(
                    Trip(name: name, destination: "X", startDate: day("2026-06-01"), endDate: day("2026-06-02")))
                try await context.save()
            }
            try await insertTrip(context, "before")
            var following = context.followHistory(after: nil).makeAsyncIterator()
            let first = try #require(try await following.next())
            #expect(first.changes.count == 1 && first.changes.first?.isChange(of: Trip.self) == true)

            let other = ModelContext(container)
            other.author = "other"
            try await insertTrip(other, "while following")
            let second = try #require(try await following.next())
            #expect(second.author == "other" && second.token > first.token)

            // More saves than the feed holds, while nothing reads: each arrives, in order.
            for n in 0..<300 { try await insertTrip(context, "burst \(n)") }
            var tokens: [Int64] = []
            while tokens.count < 300 { tokens.append(try #require(try await following.next()).token.rawValue) }
            #expect(tokens == Array(tokens[0]..<(tokens[0] + 300)) && tokens[0] == second.token.rawValue + 1)

            // By author: only the other context's saves.
            var byOther = context.followHistory(after: nil, author: "other").makeAsyncIterator()
            #expect(try await byOther.next()?.token == second.token)
        }
    }
}
