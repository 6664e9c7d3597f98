import Foundation
import ModelCore
import ModelFixtures

/// The schema and data of the differential test: every attribute type, inheritance, to-one
/// (also self-referencing, without inverse), one-to-many and many-to-many relationships.
///
/// - `Thing` (subentities `Gadget` with `power`, `Gizmo` with `flavor`): one attribute of each
///   type, all optional but `name`; in a `box`; tagged with many `tags`.
/// - `Box`: `label`, `weight`, `opened`; holds `things`; may sit in a `parent` box.
/// - `Tag`: `name`; on many `things`.
enum Workshop {
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Thing",
            attributes: [AttributeDescription(name: "name", type: .string)]
                + thingAttributes.dropFirst().map {
                    AttributeDescription(name: $0.name, type: $0.type, isOptional: true)
                },
            relationships: [
                RelationshipDescription(name: "box", destination: "Box", inverse: "things"),
                RelationshipDescription(name: "tags", destination: "Tag", isToMany: true, inverse: "things"),
            ]
        ),
        EntityDescription(
            name: "Gadget", superentity: "Thing",
            attributes: [AttributeDescription(name: "power", type: .int, isOptional: true)]),
        EntityDescription(
            name: "Gizmo", superentity: "Thing",
            attributes: [AttributeDescription(name: "flavor", type: .string, isOptional: true)]),
        EntityDescription(
            name: "Box",
            attributes: [
                AttributeDescription(name: "label", type: .string),
                AttributeDescription(name: "weight", type: .double, isOptional: true),
                AttributeDescription(name: "opened", type: .date, isOptional: true),
            ],
            relationships: [
                RelationshipDescription(name: "things", destination: "Thing", isToMany: true, inverse: "box"),
                RelationshipDescription(name: "parent", destination: "Box"),
            ]
        ),
        EntityDescription(
            name: "Tag",
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(name: "things", destination: "Thing", isToMany: true, inverse: "tags")
            ]
        ),
    ])

    static let thingAttributes: [(name: String, type: AttributeType)] = [
        ("name", .string), ("note", .string), ("qty", .int), ("price", .double), ("ok", .bool), ("at", .date),
        ("blob", .data), ("code", .uuid), ("link", .url), ("amount", .decimal), ("meta", .json),
    ]

    /// The attributes of `entity`, with their types.
    static func attributes(of entity: String) -> [(name: String, type: AttributeType)] {
        switch entity {
        case "Thing": thingAttributes
        case "Gadget": thingAttributes + [("power", .int)]
        case "Gizmo": thingAttributes + [("flavor", .string)]
        case "Box": [("label", .string), ("weight", .double), ("opened", .date)]
        default: [("name", .string)]
        }
    }

    /// The to-one relationships of `entity` and their destinations.
    static func toOne(of entity: String) -> [(name: String, destination: String)] {
        switch entity {
        case "Thing", "Gadget", "Gizmo": [("box", "Box")]
        case "Box": [("parent", "Box")]
        default: []
        }
    }

    /// The to-many relationships of `entity` and their destinations.
    static func toMany(of entity: String) -> [(name: String, destination: String)] {
        switch entity {
        case "Thing", "Gadget", "Gizmo": [("tags", "Tag")]
        default: [("things", "Thing")]
        }
    }

    /// The root entity of `entity`'s hierarchy.
    static func root(of entity: String) -> String {
        ["Gadget", "Gizmo"].contains(entity) ? "Thing" : entity
    }

    static let tagCount = 6
    static let boxCount = 8
    static let thingCount = 90
}

/// Values that collide on purpose: case and diacritic variants, LIKE wildcards, ints at the
/// limits (so arithmetic overflows), equal decimals written differently.
struct ValuePools {
    static let strings = [
        "apple", "Apple", "APPLE", "äpple", "Äpple", "crème", "creme", "Crème brûlée", "", "a%b", "a_b",
        "x*y", "日本", "naïve", "naive", "zebra", "Zebra", "e\u{301}", "é", "ß", "SS", "straße", "Strasse",
        " pad ", "a?c", "abc",
    ]
    static let fragments = ["a", "e", "pp", "ZE", "é", "s", "b", "ss", "ß", "", "*", "日", "\u{301}"]
    static let patterns = [
        "a*", "*e", "?pple", "*ß*", "*", "?", "a?c", "*%*", "*_*", "cr?me*", "a\\*b", "x\\*y", "*E*",
    ]
    static let ints: [Int64] = [-3, -1, 0, 1, 2, 3, 5, 7, 10, 42, .max, .min]
    static let doubles: [Double] = [-1.5, -0.0, 0, 0.1, 0.25, 1, 2.5, 3, 7.5, 1e10, 1e300]
    static let data: [Data] = [Data(), Data([0]), Data([0, 1]), Data([1]), Data([255, 0])]
    static let uuids = [
        "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9", "FFFFFFFF-0000-4000-8000-000000000001",
        "00000000-0000-4000-8000-000000000000", "12345678-9abc-4def-8123-456789abcdef",
    ].map { UUID(uuidString: $0)! }
    static let urls = ["https://example.com/a", "https://example.com/b?x=1", "file:///tmp/x", "mailto:a@b.c"].map {
        URL(string: $0)!
    }
    static let decimals = ["0.1", "10.25", "10.250", "-3", "1000", "0", "0.10", "123456789012345678.9"].map {
        Decimal(string: $0)!
    }
    static let jsons = ["{}", "[1,2]", "{\"a\":1}", "null", "\"x\""]
    static let epoch = Timestamp(iso8601: "2026-01-01T00:00:00Z")!

