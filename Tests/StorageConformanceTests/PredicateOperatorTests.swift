import Foundation
import ModelCore
import ModelFixtures
import Testing

/// Every comparison operator and string option, nil semantics and arithmetic, on the six items
/// of ``Datasets/items(_:)``: Apple, apricot, Banana, Crème brûlée, creme brulee, Zebra*?.
@Suite struct PredicateOperatorTests {
    static let all = ["Apple", "apricot", "Banana", "Crème brûlée", "creme brulee", "Zebra*?"]

    @Test(arguments: BackendKind.allCases)
    func comparisonsAndNil(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            try await expectMatches(
                store, "Item", key: "title",
                [
                    ("title == \"Apple\"", ["Apple"]),
                    ("title == \"apple\"", []),
                    ("title != \"Apple\"", ["apricot", "Banana", "Crème brûlée", "creme brulee", "Zebra*?"]),
                    ("label == nil", ["Banana"]),
                    ("label != nil", ["Apple", "apricot", "Crème brûlée", "creme brulee", "Zebra*?"]),
                    ("nil == label", ["Banana"]),
                    ("count < 5", ["apricot", "creme brulee"]),
                    ("count <= 5", ["Apple", "apricot", "creme brulee"]),
                    ("count > 5", ["Crème brûlée", "Zebra*?"]),
                    ("count >= 12", ["Crème brûlée", "Zebra*?"]),
                    ("5 > count", ["apricot", "creme brulee"]),
                    ("count == nil", ["Banana"]),
                    ("count != 5", ["apricot", "Banana", "Crème brûlée", "creme brulee", "Zebra*?"]),
                    ("price == 7", ["Crème brûlée"]),
                    ("price > 7", ["creme brulee", "Zebra*?"]),
                    ("price < 1", ["Banana"]),
                    ("price >= 1.5", ["Apple", "Crème brûlée", "creme brulee", "Zebra*?"]),
                    ("inStock == true", ["Apple", "Crème brûlée"]),
                    ("inStock == false", ["apricot", "creme brulee"]),
                    ("inStock != true", ["apricot", "Banana", "creme brulee", "Zebra*?"]),
                    ("rank == 0", ["Banana"]),
                    ("count == price", []),
                    ("rank < count", ["Apple", "Crème brûlée", "Zebra*?"]),
                    ("TRUEPREDICATE", Self.all),
                    ("FALSEPREDICATE", []),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func notIsTrueExactlyWhenTheComparisonIsFalse(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            try await expectMatches(
                store, "Item", key: "title",
                [
                    ("NOT (count < 5)", ["Apple", "Banana", "Crème brûlée", "Zebra*?"]),
                    ("NOT (label == \"fruit\")", ["apricot", "Banana", "Crème brûlée", "creme brulee", "Zebra*?"]),
                    ("NOT (label != nil)", ["Banana"]),
                    ("NOT (title CONTAINS \"x\") AND NOT (price > 1)", ["apricot", "Banana"]),
                    ("NOT (count BETWEEN {0, 12})", ["Banana", "creme brulee", "Zebra*?"]),
                    (
                        "NOT (label == \"dessert\" AND count > 0)",
                        ["Apple", "apricot", "Banana", "creme brulee", "Zebra*?"]
                    ),
                    ("NOT (label == \"dessert\" OR count == nil)", ["Apple", "apricot", "Zebra*?"]),
                    ("NOT NOT (count < 5)", ["apricot", "creme brulee"]),
                    ("title == \"Apple\" OR count == 100", ["Apple", "Zebra*?"]),
                    ("label == \"dessert\" AND count > 0", ["Crème brûlée"]),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func inAndBetween(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            try await expectMatches(
                store, "Item", key: "title",
                [
                    ("count BETWEEN {0, 12}", ["Apple", "apricot", "Crème brûlée"]),
                    ("count BETWEEN {-3, -3}", ["creme brulee"]),
                    ("count BETWEEN {12, 0}", []),
                    ("price BETWEEN {1, 7.5}", ["Apple", "Crème brûlée", "creme brulee"]),
                    ("added BETWEEN {\"2026-01-01\", \"2026-02-01\"}", ["Apple", "apricot"]),
                    ("title BETWEEN {\"B\", \"a\"}", ["Banana", "Crème brûlée", "Zebra*?"]),
                    ("count IN {5, 100, 7}", ["Apple", "Zebra*?"]),
                    ("count IN {}", []),
                    ("count IN {5.0}", ["Apple"]),
                    ("label IN {\"fruit\", nil}", ["Apple", "Banana"]),
                    ("label IN {\"fruit\", \"toy\"}", ["Apple", "Zebra*?"]),
                    ("label IN[c] {\"FRUIT\"}", ["Apple", "apricot"]),
                    ("rank IN {1}", ["Apple", "Zebra*?"]),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func stringOperatorsAndOptions(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            try await expectMatches(
                store, "Item", key: "title",
                [
                    ("title ==[c] \"apple\"", ["Apple"]),
                    ("title ==[c] \"CRÈME BRÛLÉE\"", ["Crème brûlée"]),
                    ("title ==[d] \"Creme brulee\"", ["Crème brûlée"]),
                    ("title ==[cd] \"CREME BRULEE\"", ["Crème brûlée", "creme brulee"]),
                    ("title !=[c] \"APPLE\"", ["apricot", "Banana", "Crème brûlée", "creme brulee", "Zebra*?"]),
                    ("title CONTAINS \"an\"", ["Banana"]),
                    ("title CONTAINS[c] \"AP\"", ["Apple", "apricot"]),
                    ("title CONTAINS \"\"", Self.all),
                    ("title CONTAINS \"rûl\"", ["Crème brûlée"]),
                    ("title CONTAINS[d] \"rul\"", ["Crème brûlée", "creme brulee"]),
                    ("title BEGINSWITH \"Cr\"", ["Crème brûlée"]),
                    ("title BEGINSWITH[d] \"Creme\"", ["Crème brûlée"]),
                    ("title BEGINSWITH[cd] \"creme\"", ["Crème brûlée", "creme brulee"]),
                    ("title ENDSWITH \"ée\"", ["Crème brûlée"]),
                    ("title ENDSWITH[d] \"ee\"", ["Crème brûlée", "creme brulee"]),
                    ("title ENDSWITH \"\"", Self.all),
                    ("title LIKE \"A*\"", ["Apple"]),
                    ("title LIKE[c] \"a*\"", ["Apple", "apricot"]),
                    ("title LIKE \"?anana\"", ["Banana"]),
                    ("title LIKE \"*e\"", ["Apple", "Crème brûlée", "creme brulee"]),
                    ("title LIKE \"Cr?me*\"", ["Crème brûlée"]),
                    (#"title LIKE "Zebra\\*\\?""#, ["Zebra*?"]),
                    (#"title LIKE "Zebra\\*""#, []),
                    ("title LIKE \"Zebra**\"", ["Zebra*?"]),
                    ("title LIKE \"apple\"", []),
                    ("sku BEGINSWITH \"A-\"", ["Apple", "apricot"]),
                    ("sku ==[c] \"c-1\"", ["Crème brûlée", "creme brulee"]),
                    ("label CONTAINS \"ui\"", ["Apple", "apricot"]),
                    ("NOT (label CONTAINS \"ui\")", ["Banana", "Crème brûlée", "creme brulee", "Zebra*?"]),
                ])
        }
    }

    /// Strings order by their UTF-8 bytes (every upper-case ASCII letter before every lower-case
    /// one, accented letters after both), not by a locale.
    @Test(arguments: BackendKind.allCases)
    func stringsCompareByBytes(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            try await expectMatches(
                store, "Item", key: "title",
                [
                    ("title < \"a\"", ["Apple", "Banana", "Crème brûlée", "Zebra*?"]),
                    ("title > \"Zzz\"", ["apricot", "creme brulee"]),
                    ("title > \"Crz\" AND title < \"Cs\"", ["Crème brûlée"]),
                    ("title >=[c] \"b\" AND title <[c] \"d\"", ["Banana", "Crème brûlée", "creme brulee"]),
                ])
            // "e\u{301}" (e + combining grave) is canonically equal to "é" in Swift, not in bytes.
            var c = store.changes()
            c.insert("Item", ["title": .string("Cre\u{300}me")])
            try await store.save(c)
            #expect(try await store.values("Item", "title == \"Crème\"", key: "title").isEmpty)
            #expect(try await store.values("Item", "title == \"Cre\u{300}me\"", key: "title") == ["Cre\u{300}me"])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func otherAttributeTypes(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            try await expectMatches(
                store, "Item", key: "title",
                [
                    ("added > \"2026-01-01\"", ["apricot", "Zebra*?"]),
                    ("added >= \"2026-01-01T00:00:00Z\"", ["Apple", "apricot", "Zebra*?"]),
                    ("added < \"2026-01-01\"", ["Crème brûlée"]),
                    ("added == \"2025-12-31T23:59:59.999999Z\"", ["Crème brûlée"]),
                    ("added == \"2027-06-15T14:00:00.5+02:00\"", ["Zebra*?"]),
                    ("added == nil", ["Banana", "creme brulee"]),
                    ("amount == 10.25", ["Apple", "Crème brûlée"]),
                    ("amount > 1", ["Apple", "Crème brûlée"]),
                    ("amount < 1", ["apricot"]),
                    ("amount == nil", ["Banana", "creme brulee", "Zebra*?"]),
                    ("code == CAST(\"\(Datasets.uuid1.uuidString)\", \"uuid\")", ["Apple"]),
                    ("code == \"\(Datasets.uuid1.uuidString.lowercased())\"", ["Apple"]),
                    ("link == CAST(\"https://example.com/a?x=1\", \"url\")", ["Apple"]),
                    ("meta == '{\"k\":1}'", ["Apple"]),
                    ("meta == '{\"k\": 1}'", []),
                    ("blob == CAST(\"AAEC\", \"data\")", ["Apple"]),
                    ("blob != nil", ["Apple"]),
                ])
        }
    }

    @Test(arguments: BackendKind.allCases)
    func arithmetic(_ kind: BackendKind) async throws {
        try await withStore(kind, Catalog.schema) { store in
            try await Datasets.items(store)
            try await expectMatches(
                store, "Item", key: "title",
                [
                    ("count + price > 10", ["Crème brûlée", "Zebra*?"]),
                    ("count - 1 == -4", ["creme brulee"]),
                    ("price * 2 == 15", ["creme brulee"]),
                    ("(count + 1) * 2 == 12", ["Apple"]),
                    ("count / 2 == 2.5", ["Apple"]),
                    ("count / 4 == 0", ["apricot"]),
                    ("count / 0 == nil", Self.all),
                    ("price / 0 == nil", Self.all),
                    ("count + 1 == nil", ["Banana"]),
                    // Int overflow turns the result into a double instead of wrapping.
                    ("count * 9223372036854775807 > 9223372036854775807", ["Apple", "Crème brûlée", "Zebra*?"]),
                    ("count + 9223372036854775807 < 0", []),
                    ("rank * rank == 9", ["Crème brûlée", "creme brulee"]),
                ])
        }
    }
}
