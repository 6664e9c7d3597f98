import ModelClient

// Apple's SampleTrips (SwiftData version, with inheritance), declared as in the sample: only the
// import differs.

@Model class Trip {
    #Index<Trip>([\.name], [\.startDate], [\.endDate], [\.name, \.startDate, \.endDate])
    #Unique<Trip>([\.name, \.startDate, \.endDate])

    @Attribute(.preserveValueOnDeletion)
    var name: String
    var destination: String

    @Attribute(.preserveValueOnDeletion)
    var startDate: Date

    @Attribute(.preserveValueOnDeletion)
    var endDate: Date

    @Relationship(deleteRule: .cascade, inverse: \BucketListItem.trip)
    var bucketList: [BucketListItem] = [BucketListItem]()

    @Relationship(deleteRule: .cascade, inverse: \LivingAccommodation.trip)
    var livingAccommodation: LivingAccommodation?

    init(name: String, destination: String, startDate: Date = .now, endDate: Date = .distantFuture) {
        self.name = name
        self.destination = destination
        self.startDate = startDate
        self.endDate = endDate
    }

    var displayName: String { "\(name) (\(destination))" }
}

@Model class PersonalTrip: Trip {
    enum Reason: String, CaseIterable, Codable, Identifiable {
        case family
        case reunion
        case wellness
        case unknown

        var id: Self { self }
    }

    var reason: Reason

    init(name: String, destination: String, startDate: Date = .now, endDate: Date = .distantFuture, reason: Reason) {
        self.reason = reason
        super.init(name: name, destination: destination, startDate: startDate, endDate: endDate)
    }
}

@Model class BusinessTrip: Trip {
    var perdiem: Double = 0.0

    init(
        name: String, destination: String, startDate: Date = .now, endDate: Date = .distantFuture, perdiem: Double = 0.0
    ) {
        self.perdiem = perdiem
        super.init(name: name, destination: destination, startDate: startDate, endDate: endDate)
    }
}

@Model class BucketListItem {
    var title: String
    var details: String
    var hasReservation: Bool
    var isInPlan: Bool
    var trip: Trip?

    init(title: String, details: String, hasReservation: Bool, isInPlan: Bool) {
        self.title = title
        self.details = details
        self.hasReservation = hasReservation
        self.isInPlan = isInPlan
    }
}

@Model class LivingAccommodation {
    var address: String
    var placeName: String
    var isConfirmed: Bool
    var trip: Trip?

    init(address: String, placeName: String, isConfirmed: Bool) {
        self.address = address
        self.placeName = placeName
        self.isConfirmed = isConfirmed
    }
}

/// Every SampleTrips model, for containers.
var sampleTripsModels: [any PersistentModel.Type] {
    [Trip.self, PersonalTrip.self, BusinessTrip.self, BucketListItem.self, LivingAccommodation.self]
}
