import ModelClient
import ModelClientTesting
import Testing

// docs/client.md's examples, written as the page writes them (its `…` filled in), so that a
// change of API that breaks a copy-pasted example breaks this file first. Nested in an enum: the
// test target has models of the same names.
enum DocumentedExamples {
    @Model class Trip { // not final: BusinessTrip below is a subentity
        #Unique<Trip>([\.name, \.startDate, \.endDate])
        #Index<Trip>([\.name], [\.startDate])

        @Attribute(.preserveValueOnDeletion) var name: String
        var destination: String
        var startDate: Date
        var endDate: Date
        @Relationship(deleteRule: .cascade, inverse: \BucketListItem.trip)
        var bucketList: [BucketListItem] = []
        var livingAccommodation: LivingAccommodation?
        @Transient var isSelected = false

        init(name: String, destination: String, startDate: Date, endDate: Date) {
            self.name = name
            self.destination = destination
            self.startDate = startDate
            self.endDate = endDate
        }
    }

    @Model class BusinessTrip: Trip { // a subentity
        var perdiem: Double = 0

        init(name: String, destination: String, startDate: Date, endDate: Date, perdiem: Double) {
            self.perdiem = perdiem
            super.init(name: name, destination: destination, startDate: startDate, endDate: endDate)
        }
    }

    @Model final class BucketListItem {
        var title: String
        var trip: Trip?
        init(title: String) { self.title = title }
    }

    @Model final class LivingAccommodation {
        var address: String
        var isConfirmed: Bool = false
        var trip: Trip?
        init(address: String) { self.address = address }
    }

}

// The Testing example's trait, as written: the models it names, the related ones found from them.
@Suite(
    .modelContainer(
        for: DocumentedExamples.Trip.self, DocumentedExamples.BusinessTrip.self, DocumentedExamples.BucketListItem.self)
)
struct DocumentedExamplesTests {
    typealias Trip = DocumentedExamples.Trip
    typealias BusinessTrip = DocumentedExamples.BusinessTrip

    @Test func savesATrip() async throws {
        let context = ModelContext(try #require(TestContainer.current))
        context.insert(Trip(name: "Oslo", destination: "Norway", startDate: .now, endDate: .now))
        try await context.save()
        #expect(try await context.fetchCount(FetchDescriptor<Trip>()) == 1)
    }

    /// "Containers and contexts", "Aggregates and history" and "Testing", as written there.
    @Test func theExamplesRunAsWritten() async throws {
        let container = try #require(TestContainer.current)
        let context = ModelContext(container)
        let token = try await container.currentHistoryToken() ?? DefaultHistoryToken(0) // nil: none saved yet
        context.insert(Trip(name: "Oslo", destination: "Norway", startDate: .now, endDate: .now))
        let trip = Trip(name: "Kyoto", destination: "Japan", startDate: .now + 86_400, endDate: .now + 90_000)
        context.insert(trip)
        let now = Date.now
        try await context.save()
        let upcoming = try await context.fetch(
            FetchDescriptor<Trip>(
                predicate: #Predicate { $0.startDate > now && $0.destination.contains("Japan") },
                sortBy: [SortDescriptor(\.startDate)]))
        #expect(upcoming.map(\.name) == ["Kyoto"])

        var byDestination = AggregateDescriptor<Trip>(
            groupBy: [\Trip.destination], aggregates: [.count(), .minimum(\Trip.startDate, as: "first")])
        byDestination.sortBy = [(key: "count", order: .reverse)]
        let rows = try await context.aggregate(byDestination)
        #expect(Set(rows.map { $0[\Trip.destination] }) == ["Norway", "Japan"])
        #expect(rows.allSatisfy { $0.count() == 1 })

        let descriptor = HistoryDescriptor<DefaultHistoryTransaction>(after: token, author: "widget")
        #expect(try await context.fetchHistory(descriptor).isEmpty) // nothing saved as "widget"

        // "Models": a subentity, made with its own initializer, is fetched as its parent.
        context.insert(BusinessTrip(name: "Bergen", destination: "Norway", startDate: .now, endDate: .now, perdiem: 80))
        try await context.save()
        let trips = try await context.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.name == "Bergen" }))
        #expect((trips.first as? BusinessTrip)?.perdiem == 80)
    }
}
