import ModelClient

// Three versions of a SampleTrips-like model, as an app ships them over time (SwiftData's
// VersionedSchema pattern): V2 adds `budget`; V3 renames `destination` to `place`, makes
// `budget` required and adds `label`, through a custom stage.

enum TripsV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentModel.Type] { [Trip.self, BucketListItem.self] }

    @Model final class Trip {
        #Unique<Trip>([\.name, \.startDate])
        var name: String
        var destination: String
        var startDate: Date
        @Relationship(deleteRule: .cascade, inverse: \BucketListItem.trip)
        var bucketList: [BucketListItem] = []

        init(name: String, destination: String, startDate: Date) {
            self.name = name
            self.destination = destination
            self.startDate = startDate
        }
    }

    @Model final class BucketListItem {
        var title: String
        var trip: Trip?

        init(title: String) {
            self.title = title
        }
    }
}

enum TripsV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentModel.Type] { [Trip.self, BucketListItem.self] }

    @Model final class Trip {
        #Unique<Trip>([\.name, \.startDate])
        var name: String
        var destination: String
        var startDate: Date
        var budget: Double?
        @Relationship(deleteRule: .cascade, inverse: \BucketListItem.trip)
        var bucketList: [BucketListItem] = []

        init(name: String, destination: String, startDate: Date, budget: Double? = nil) {
            self.name = name
            self.destination = destination
            self.startDate = startDate
            self.budget = budget
        }
    }

    @Model final class BucketListItem {
        var title: String
        var trip: Trip?

        init(title: String) {
            self.title = title
        }
    }
}

enum TripsV3: VersionedSchema {
    static let versionIdentifier = Schema.Version(3, 0, 0)
    static var models: [any PersistentModel.Type] { [Trip.self, BucketListItem.self] }

    @Model final class Trip {
        #Unique<Trip>([\.name, \.startDate])
        var name: String
        @Attribute(originalName: "destination")
        var place: String
        var startDate: Date
        var budget: Double
        var label: String = ""
        @Relationship(deleteRule: .cascade, inverse: \BucketListItem.trip)
        var bucketList: [BucketListItem] = []

        init(name: String, place: String, startDate: Date, budget: Double) {
            self.name = name
            self.place = place
            self.startDate = startDate
            self.budget = budget
        }
    }

    @Model final class BucketListItem {
        var title: String
        var trip: Trip?

        init(title: String) {
            self.title = title
        }
    }
}

/// V1 → V2 by inference; V2 → V3 with a custom stage: before the step, trips without a budget
/// get 0 (V3 requires one); after it, each trip's label is made from its old values.
enum TripsPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [TripsV1.self, TripsV2.self, TripsV3.self] }
    static var stages: [MigrationStage] { [v1ToV2, v2ToV3] }

    static let v1ToV2 = MigrationStage.lightweight(fromVersion: TripsV1.self, toVersion: TripsV2.self)
    static let v2ToV3 = MigrationStage.custom(
        fromVersion: TripsV2.self, toVersion: TripsV3.self,
        willMigrate: { context in
            for trip in try await context.fetch(FetchDescriptor<TripsV2.Trip>()) where trip.budget == nil {
                trip.budget = 0
            }
        },
        didMigrate: { context in
            for trip in try await context.fetch(FetchDescriptor<TripsV3.Trip>()) {
                trip.label = "\(trip.name) in \(trip.place)"
            }
        })
}

/// The same plan, but its didMigrate fails: the whole migration must roll back.
enum FailingTripsPlan: SchemaMigrationPlan {
    struct Refused: Error {}

    static var schemas: [any VersionedSchema.Type] { [TripsV1.self, TripsV2.self, TripsV3.self] }
    static var stages: [MigrationStage] {
        [
            TripsPlan.v1ToV2,
            .custom(
                fromVersion: TripsV2.self, toVersion: TripsV3.self,
                willMigrate: { context in
                    for trip in try await context.fetch(FetchDescriptor<TripsV2.Trip>()) { trip.budget = 1 }
                },
                didMigrate: { _ in throw Refused() }),
        ]
    }
}
