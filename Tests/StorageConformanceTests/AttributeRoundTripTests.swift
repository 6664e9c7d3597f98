import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Every attribute type comes back exactly as it was saved.
@Suite struct AttributeRoundTripTests {
    /// Values of every type of `Catalog.Item`, at their edges.
    static let samples: [[String: Value]] = [
        [
            "title": .string("tab\tnewline\n quote\" backslash\\ emoji 🎉 é e\u{301} 中文"),
            "rank": .int(.max), "sku": .string(""), "label": .string(String(repeating: "x", count: 10_000)),
            "count": .int(.min), "price": .double(.pi), "inStock": .bool(true),
            "added": .date(Timestamp(microsecondsSince1970: 1_767_225_600_123_457)),
            "blob": .data(Data([0, 255, 0, 1, 127, 128])), "code": .uuid(Datasets.uuid1),
            "link": .url(URL(string: "https://example.com/a%20b?q=1&r=%C3%A9#frag")!), // a literal URL
            "amount": .decimal(Decimal(string: "12345678901234567890.123456789")!), // a literal decimal
            "meta": .json(#"{"b": [1, 2.50, "x"], "a": null}"#),
        ],
        [
            "title": .string("negative"), "rank": .int(-1), "count": .int(0), "price": .double(-1e-300),
            "inStock": .bool(false), "added": .date(Timestamp(microsecondsSince1970: -1)),
            "blob": .data(Data()), "code": .uuid(UUID(uuidString: "FFFFFFFF-0000-4000-8000-000000000001")!), // literal
            "link": .url(URL(string: "file:///tmp/x")!), "amount": .decimal(Decimal(string: "-0.000001")!), // literals
            "meta": .json("[]"),
        ],
        [
            "title": .string("extremes"), "rank": .int(0), "price": .double(.greatestFiniteMagnitude),
            "added": .date(Timestamp(microsecondsSince1970: -62_135_596_800_000_000)), // 0001-01-01
            "amount": .decimal(Decimal(string: "0.1")!), "meta": .json("\"text\""), // a literal decimal
        ],
    ]

    @Test(arguments: BackendKind.allCases)
    func everyTypeRoundTripsExactly(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let ids = Self.samples.map { c.insert("Item", $0) }
            let saved = try await store.save(c)
            let attributes = Catalog.schema.entity(named: "Item")?.attributes ?? []
            for (id, sample) in zip(ids, Self.samples) {
                let snapshot = try await store.snapshot(saved[id])
                for attribute in attributes {
                    let expected = sample[attribute.name] ?? attribute.defaultValue ?? .null
                    #expect(snapshot[attribute.name] == expected, "\(attribute.name)")
                }
                #expect(snapshot.attributes.count == attributes.count)
            }
            // And they match themselves in predicates.
            for (id, sample) in zip(ids, Self.samples) {
                for (name, value) in sample {
                    let predicate = Predicate.comparison(
                        Comparison(.keyPath(PropertyPath([name])), .equal, .literal(value)))
                    let found = try await store.backend.fetch(
                        FetchDescriptor(entityName: "Item", predicate: predicate, resultType: .identifiers))
                    #expect(found.identifiers.contains(saved[id]), "\(name) == \(value.debugText)")
                }
            }
        }
    }

    /// Values convert to their attribute's type where nothing is lost, as `Value.converted(to:)`
    /// does; missing attributes take their default.
    @Test(arguments: BackendKind.allCases)
    func valuesConvertToTheirAttributeType(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let id = c.insert(
                "Item",
                [
                    "title": .string("converted"), "price": .int(3), "count": .double(4),
                    "added": .string("2026-01-31T12:00:00.5Z"), "amount": .int(7), "inStock": .int(1),
                    "code": .string(Datasets.uuid1.uuidString.lowercased()),
                ])
            let saved = try await store.save(c)
            let snapshot = try await store.snapshot(saved[id])
            #expect(snapshot["price"] == .double(3))
            #expect(snapshot["count"] == .int(4))
            #expect(snapshot["added"] == date("2026-01-31T12:00:00.5Z"))
            #expect(snapshot["amount"] == .decimal(7))
            #expect(snapshot["inStock"] == .bool(true))
            #expect(snapshot["code"] == .uuid(Datasets.uuid1))
            #expect(snapshot["rank"] == .int(0))
            #expect(snapshot["sku"] == .null)
        }
    }

    /// Negative zero is kept as zero (SQLite has no signed zero), and NaN is refused (SQLite would
    /// keep it as NULL), so every backend returns what every other does.
    @Test(arguments: BackendKind.allCases)
    func negativeZeroIsStoredAsZeroAndNaNIsRefused(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            var c = store.changes()
            let id = c.insert("Item", ["title": .string("zero"), "price": .double(-0.0)])
            let saved = try await store.save(c)
            guard case .double(let price) = try await store.snapshot(saved[id])["price"] else {
                Issue.record("price is not a double")
                return
            }
            #expect(price == 0 && price.sign == .plus)

            let before = try await store.dump()
            var bad = store.changes()
            bad.insert("Item", ["title": .string("nan"), "price": .double(.nan)])
            let error = await modelError { try await store.save(bad) }
            #expect(error?.code == .typeMismatch)
            #expect(error?.message.lowercased().contains("nan") == true, "\(String(describing: error))")
            #expect(error?.context["attribute"] == "price")
            #expect(try await store.dump() == before)
        }
    }

    /// Updates change only the attributes they name; setting nil clears.
    @Test(arguments: BackendKind.allCases)
    func updatesChangeOnlyWhatTheyName(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            let ids = try await Datasets.items(store)
            let before = try await store.snapshot(ids[0])
            var c = store.changes()
            c.update(ids[0], ["price": .null, "title": .string("Apple 2")])
            try await store.save(c)
            var expected = before
            expected.attributes["price"] = .null
            expected.attributes["title"] = .string("Apple 2")
            expected.version = 2
            #expect(try await store.snapshot(ids[0]) == expected)
        }
    }
}
