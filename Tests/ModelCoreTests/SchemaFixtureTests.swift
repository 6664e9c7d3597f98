import ModelCore
import ModelFixtures
import Testing

@Suite struct SchemaFixtureTests {
    @Test(arguments: [("SampleTrips", SampleTrips.schema), ("Articles", Articles.schema), ("Catalog", Catalog.schema)])
    func fixtureSchemasResolve(name: String, schema: Schema) throws {
        let resolved = try ResolvedSchema(schema)
        #expect(resolved.entityNames == schema.entities.map(\.name), "\(name)")
        #expect(resolved.versionHash.count == 64)
    }

    @Test func sampleTripsInheritanceAndStorage() throws {
        let schema = try ResolvedSchema(SampleTrips.schema)
        let business = try schema.entity("BusinessTrip")
        #expect(business.root == "Trip")
        #expect(business.attributes.map(\.name) == ["name", "destination", "startDate", "endDate", "perdiem"])
        #expect(business.uniqueConstraints == [["name", "startDate", "endDate"]])
        #expect(try schema.entity("Trip").descendants == ["Trip", "PersonalTrip", "BusinessTrip"])
        let bucketList = try #require(business.relationship("bucketList"))
        #expect(bucketList.storage == .inverseForeignKey(entity: "BucketListItem", relationship: "trip"))
        #expect(bucketList.inverse == "trip")
        let itemTrip = try #require(try schema.entity("BucketListItem").relationship("trip"))
        #expect(itemTrip.storage == .foreignKey)
        #expect(itemTrip.inverse == "bucketList")
        // One-to-one: the side whose "Entity.name" sorts first keeps the key.
        let accommodation = try #require(try schema.entity("Trip").relationship("livingAccommodation"))
        let accommodationTrip = try #require(try schema.entity("LivingAccommodation").relationship("trip"))
        #expect(accommodationTrip.storage == .foreignKey)
        #expect(accommodation.storage == .inverseForeignKey(entity: "LivingAccommodation", relationship: "trip"))
    }

    @Test func catalogJoinTables() throws {
        let schema = try ResolvedSchema(Catalog.schema)
        #expect(schema.joinTables.map(\.name) == ["_join_Author_books", "_join_Person_friends"])
        let books = try #require(try schema.entity("Author").relationship("books"))
        let authors = try #require(try schema.entity("Book").relationship("authors"))
        guard case .joinTable(let table, isOwner: true) = books.storage,
            case .joinTable(let same, isOwner: false) = authors.storage
        else {
            Issue.record("expected a join table owned by Author.books, got \(books.storage) and \(authors.storage)")
            return
        }
        #expect(table == same)
        #expect(authors.inverse == "books")
    }
}