    /// A value of `type`, never nil.
    static func value(_ type: AttributeType, _ random: inout SeededRandom) -> Value {
        switch type {
        case .string: .string(random.pick(strings))
        case .int: .int(int(&random))
        case .double: .double(random.pick(doubles))
        case .bool: .bool(random.chance(0.5))
        case .date: .date(date(&random))
        case .data: .data(random.pick(data))
        case .uuid: .uuid(random.pick(uuids))
        case .url: .url(random.pick(urls))
        case .decimal: .decimal(random.pick(decimals))
        case .json: .json(random.pick(jsons))
        }
    }

    /// An int; the extremes only now and then.
    static func int(_ random: inout SeededRandom) -> Int64 {
        let extremes = random.chance(0.1)
        return random.pick(extremes ? ints : Array(ints.prefix(10)))
    }

    /// A date within 60 days of 2026-01-01, on whole days most of the time.
    static func date(_ random: inout SeededRandom) -> Timestamp {
        let day = Int64(random.int(0...60)) * 86_400_000_000
        let micros: Int64 = random.chance(0.7) ? 0 : Int64(random.int(0...86_399_999_999))
        return Timestamp(microsecondsSince1970: epoch.microsecondsSince1970 + day + micros)
    }
}

/// One object of the random data set, independent of any store.
struct WorkshopObject {
    var entity: String
    var attributes: [String: Value]
    /// Indexes into the data set's boxes and tags.
    var box: Int?
    var parent: Int?
    var tags: [Int] = []
}

/// A random data set, and the saves that put it into a store: the objects in one save, then a
/// second save that updates some things, deletes two things, a tag and a box (leaving the box's
/// things pointing at it, as a `noAction` rule would).
struct WorkshopData {
    var tags: [WorkshopObject] = []
    var boxes: [WorkshopObject] = []
    var things: [WorkshopObject] = []
    var updates: [(thing: Int, attributes: [String: Value])] = []

    init(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        for i in 0..<Workshop.tagCount {
            tags.append(
                WorkshopObject(
                    entity: "Tag", attributes: ["name": .string(i == 0 ? "Apple" : random.pick(ValuePools.strings))]))
        }
        for i in 0..<Workshop.boxCount {
            var attributes: [String: Value] = ["label": .string(random.pick(ValuePools.strings))]
            if random.chance(0.8) { attributes["weight"] = ValuePools.value(.double, &random) }
            if random.chance(0.8) { attributes["opened"] = ValuePools.value(.date, &random) }
            let parent = i > 0 && random.chance(0.6) ? random.int(0...(i - 1)) : nil
            boxes.append(WorkshopObject(entity: "Box", attributes: attributes, parent: parent))
        }
        for _ in 0..<Workshop.thingCount {
            let entity = random.pick(["Thing", "Thing", "Gadget", "Gizmo"])
            var thing = WorkshopObject(entity: entity, attributes: Self.attributes(entity, &random))
            thing.box = random.chance(0.85) ? random.int(0...(Workshop.boxCount - 1)) : nil
            thing.tags = Array(Set((0..<random.int(0...3)).map { _ in random.int(0...(Workshop.tagCount - 1)) }))
                .sorted()
            things.append(thing)
        }
        for _ in 0..<12 {
            let index = random.int(0...(Workshop.thingCount - 1))
            updates.append((index, Self.attributes(things[index].entity, &random, share: 0.25, isNew: false)))
        }
    }

    /// Random attributes of a thing of `entity`, each with probability `share` (its name always,
    /// for a new object). Chosen in schema order, so a seed gives the same attributes in every run.
    static func attributes(
        _ entity: String, _ random: inout SeededRandom, share: Double = 0.75,
        isNew: Bool = true
    ) -> [String: Value] {
        var attributes: [String: Value] = [:]
        for (name, type) in Workshop.attributes(of: entity) where (isNew && name == "name") || random.chance(share) {
            attributes[name] = ValuePools.value(type, &random)
        }
        return attributes
    }

    /// Saves the data set into `store`: keys 1… in each hierarchy, in the order of the arrays.
    func save(into store: TestStore) async throws {
        var c = store.changes(author: "loader")
        let tagIDs = tags.map { c.insert($0.entity, $0.attributes) }
        let boxIDs = boxes.map { c.insert($0.entity, $0.attributes) }
        for (box, id) in zip(boxes, boxIDs) {
            if let parent = box.parent { c.link(id, "parent", boxIDs[parent]) }
        }
        let thingIDs = things.map { c.insert($0.entity, $0.attributes) }
        for (thing, id) in zip(things, thingIDs) {
            if let box = thing.box { c.link(id, "box", boxIDs[box]) }
            for tag in thing.tags { c.link(id, "tags", tagIDs[tag]) }
        }
        let saved = try await store.save(c)

        var second = store.changes(author: "editor")
        for (index, attributes) in updates where ![3, 4].contains(index) {
            second.update(saved[thingIDs[index]], attributes)
        }
        second.update(saved[thingIDs[0]], ["name": .string("moved")])
        second.link(saved[thingIDs[0]], "box", saved[boxIDs[1]])
        for index in [3, 4] { second.delete(saved[thingIDs[index]]) }
        second.delete(saved[tagIDs[Workshop.tagCount - 1]])
        second.delete(saved[boxIDs[Workshop.boxCount - 1]])
        try await store.save(second)
    }
}
