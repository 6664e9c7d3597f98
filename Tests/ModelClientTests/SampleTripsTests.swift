import Foundation
import ModelClient
import Testing

/// Apple's SampleTrips, on the daemon and on an embedded SQLite file, with the same test bodies.
@Suite struct SampleTripsTests {
    @Test(arguments: Backend.allCases)
    func insertSaveAndFetchSorted(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            let paris = Trip(
                name: "Paris", destination: "France", startDate: day("2026-03-01"), endDate: day("2026-03-10"))
            let kyoto = PersonalTrip(
                name: "Kyoto", destination: "Japan", startDate: day("2026-04-01"), endDate: day("2026-04-09"),
                reason: .family)
            let berlin = BusinessTrip(
                name: "Berlin", destination: "Germany", startDate: day("2026-02-01"), endDate: day("2026-02-03"),
                perdiem: 120)
            context.insert(paris)
            context.insert(kyoto)
            context.insert(berlin)
            #expect(context.hasChanges && context.insertedModelsArray.count == 3)
            #expect(paris.persistentModelID.isTemporary && paris.modelContext === context)
            try await context.save()
            #expect(!context.hasChanges && context.insertedModelsArray.isEmpty)
            #expect(!paris.persistentModelID.isTemporary)
            #expect(paris.persistentModelID.storeIdentifier == container.storeIdentifier)

            // Another context reads them back from the store, with their classes.
            let reader = ModelContext(container)
            let trips = try await reader.fetch(
                FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.startDate, order: .forward)]))
            #expect(trips.map(\.name) == ["Berlin", "Paris", "Kyoto"])
            #expect(trips.map { String(describing: type(of: $0)) } == ["BusinessTrip", "Trip", "PersonalTrip"])
            #expect((trips[0] as? BusinessTrip)?.perdiem == 120)
            #expect((trips[2] as? PersonalTrip)?.reason == .family)
            #expect(trips[1].endDate == day("2026-03-10"))
            #expect(trips.map(\.persistentModelID) == [berlin, paris, kyoto].map(\.persistentModelID))
            // Fetching again gives the same objects.
            let again = try await reader.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name, order: .reverse)]))
            #expect(again.map(\.name) == ["Paris", "Kyoto", "Berlin"] && again[0] === trips[1])
            // Subclasses fetch their own.
            #expect(try await reader.fetch(FetchDescriptor<PersonalTrip>()).map(\.name) == ["Kyoto"])
            #expect(try await reader.fetchCount(FetchDescriptor<BusinessTrip>()) == 1)
            var page = FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)])
            page.fetchOffset = 1
            page.fetchLimit = 1
            #expect(try await reader.fetch(page).map(\.name) == ["Kyoto"])
            #expect(try await reader.fetchIdentifiers(page) == [kyoto.persistentModelID])
        }
    }

    @Test(arguments: Backend.allCases)
    func relationshipsAndInverses(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            let trip = Trip(
                name: "Lisbon", destination: "Portugal", startDate: day("2026-05-01"), endDate: day("2026-05-05"))
            context.insert(trip)
            let tram = BucketListItem(title: "Tram 28", details: "", hasReservation: false, isInPlan: true)
            let fado = BucketListItem(title: "Fado", details: "Alfama", hasReservation: true, isInPlan: true)
            trip.bucketList.append(tram)
            // Given a related object in a context, an object joins it.
            fado.trip = trip
            #expect(fado.modelContext === context)
            #expect(trip.bucketList.map(\.title).sorted() == ["Fado", "Tram 28"])
            #expect(tram.trip === trip)
            let stay = LivingAccommodation(address: "Rua Augusta 1", placeName: "Hotel", isConfirmed: false)
            trip.livingAccommodation = stay
            #expect(stay.trip === trip)
            try await context.save()

            let reader = ModelContext(container)
            let fetched = try #require(try await reader.fetch(FetchDescriptor<Trip>()).first)
            #expect(Set(fetched.bucketList.map(\.title)) == ["Fado", "Tram 28"])
            #expect(fetched.livingAccommodation?.placeName == "Hotel")
            #expect(fetched.bucketList.allSatisfy { $0.trip === fetched })

            // Moving an item to another trip takes it out of the first one's list.
            let porto = Trip(
                name: "Porto", destination: "Portugal", startDate: day("2026-06-01"), endDate: day("2026-06-03"))
            reader.insert(porto)
            let moved = try #require(fetched.bucketList.first { $0.title == "Fado" })
            moved.trip = porto
            #expect(fetched.bucketList.map(\.title) == ["Tram 28"] && porto.bucketList.map(\.title) == ["Fado"])
            try await reader.save()
            let check = ModelContext(container)
            let lists = try await check.fetch(FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)])).map {
                $0.bucketList.map(\.title)
            }
            #expect(lists == [["Tram 28"], ["Fado"]])
        }
    }

    @Test(arguments: Backend.allCases)
    func deletingATripCascadesAndKeepsItsTombstone(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            let trip = Trip(
                name: "Oslo", destination: "Norway", startDate: day("2026-07-01"), endDate: day("2026-07-04"))
            context.insert(trip)
            trip.bucketList = [BucketListItem(title: "Fjord", details: "", hasReservation: false, isInPlan: true)]
            trip.livingAccommodation = LivingAccommodation(
                address: "Karl Johans gate 31", placeName: "Grand", isConfirmed: true)
            try await context.save()
            let token = try await container.currentHistoryToken()
            let item = trip.bucketList[0]

            context.delete(trip)
            #expect(context.deletedModelsArray.count == 1 && trip.isDeleted)
            try await context.save()
            #expect(item.isDeleted && item.modelContext == nil)
            #expect(try await context.fetchCount(FetchDescriptor<BucketListItem>()) == 0)
            #expect(try await context.fetchCount(FetchDescriptor<LivingAccommodation>()) == 0)

            let history = try await context.fetchHistory(after: token)
            let deletes = history.flatMap(\.changes).filter {
                if case .delete = $0 { return true }
                return false
            }
            #expect(deletes.count == 3)
            let tripDeletes = deletes.compactMap { change -> DefaultHistoryDelete<Trip>? in
                if case .delete(let delete as DefaultHistoryDelete<Trip>) = change { return delete }
                return nil
            }
            let tripDelete = try #require(tripDeletes.first)
            #expect(tripDeletes.count == 1 && tripDelete.changedPersistentIdentifier.entityName == "Trip")
            #expect(tripDelete.tombstone[\.name] == "Oslo")
            #expect(tripDelete.tombstone[\.startDate] == day("2026-07-01"))
            #expect(tripDelete.tombstone[\.destination] == nil)
            #expect(HistoryChange.delete(tripDelete).isChange(of: Trip.self))
        }
    }

    /// SwiftData's `#Unique`: an insert that repeats a stored object's unique values updates it,
    /// and the inserted object becomes it.
    @Test(arguments: Backend.everyKind)
    func anInsertThatRepeatsUniqueValuesUpdatesTheStoredTrip(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            #expect(context.uniquenessPolicy == .upsert)
            let rome = Trip(
                name: "Rome", destination: "Italy", startDate: day("2026-08-01"), endDate: day("2026-08-05"))
            rome.bucketList.append(
                BucketListItem(title: "Forum", details: "", hasReservation: false, isInPlan: true))
            context.insert(rome)
            try await context.save()
            let token = try #require(try await context.fetchHistory(HistoryDescriptor()).last?.token)

            // Inserted beside the object it repeats, in the same context.
            let twin = Trip(
                name: "Rome", destination: "Italia", startDate: day("2026-08-01"), endDate: day("2026-08-05"))
            context.insert(twin)
            try await context.save()
            #expect(twin.persistentModelID == rome.persistentModelID)
            #expect(rome.destination == "Italia" && twin.destination == "Italia")
            // Its to-many relationships add to the stored object's: the item is still there.
            #expect(twin.bucketList.map(\.title) == ["Forum"])
            let upsert = try #require(try await context.fetchHistory(HistoryDescriptor(after: token)).first)
            #expect(upsert.changes.count == 1)
            if case .update(let update) = upsert.changes.first {
                #expect(update.changedPersistentIdentifier == rome.persistentModelID)
            } else {
                Issue.record("the upsert is recorded as \(String(describing: upsert.changes.first))")
            }
            // Both objects are the stored trip from then on: a change through either is read
            // through both and saved (a change through the twin was dropped, the save a success).
            twin.destination = "Lazio"
            #expect(rome.destination == "Lazio")
            try await context.save()
            #expect(try await ModelContext(container).fetch(FetchDescriptor<Trip>()).map(\.destination) == ["Lazio"])
            rome.destination = "Italia"
            #expect(twin.destination == "Italia")
            try await context.save()
            #expect(try await ModelContext(container).fetch(FetchDescriptor<Trip>()).map(\.destination) == ["Italia"])

            // Inserted in a context that never saw it.
            let other = ModelContext(container)
            let third = Trip(
                name: "Rome", destination: "Roma", startDate: day("2026-08-01"), endDate: day("2026-08-05"))
            other.insert(third)
            try await other.save()
            #expect(third.persistentModelID == rome.persistentModelID)
            #expect(third.destination == "Roma" && third.bucketList.count == 1)
            let trips = try await ModelContext(container).fetch(FetchDescriptor<Trip>())
            #expect(trips.map(\.destination) == ["Roma"])
        }
    }

    /// SwiftData's `transaction { }`: the block's changes are saved when it returns, and rolled
    /// back when it throws.
    @Test(arguments: Backend.everyKind)
    func aTransactionSavesItsBlockOrNothing(backend: Backend) async throws {
        struct Cancelled: Error {}
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            try await context.transaction {
                context.insert(
                    Trip(name: "Oslo", destination: "Norway", startDate: day("2026-05-01"), endDate: day("2026-05-02")))
                // Fetches inside the block see its changes.
                let seen = try await context.fetchCount(FetchDescriptor<Trip>())
                #expect(seen == 1)
            }
            #expect(!context.hasChanges)
            #expect(try await ModelContext(container).fetchCount(FetchDescriptor<Trip>()) == 1)

            let bergen = Trip(
                name: "Bergen", destination: "Norway", startDate: day("2026-05-03"), endDate: day("2026-05-04"))
            await #expect(throws: Cancelled.self) {
                try await context.transaction {
                    context.insert(bergen)
                    _ = try await context.fetchCount(FetchDescriptor<Trip>()) // sent to the unit of work
                    throw Cancelled()
                }
            }
            #expect(!context.hasChanges && bergen.modelContext == nil)
            #expect(try await context.fetchCount(FetchDescriptor<Trip>()) == 1)
            #expect(try await ModelContext(container).fetchCount(FetchDescriptor<Trip>()) == 1)
        }
    }

    /// Core Data's batch update: values set in the store at once, without loading the objects.
    @Test(arguments: Backend.everyKind)
    func aBatchUpdateSetsValuesInTheStore(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            let oslo = Trip(
                name: "Oslo", destination: "Norway", startDate: day("2026-05-01"), endDate: day("2026-05-02"))
            context.insert(oslo)
            context.insert(
                BusinessTrip(
                    name: "Bergen", destination: "Norway", startDate: day("2026-05-03"), endDate: day("2026-05-04"),
                    perdiem: 90))
            context.insert(
                Trip(name: "Lund", destination: "Sweden", startDate: day("2026-05-05"), endDate: day("2026-05-06")))
            try await context.save()
            let before = try await context.fetchHistory(HistoryDescriptor()).last?.token

            let matched = try await context.update(
                model: Trip.self, where: #Predicate { $0.destination == "Norway" }, set: [\.destination: "Norge"])
            #expect(matched == 2)
            // The object the context holds reads the stored value, with nothing left to save.
            #expect(oslo.destination == "Norge" && !context.hasChanges)
            let stored = try await ModelContext(container).fetch(
                FetchDescriptor<Trip>(sortBy: [SortDescriptor(\.name)]))
            #expect(stored.map(\.destination) == ["Norge", "Sweden", "Norge"])
            let batch = try #require(try await context.fetchHistory(HistoryDescriptor(after: before)).first)
            #expect(batch.changes.count == 2)

            let relationship = await modelError {
                try await context.update(model: Trip.self, set: [\.bucketList: 1])
            }
            #expect(relationship?.code == .invalidArgument)
            let mistyped = await modelError { try await context.update(model: Trip.self, set: [\.name: 42]) }
            #expect(mistyped?.code == .typeMismatch, "\(String(describing: mistyped))")
            #expect(
                try await ModelContext(container).fetchCount(
                    FetchDescriptor<Trip>(predicate: #Predicate { $0.name == "Oslo" })) == 1)
        }
    }

    @Test(arguments: Backend.everyKind)
    func uniqueConstraintRefusesTheSaveAndKeepsTheChanges(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            context.uniquenessPolicy = .error
            context.insert(
                Trip(name: "Rome", destination: "Italy", startDate: day("2026-08-01"), endDate: day("2026-08-05")))
            try await context.save()
            let twin = Trip(
                name: "Rome", destination: "Italia", startDate: day("2026-08-01"), endDate: day("2026-08-05"))
            context.insert(twin)
            let error = await modelError { try await context.save() }
            #expect(error?.code == .uniqueConstraint)
            #expect(error?.message.contains("name") == true, "\(String(describing: error))")
            // Nothing was written; the insert is still pending, to fix and save.
            #expect(context.hasChanges && twin.persistentModelID.isTemporary)
            twin.endDate = day("2026-08-06")
            try await context.save()
            #expect(try await ModelContext(container).fetchCount(FetchDescriptor<Trip>()) == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func rollbackRestoresSavedValuesAndDropsInserts(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            let trip = Trip(
                name: "Vienna", destination: "Austria", startDate: day("2026-09-01"), endDate: day("2026-09-03"))
            context.insert(trip)
            try await context.save()
            trip.destination = "Österreich"
            let extra = Trip(
                name: "Graz", destination: "Austria", startDate: day("2026-09-04"), endDate: day("2026-09-05"))
            context.insert(extra)
            trip.bucketList.append(BucketListItem(title: "Opera", details: "", hasReservation: true, isInPlan: true))
            #expect(trip.changedPropertyNames == ["destination", "bucketList"])
            // A fetch sends the changes to the unit of work, so it sees them…
            #expect(try await context.fetchCount(FetchDescriptor<Trip>()) == 2)
            #expect(
                try await context.fetch(FetchDescriptor<Trip>(predicate: #Predicate { $0.destination == "Österreich" }))
                    .count == 1)
            // …and a rollback discards them there too.
            await context.rollback()
            #expect(!context.hasChanges)
            #expect(trip.destination == "Austria" && trip.bucketList.isEmpty && !trip.hasChanges)
            #expect(extra.modelContext == nil)
            #expect(try await context.fetchCount(FetchDescriptor<Trip>()) == 1)
            try await context.save()
            #expect(try await ModelContext(container).fetch(FetchDescriptor<Trip>()).map(\.destination) == ["Austria"])
        }
    }

    @Test(arguments: Backend.allCases)
    func theSamplesFilteredBucketList(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            for (name, titles) in [
                ("Lisbon", ["Tram ride", "Fado night", "Tile museum"]), ("Porto", ["Port tasting", "Tram museum"]),
            ] {
                let trip = Trip(name: name, destination: "Portugal")
                context.insert(trip)
                trip.bucketList = titles.map {
                    BucketListItem(title: $0, details: "", hasReservation: false, isInPlan: false)
                }
            }
            try await context.save()

            // The sample's search: items of one trip whose title contains the search text.
            let searchText = "museum"
            let tripName = "Lisbon"
            var descriptor = FetchDescriptor<BucketListItem>()
            descriptor.predicate = #Predicate { item in
                item.title.contains(searchText) && tripName == item.trip?.name
            }
            let filteredList = try await context.fetch(descriptor)
            #expect(filteredList.map(\.title) == ["Tile museum"])
        }
    }

    @Test(arguments: Backend.allCases)
    func objectsMoveBetweenContextsByIdentifier(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let writer = ModelContext(container)
            let trip = PersonalTrip(
                name: "Hanoi", destination: "Vietnam", startDate: day("2026-10-01"), endDate: day("2026-10-09"),
                reason: .wellness)
            writer.insert(trip)
            try await writer.save()
            let id = trip.persistentModelID
            // Identifiers are Codable and have a URI form: what crosses isolation and processes.
            let decoded = try JSONDecoder().decode(PersistentIdentifier.self, from: JSONEncoder().encode(id))
            let parsed = try PersistentIdentifier(uri: id.uriRepresentation)
            #expect(decoded == id && parsed == id)

            let reader = ModelContext(container)
            #expect(reader.registeredModel(for: id) as Trip? == nil)
            let found = try #require(try await reader.model(for: parsed, as: PersonalTrip.self))
            #expect(found.reason == .wellness && found !== trip)
            #expect(reader.registeredModel(for: id) as PersonalTrip? === found)
            #expect(try await reader.model(for: id, as: BusinessTrip.self) == nil)

            writer.delete(trip)
            try await writer.save()
            #expect(try await ModelContext(container).model(for: id) == nil)
        }
    }

    @Test(arguments: Backend.allCases)
    func deleteMatchingAPredicate(backend: Backend) async throws {
        try await backend.withContainer(for: sampleTripsModels) { container in
            let context = ModelContext(container)
            for (name, start) in [("A", "2026-01-01"), ("B", "2026-02-01"), ("C", "2026-03-01")] {
                context.insert(Trip(name: name, destination: "X", startDate: day(start), endDate: day(start)))
            }
            try await context.save()
            let cutoff = day("2026-02-15")
            try await context.delete(model: Trip.self, where: #Predicate { $0.startDate < cutoff })
            #expect(context.deletedModelsArray.map { ($0 as? Trip)?.name } == ["A", "B"])
            try await context.save()
            #expect(try await ModelContext(container).fetch(FetchDescriptor<Trip>()).map(\.name) == ["C"])
        }
    }
}
