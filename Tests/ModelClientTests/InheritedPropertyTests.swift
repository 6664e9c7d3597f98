import Foundation
import ModelClient
import Testing

/// A subclass's key paths name the properties it inherits (`\BusinessTrip.name`, declared by
/// Trip), wherever a key path goes: predicates, sorts, `propertiesToFetch`, batch updates,
/// aggregates and history. They were refused ("not a stored property") or read as nothing, as
/// a key path through a subclass is not == to the superclass's.
@Suite struct InheritedPropertyTests {
    @Test(arguments: Backend.everyKind)
    func aSubclassNamesItsInheritedProperties(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            for (name, perdiem) in [("Osaka", 80.0), ("Lyon", 50.0), ("Bonn", 60.0)] {
                context.insert(
                    BusinessTrip(
                        name: name, destination: "abroad", startDate: day("2026-06-01"), endDate: day("2026-06-02"),
                        perdiem: perdiem))
            }
            try await context.save()
            let token = try await context.fetchHistory(HistoryDescriptor()).last?.token

            let osaka = try await context.fetch(
                FetchDescriptor<BusinessTrip>(predicate: #Predicate { $0.name == "Osaka" }))
            #expect(osaka.map(\.perdiem) == [80])
            let sorted = try await context.fetch(FetchDescriptor<BusinessTrip>(sortBy: [SortDescriptor(\.name)]))
            #expect(sorted.map(\.name) == ["Bonn", "Lyon", "Osaka"])

            var partial = FetchDescriptor<BusinessTrip>(sortBy: [SortDescriptor(\.name)])
            partial.propertiesToFetch = [\.name]
            #expect(try await ModelContext(container).fetch(partial).map(\.name) == ["Bonn", "Lyon", "Osaka"])

            let moved = try await context.update(
                model: BusinessTrip.self, where: #Predicate { $0.name != "Bonn" }, set: [\.destination: "home"])
            #expect(moved == 2)
            let rows = try await context.aggregate(
                AggregateDescriptor<BusinessTrip>(groupBy: [\BusinessTrip.destination], aggregates: [.count()]))
            #expect(
                Dictionary(uniqueKeysWithValues: rows.map { ($0[\BusinessTrip.destination] ?? "?", $0.count()) })
                    == ["abroad": 1, "home": 2])

            let batch = try #require(try await context.fetchHistory(HistoryDescriptor(after: token)).first)
            guard case .update(let update) = batch.changes.first else {
                Issue.record("the batch update is recorded as \(String(describing: batch.changes.first))")
                return
            }
            let typed = try #require(update as? DefaultHistoryUpdate<BusinessTrip>)
            #expect(typed.updatedAttributes.contains(\BusinessTrip.destination))
        }
    }
}
