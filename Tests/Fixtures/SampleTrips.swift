import ModelCore

/// The schema of Apple's SampleTrips: Trip with subentities PersonalTrip and BusinessTrip;
/// BucketListItem and LivingAccommodation deleted with their trip; `#Unique` on name + dates;
/// `#Index`es; names and dates preserved in deletion tombstones.
public enum SampleTrips {
    public static let schema = Schema(entities: [
        EntityDescription(
            name: "Trip",
            attributes: [
                AttributeDescription(name: "name", type: .string, preserveValueOnDeletion: true),
                AttributeDescription(name: "destination", type: .string),
                AttributeDescription(name: "startDate", type: .date, preserveValueOnDeletion: true),
                AttributeDescription(name: "endDate", type: .date, preserveValueOnDeletion: true),
            ],
            relationships: [
                RelationshipDescription(
                    name: "bucketList", destination: "BucketListItem", isToMany: true,
                    inverse: "trip", deleteRule: .cascade),
                RelationshipDescription(
                    name: "livingAccommodation", destination: "LivingAccommodation",
                    inverse: "trip", deleteRule: .cascade),
            ],
            uniqueConstraints: [["name", "startDate", "endDate"]],
            indexes: [["name"], ["startDate"], ["endDate"], ["name", "startDate", "endDate"]]
        ),
        EntityDescription(
            name: "PersonalTrip", superentity: "Trip",
            attributes: [AttributeDescription(name: "reason", type: .string, defaultValue: .string("unknown"))]
        ),
        EntityDescription(
            name: "BusinessTrip", superentity: "Trip",
            attributes: [AttributeDescription(name: "perdiem", type: .double, defaultValue: .double(0))]
        ),
        EntityDescription(
            name: "BucketListItem",
            attributes: [
                AttributeDescription(name: "title", type: .string),
                AttributeDescription(name: "details", type: .string, defaultValue: .string("")),
                AttributeDescription(name: "hasReservation", type: .bool, defaultValue: .bool(false)),
                AttributeDescription(name: "isInPlan", type: .bool, defaultValue: .bool(false)),
            ],
            relationships: [RelationshipDescription(name: "trip", destination: "Trip")]
        ),
        EntityDescription(
            name: "LivingAccommodation",
            attributes: [
                AttributeDescription(name: "address", type: .string),
                AttributeDescription(name: "placeName", type: .string),
                AttributeDescription(name: "isConfirmed", type: .bool, defaultValue: .bool(false)),
            ],
            relationships: [RelationshipDescription(name: "trip", destination: "Trip")]
        ),
    ])
}
