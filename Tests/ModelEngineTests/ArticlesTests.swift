import Foundation
import ModelCore
import ModelEngine
import ModelFixtures
import Testing

/// SwiftDataKit's examples, pushed down to the store: a SUBQUERY count and a grouped count of
/// students by birth year, each checked against counting in Swift.
@Suite struct ArticlesTests {
    @Test(arguments: BackendKind.allCases)
    func subqueryCountsCollectionsWithAnArticleInACategory(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Articles.schema) { store in
            let context = store.context()
            var categories: [String: PersistentIdentifier] = [:]
            for name in ["tech", "health", "travel"] {
                categories[name] = try await context.insert("Category", attributes: ["name": .string(name)])
            }
            var generator = SeededRandom(seed: 7)
            var expected = 0
            for c in 0..<40 {
                let collection = try await context.insert("ArticleCollection", attributes: ["name": .string("c\(c)")])
                var hasTech = false
                for a in 0..<Int.random(in: 0...4, using: &generator) {
                    // the list is not empty
                    let category = ["tech", "health", "travel"].randomElement(using: &generator)!
                    hasTech = hasTech || category == "tech"
                    _ = try await context.insert(
                        "Article", attributes: ["name": .string("a\(c)-\(a)")],
                        relationships: ["category": .toOne(categories[category]), "collection": .toOne(collection)])
                }
                if hasTech { expected += 1 }
            }
            try await context.save()

            let predicate = try PredicateParser.parse(
                #"SUBQUERY(articles, $article, $article.category.name == "tech").@count > 0"#)
            let pushedDown = try await context.count(
                FetchDescriptor(entityName: "ArticleCollection", predicate: predicate))
            // The same count, fetching everything and counting in Swift.
            let everything = try await context.fetch(
                FetchDescriptor(entityName: "ArticleCollection", relationshipKeyPathsForPrefetching: ["articles"]))
            guard case .objects(let collections, let articles) = everything else {
                Issue.record("expected objects"); return
            }
            let techID = try #require(
                try await context.fetch(
                    FetchDescriptor(entityName: "Category", predicate: .equal("name", .string("tech")))
                ).objects.first?.id)
            let counted = collections.filter { collection in
                collection.toMany("articles").contains { id in
                    articles.first { $0.id == id }?.toOne("category") == techID
                }
            }.count
            #expect(pushedDown == expected)
            #expect(counted == expected)
            #expect(expected > 0 && expected < 40)
        }
    }

    @Test(arguments: BackendKind.allCases)
    func groupedCountOfStudentsByBirthYear(_ kind: BackendKind) async throws {
        try await withStore(kind, schema: Articles.schema) { store in
            let context = store.context()
            var generator = SeededRandom(seed: 42)
            var expected: [Int64: Int] = [:]
            for n in 0..<500 {
                let year = Int64.random(in: 1995...2005, using: &generator)
                expected[year, default: 0] += 1
                _ = try await context.insert(
                    "Student", attributes: ["name": .string("s\(n)"), "birthOfYear": .int(year)])
            }
            try await context.save()
            let rows = try await context.aggregate(
                AggregateDescriptor(
                    entityName: "Student", groupBy: ["birthOfYear"], aggregations: [Aggregation("count", .count)]))
            var pushedDown: [Int64: Int] = [:]
            for row in rows {
                guard case .int(let year)? = row["birthOfYear"], case .int(let count)? = row["count"] else {
                    Issue.record("unexpected row \(row)")
                    continue
                }
                pushedDown[year] = Int(count)
            }
            // Counting client-side, as SwiftData makes you do.
            let students = try await context.fetch(FetchDescriptor(entityName: "Student")).objects
            let counted = Dictionary(grouping: students) { $0["birthOfYear"] }.mapValues(\.count)
            #expect(pushedDown == expected)
            #expect(counted.count == expected.count)
            #expect(rows.map { $0["birthOfYear"] } == expected.keys.sorted().map { .int($0) })
        }
    }
}
