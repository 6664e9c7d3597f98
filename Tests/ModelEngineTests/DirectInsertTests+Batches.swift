import Foundation
import ModelCore
@testable import ModelEngine
import ModelFixtures

/// The batches ``DirectInsertTests`` saves every way, each with what it must come to.
extension DirectInsertTests {
    /// Batches of inserts, each with what it must come to.
    static let batches: [(name: String, expected: String, edits: @Sendable (UUID) -> [ObjectEdit])] = [
        (
            "defaults and conversions", "saved",
            { _ in
                [
                    .insert(entity: "Item", attributes: ["title": .string("a")], relationships: [:], id: nil),
                    .insert(
                        entity: "Item",
                        attributes: [
                            "title": .string("b"), "price": .int(3), "added": .string("2026-04-01T10:00:00Z"),
                        ], relationships: [:], id: nil),
                    .insert(entity: "Owner", attributes: [:], relationships: [:], id: nil),
                    .insert(
                        entity: "Item", attributes: ["title": .string("c"), "rank": .int(7), "sku": .string("S-1")],
                        relationships: [:], id: nil),
                ]
            }
        ),
        (
            "identifiers given", "saved",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a")], relationships: [:],
                        id: given("Item", 1, store: store)),
                    .insert(entity: "Item", attributes: ["title": .string("b")], relationships: [:], id: nil),
                ]
            }
        ),
        (
            "a value of the wrong type", "typeMismatch",
            { _ in
                [
                    .insert(entity: "Item", attributes: ["title": .string("a")], relationships: [:], id: nil),
                    .insert(
                        entity: "Item", attributes: ["title": .string("b"), "rank": .string("seven")],
                        relationships: [:], id: nil),
                ]
            }
        ),
        (
            // NaN is refused whatever form it comes in: as text it once reached a run as NaN,
            // which SQLite stores as NULL.
            "NaN written as text", "typeMismatch",
            { _ in
                [
                    .insert(entity: "Item", attributes: ["title": .string("a")], relationships: [:], id: nil),
                    .insert(
                        entity: "Item", attributes: ["title": .string("b"), "price": .string("NaN")],
                        relationships: [:], id: nil),
                ]
            }
        ),
        (
            "an unknown attribute", "unknownProperty",
            { _ in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a"), "colour": .string("red")],
                        relationships: [:], id: nil),
                    .insert(entity: "Item", attributes: ["title": .string("b")], relationships: [:], id: nil),
                ]
            }
        ),
        (
            "a relationship given as an attribute", "invalidArgument",
            { _ in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a"), "shelf": .string("x")], relationships: [:],
                        id: nil)
                ]
            }
        ),
        (
            "an unknown entity", "unknownEntity",
            { _ in
                [
                    .insert(entity: "Item", attributes: ["title": .string("a")], relationships: [:], id: nil),
                    .insert(entity: "Nope", attributes: [:], relationships: [:], id: nil),
                ]
            }
        ),
        (
            "an abstract entity", "invalidArgument",
            { _ in
                [
                    .insert(entity: "Base", attributes: [:], relationships: [:], id: nil)
                ]
            }
        ),
        (
            "required values and relationships missing", "validationFailed",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["rank": .int(1)], relationships: [:],
                        id: given("Item", 1, store: store)),
                    .insert(
                        entity: "Book", attributes: ["title": .string("t")], relationships: [:],
                        id: given("Book", 2, store: store)),
                    .insert(entity: "Thing", attributes: [:], relationships: [:], id: given("Thing", 3, store: store)),
                    .insert(
                        entity: "Item", attributes: ["title": .null], relationships: [:],
                        id: given("Item", 4, store: store)),
                ]
            }
        ),
        (
            "an identifier given twice", "invalidIdentifier",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a")], relationships: [:],
                        id: given("Item", 1, store: store)),
                    .insert(
                        entity: "Item", attributes: ["title": .string("b")], relationships: [:],
                        id: given("Item", 1, store: store)),
                ]
            }
        ),
        (
            "an identifier of another entity", "invalidIdentifier",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a")], relationships: [:],
                        id: given("Book", 1, store: store))
                ]
            }
        ),
        (
            "a permanent identifier", "invalidIdentifier",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a")], relationships: [:],
                        id: PersistentIdentifier(storeIdentifier: store, entityName: "Item", key: .permanent(5)))
                ]
            }
        ),
        (
            "a unique value twice", "uniqueConstraint",
            { store in
                [
                    .insert(
                        entity: "Item", attributes: ["title": .string("a"), "sku": .string("S")], relationships: [:],
                        id: given("Item", 1, store: store)),
                    .insert(
                        entity: "Item", attributes: ["title": .string("b"), "sku": .string("S")], relationships: [:],
                        id: given("Item", 2, store: store)),
                ]
            }
        ),
        (
            "runs of every type, defaults and conversions", "saved",
            { _ in
                [
                    .insert(entity: "Entry", attributes: ["title": .string("a")], relationships: [:], id: nil),
                    .insert(
                        entity: "Entry", attributes: ["rank": .int(4), "title": .string("b")], relationships: [:],
                        id: nil),
                    .insert(
                        entity: "Entry",
                        attributes: [
                            "title": .string("c"), "price": .int(3), "added": .string("2026-04-01T10:00:00Z"),
                            "inStock": .bool(true), "blob": .data(Data([1, 2])),
                            "code": .uuid(UUID(uuidString: "6f1c0a52-3e0b-4d7e-9d2a-0c8e5b1f2a33")!),
                            "link": .url(URL(string: "https://example.com/x")!), "amount": .string("12.50"),
                            "meta": .string("{\"a\": [1, 2]}"),
                        ], relationships: [:], id: nil),
                    .insert(entity: "Owner", attributes: ["name": .string("o")], relationships: [:], id: nil),
                    .insert(entity: "Entry", attributes: ["title": .string("d")], relationships: [:], id: nil),
                    .insert(entity: "Entry", attributes: ["title": .string("e")], relationships: [:], id: nil),
                ]
            }
        ),
        (
            "a run with a value of the wrong type", "typeMismatch",
            { _ in
                [
                    .insert(entity: "Entry", attributes: ["title": .string("a")], relationships: [:], id: nil),
                    .insert(entity: "Entry", attributes: ["title": .int(7)], relationships: [:], id: nil),
                ]
            }
        ),
        (
            "a run with JSON that is not", "typeMismatch",
            { _ in
                [
                    .insert(
                        entity: "Entry", attributes: ["title": .string("a"), "meta": .string("{")], relationships: [:],
                        id: nil)
                ]
            }
        ),
        (
            "a run missing a required value", "validationFailed",
            { _ in
                [
                    .insert(entity: "Entry", attributes: ["title": .string("a")], relationships: [:], id: nil),
                    .insert(entity: "Entry", attributes: ["rank": .int(2)], relationships: [:], id: nil),
                    .insert(entity: "Entry", attributes: ["title": .null], relationships: [:], id: nil),
                ]
            }
        ),
        (
            "a run naming a relationship as an attribute", "invalidArgument",
            { _ in
                [
                    .insert(
                        entity: "Entry", attributes: ["title": .string("a"), "owner": .string("x")], relationships: [:],
                        id: nil)
                ]
            }
        ),
    ]
}
