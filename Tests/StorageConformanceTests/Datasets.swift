import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Small data sets, saved through the backend under test, that many tests share.
enum Datasets {
    static let uuid1 = UUID(uuidString: "0A1B2C3D-4E5F-4061-8293-A4B5C6D7E8F9")! // a literal UUID: known valid

    /// Six Catalog items, keys 1…6 in this order: Apple, apricot, Banana, Crème brûlée,
    /// creme brulee, Zebra*?. Banana has nothing optional set (and the default rank).
    @discardableResult
    static func items(_ store: TestStore) async throws -> [PersistentIdentifier] {
        var c = store.changes()
        let temporary = [
            c.insert(
                "Item",
                [
                    "title": .string("Apple"), "sku": .string("A-1"), "label": .string("fruit"), "count": .int(5),
                    "price": .double(1.5), "inStock": .bool(true), "added": date("2026-01-01"), "rank": .int(1),
                    "amount": .decimal(Decimal(string: "10.25")!), "code": .uuid(uuid1), // literal decimal text
                    "link": .url(URL(string: "https://example.com/a?x=1")!), "meta": .json(#"{"k":1}"#), // literal URL
                    "blob": .data(Data([0, 1, 2])),
                ]),
            c.insert(
                "Item",
                [
                    "title": .string("apricot"), "sku": .string("A-2"), "label": .string("Fruit"), "count": .int(0),
                    "inStock": .bool(false), "added": date("2026-02-01"), "rank": .int(2),
                    "amount": .decimal(Decimal(string: "0.1")!),
                ]), // literal decimal text
            c.insert("Item", ["title": .string("Banana"), "price": .double(0.25)]),
            c.insert(
                "Item",
                [
                    "title": .string("Crème brûlée"), "sku": .string("C-1"), "label": .string("dessert"),
                    "count": .int(12),
                    "price": .double(7), "inStock": .bool(true), "added": date("2025-12-31T23:59:59.999999Z"),
                    "rank": .int(3), "amount": .decimal(Decimal(string: "10.250")!),
                ]), // literal decimal text
            c.insert(
                "Item",
                [
                    "title": .string("creme brulee"), "sku": .string("c-1"), "label": .string("dessert"),
                    "count": .int(-3),
                    "price": .double(7.5), "inStock": .bool(false), "rank": .int(3),
                ]),
            c.insert(
                "Item",
                [
                    "title": .string("Zebra*?"), "sku": .string("Z"), "label": .string("toy"), "count": .int(100),
                    "price": .double(100.125), "added": date("2027-06-15T12:00:00.5Z"), "rank": .int(1),
                ]),
        ]
        let saved = try await store.save(c)
        return temporary.map { saved[$0] }
    }

    /// SwiftDataKit's articles: categories tech, food, misc; collections Mixed (Swift, Rust,
    /// Pizza), Food (Pasta), Empty; the article Orphan has no category and no collection.
    struct Articles {
        var tech, food, misc: PersistentIdentifier
        var mixed, foodCollection, empty: PersistentIdentifier
        var swift, rust, pasta, orphan, pizza: PersistentIdentifier
    }

    static func articles(_ store: TestStore) async throws -> Articles {
        var c = store.changes()
        func named(_ entity: String, _ name: String) -> PersistentIdentifier {
            c.insert(entity, ["name": .string(name)])
        }
        let tech = named("Category", "tech"), food = named("Category", "food"), misc = named("Category", "misc")
        let mixed = named("ArticleCollection", "Mixed"), foodCollection = named("ArticleCollection", "Food")
        let empty = named("ArticleCollection", "Empty")
        let swift = named("Article", "Swift"), rust = named("Article", "Rust"), pasta = named("Article", "Pasta")
        let orphan = named("Article", "Orphan"), pizza = named("Article", "Pizza")
        for (article, category) in [(swift, tech), (rust, tech), (pasta, food), (pizza, food)] {
            c.link(article, "category", category)
        }
        for (article, collection) in [(swift, mixed), (rust, mixed), (pizza, mixed), (pasta, foodCollection)] {
            c.link(article, "collection", collection)
        }
        let s = try await store.save(c)
        return Articles(
            tech: s[tech], food: s[food], misc: s[misc], mixed: s[mixed], foodCollection: s[foodCollection],
            empty: s[empty], swift: s[swift], rust: s[rust], pasta: s[pasta], orphan: s[orphan], pizza: s[pizza])
    }

    /// SampleTrips: Base (a Trip, 4 days), Paris (PersonalTrip, 9 days, reason family),
    /// Berlin (BusinessTrip, 2 days, perdiem 80), Rome (PersonalTrip, default reason); keys 1…4.
    @discardableResult
    static func trips(_ store: TestStore) async throws -> [PersistentIdentifier] {
        var c = store.changes()
        func trip(_ entity: String, _ name: String, _ start: String, _ end: String, _ more: [String: Value] = [:])
            -> PersistentIdentifier
        {
            c.insert(
                entity,
                ["name": .string(name), "destination": .string(name), "startDate": date(start), "endDate": date(end)]
                    .merging(more) { _, new in new })
        }
        let ids = [
            trip("Trip", "Base", "2026-01-01", "2026-01-05"),
            trip("PersonalTrip", "Paris", "2026-03-01", "2026-03-10", ["reason": .string("family")]),
            trip("BusinessTrip", "Berlin", "2026-02-01", "2026-02-03", ["perdiem": .double(80)]),
            trip("PersonalTrip", "Rome", "2026-04-01", "2026-04-02"),
        ]
        let saved = try await store.save(c)
        return ids.map { saved[$0] }
    }
}

/// Checks a table of (predicate text, expected values of `key` in key order) against `entity`.
func expectMatches(
    _ store: TestStore, _ entity: String, key: String, _ cases: [(String, [String])],
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    for (predicate, expected) in cases {
        let found = try await store.values(entity, predicate, key: key)
        #expect(found == expected, "\(predicate)", sourceLocation: sourceLocation)
    }
}
