import Foundation
import ModelClient
import Testing

/// Seed 001 ("what SwiftData lacks and Core Data has"): its functions, written as the article
/// writes them with `await` added; what it does through Core Data's NSFetchRequest, done with
/// ModelClient's AggregateDescriptor and StorePredicate, and checked against its in-memory ways.
@ModelActor
actor StudentHandler {
    func birthYearCountByQuery() async throws -> [Int: Int] {
        let description = FetchDescriptor<Student>(sortBy: [.init(\Student.birthOfYear, order: .forward)])
        let students = (try? await modelContext.fetch(description)) ?? []
        let result: [Int: Int] = students.reduce(into: [:]) { result, student in
            let count = result[student.birthOfYear, default: 0]
            result[student.birthOfYear] = count + 1
        }
        return result
    }

    /// The article's birthYearCountByKit: grouped and counted by the store.
    func birthYearCountByStore() async throws -> [Int: Int] {
        var descriptor = AggregateDescriptor<Student>(groupBy: [\Student.birthOfYear], aggregates: [.count()])
        descriptor.sortBy = [(key: "birthOfYear", order: .forward)]
        let fetchResult = try await modelContext.aggregate(descriptor)
        let result: [Int: Int] = fetchResult.reduce(into: [:]) { result, element in
            result[element[\Student.birthOfYear]!] = element.count()
        }
        return result
    }
}

@ModelActor
actor ArticleHandler {
    func getCollectCountByCategoryByQuery(categoryName: String) async throws -> Int {
        guard let category = try await getCategory(by: categoryName) else {
            fatalError("Can't get tag by name:\(categoryName)")
        }
        let description = FetchDescriptor<ArticleCollection>()
        let collections = (try? await modelContext.fetch(description)) ?? []
        let count = collections.filter { collection in
            !(collection.articles).filter { article in
                article.category == category
            }.isEmpty
        }.count
        return count
    }

    /// The article's getCollectCountByCategoryByKit: the SUBQUERY counted by the store.
    func getCollectCountByCategoryByStore(categoryName: String) async throws -> Int {
        guard let category = try await getCategory(by: categoryName) else {
            fatalError("Can't get tag by name:\(categoryName)")
        }
        var description = FetchDescriptor<ArticleCollection>()
        description.storePredicate = try StorePredicate(
            "SUBQUERY(articles,$article,$article.category == %@).@count > 0", category)
        return try await modelContext.fetchCount(description)
    }

    /// The article's getCollectPersistentIdentifiersByTagByKit.
    func getCollectPersistentIdentifiersByTagByStore(categoryName: String) async throws -> [PersistentIdentifier] {
        guard let category = try await getCategory(by: categoryName) else {
            fatalError("Can't get tag by name:\(categoryName)")
        }
        var description = FetchDescriptor<ArticleCollection>(sortBy: [SortDescriptor(\.name)])
        description.storePredicate = try StorePredicate(
            "SUBQUERY(articles,$article,$article.category == %@).@count > 0", category)
        return try await modelContext.fetchIdentifiers(description)
    }

    // fetch category by name
    func getCategory(by name: String) async throws -> Category? {
        let predicate = #Predicate<Category> {
            $0.name == name
        }
        let categoryDescription = FetchDescriptor<Category>(predicate: predicate)
        return try? await modelContext.fetch(categoryDescription).first
    }

    func getCategory(by categoryID: PersistentIdentifier) async throws -> Category? {
        let predicate = #Predicate<Category> {
            $0.id == categoryID
        }
        let categoryDescription = FetchDescriptor<Category>(predicate: predicate)
        return try? await modelContext.fetch(categoryDescription).first
    }

    /// The article's convertIdentifierToModel, with a loop: the lookup is async.
    func convertIdentifierToModel<T: PersistentModel>(ids: [PersistentIdentifier], type: T.Type) async throws -> [T] {
        var models: [T] = []
        for id in ids { if let model = try await self[id, as: type] { models.append(model) } }
        return models
    }

    func names(of ids: [PersistentIdentifier]) async throws -> [String] {
        try await convertIdentifierToModel(ids: ids, type: ArticleCollection.self).map(\.name)
    }

    func categoryName(_ id: PersistentIdentifier) async throws -> String? {
        try await getCategory(by: id)?.name
    }

    func categoryID(_ name: String) async throws -> PersistentIdentifier? {
        try await getCategory(by: name)?.persistentModelID
    }
}

@Suite struct Seed001Tests {
    @Test(arguments: Backend.allCases)
    func groupedCountsByTheStoreMatchTheCountInMemory(backend: Backend) async throws {
        try await backend.withContainer(for: seed001Models) { container in
            let context = ModelContext(container)
            var random = SystemRandomNumberGenerator()
            for n in 0..<500 {
                context.insert(Student(name: "s\(n)", birthOfYear: Int.random(in: 1990...1999, using: &random)))
            }
            try await context.save()
            let handler = StudentHandler(modelContainer: container)
            let inMemory = try await handler.birthYearCountByQuery()
            #expect(inMemory.values.reduce(0, +) == 500)
            #expect(try await handler.birthYearCountByStore() == inMemory)
        }
    }

    @Test(arguments: Backend.allCases)
    func subqueryCountsAndIdentifiersMatchTheFilterInMemory(backend: Backend) async throws {
        try await backend.withContainer(for: seed001Models) { container in
            let context = ModelContext(container)
            let categories = Category.Name.allCases.map { Category(name: $0.rawValue) }
            for category in categories { context.insert(category) }
            for c in 0..<12 {
                let collection = ArticleCollection(name: String(format: "collection %02d", c))
                context.insert(collection)
                for a in 0..<(c % 4) {
                    // Collection c holds articles of categories (c + a) % 3, for a below c % 4.
                    collection.articles.append(Article(name: "a\(c)-\(a)", category: categories[(c + a) % 3]))
                }
            }
            try await context.save()
            let handler = ArticleHandler(modelContainer: container)
            for name in Category.Name.allCases.map(\.rawValue) {
                let inMemory = try await handler.getCollectCountByCategoryByQuery(categoryName: name)
                #expect(inMemory > 0)
                #expect(try await handler.getCollectCountByCategoryByStore(categoryName: name) == inMemory)
                let ids = try await handler.getCollectPersistentIdentifiersByTagByStore(categoryName: name)
                let names = try await handler.names(of: ids)
                #expect(names.count == inMemory && names == names.sorted())
            }
            let techID = try #require(try await handler.categoryID("tech"))
            #expect(try await handler.categoryName(techID) == "tech")
        }
    }
}
