import Foundation
import ModelCore
import ModelFixtures
import ModelStorage
@testable import SQLiteStorage
import Testing

/// Reads handed to a sink as rows (`fetchWithoutWaiting(_:into:)`, `objectsWithoutWaiting(for:into:)`),
/// as the daemon answers a small fetch or a point read: the same objects as `fetch(_:)` and
/// `snapshots(for:)`, as rows where the hierarchy's rows hold every relationship and as
/// snapshots otherwise, and given up when the sink is full.
@Suite struct ReadRowsWithoutWaitingTests {
    /// Vehicles (Car and Bike below Vehicle) with a value of every type and a to-one garage;
    /// a garage's vehicles are to-many, so its objects take a second statement.
    static let schema = Schema(entities: [
        EntityDescription(
            name: "Vehicle",
            attributes: [
                AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "wheels", type: .int, isOptional: true),
                AttributeDescription(name: "weight", type: .double, isOptional: true),
                AttributeDescription(name: "electric", type: .bool, isOptional: true),
                AttributeDescription(name: "built", type: .date, isOptional: true),
                AttributeDescription(name: "vin", type: .uuid, isOptional: true),
                AttributeDescription(name: "manual", type: .url, isOptional: true),
                AttributeDescription(name: "price", type: .decimal, isOptional: true),
                AttributeDescription(name: "spec", type: .json, isOptional: true),
                AttributeDescription(name: "photo", type: .data, isOptional: true),
            ],
            relationships: [RelationshipDescription(name: "garage", destination: "Garage", inverse: "vehicles")]),
        EntityDescription(
            name: "Car", superentity: "Vehicle", attributes: [AttributeDescription(name: "seats", type: .int)]),
        EntityDescription(
            name: "Bike", superentity: "Vehicle", attributes: [AttributeDescription(name: "gears", type: .int)]),
        EntityDescription(
            name: "Garage", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "vehicles", destination: "Vehicle", isToMany: true)]),
    ])

    /// What a read handed over, and how.
    struct Collected: ObjectRowSink {
        var rows: [ObjectSnapshot] = []
        var snapshots: [ObjectSnapshot] = []
        var capacity = Int.max
        var all: [ObjectSnapshot] { rows + snapshots }

        mutating func add(_ row: ObjectRow) -> Bool {
            rows.append(row.snapshot)
            return rows.count + snapshots.count < capacity
        }

        mutating func add(_ snapshot: ObjectSnapshot) -> Bool {
            snapshots.append(snapshot)
            return rows.count + snapshots.count < capacity
        }
    }

    /// The ids of a garage, a car in it, a bike in none and a plain vehicle.
    private func fill(_ store: SQLiteStore) async throws -> (
        garage: PersistentIdentifier, car: PersistentIdentifier,
        bike: PersistentIdentifier, vehicle: PersistentIdentifier
    ) {
        let garage = store.temporary("Garage"), car = store.temporary("Car")
        let bike = store.temporary("Bike"), vehicle = store.temporary("Vehicle")
        let saved = try await store.save(
            ChangeSet(inserts: [
                InsertedObject(id: garage, attributes: ["name": .string("north")]),
                InsertedObject(
                    id: car,
                    attributes: [
                        "name": .string("a car"), "wheels": .int(4), "weight": .double(1_250.5),
                        "electric": .bool(true),
                        "built": .date(Timestamp(microsecondsSince1970: 1_700_000_000_123_456)),
                        "vin": .uuid(UUID(uuidString: "6F1C2A3B-0000-4000-8000-0123456789AB")!),
                        "manual": .url(URL(string: "https://example.com/manual?page=2")!),
                        "price": .decimal(Decimal(string: "19999.95")!), "spec": .json(#"{"trim":"base"}"#),
                        "photo": .data(Data([0, 1, 2, 255])), "seats": .int(5),
                    ],
                    relationships: ["garage": .toOne(garage)]),
                InsertedObject(id: bike, attributes: ["name": .string("a bike é"), "gears": .int(21)]),
                InsertedObject(id: vehicle, attributes: ["name": .string("a cart")]),
            ]))
        func permanent(_ id: PersistentIdentifier) throws -> PersistentIdentifier {
            try #require(saved.remappedIdentifiers[id])
        }
        return (try permanent(garage), try permanent(car), try permanent(bike), try permanent(vehicle))
    }

    @Test func fetchesHandRowsOverAsFetchReturnsThem() async throws {
        try await withStore(Self.schema) { store, _ in
            let ids = try await fill(store)
            let byName = [SortDescriptor(PropertyPath(["name"]))]
            for descriptor in [
                FetchDescriptor(entityName: "Vehicle", sortBy: byName),
                FetchDescriptor(entityName: "Vehicle", sortBy: byName, includesSubentities: false),
                FetchDescriptor(entityName: "Car"),
                FetchDescriptor(entityName: "Vehicle", sortBy: byName, propertiesToFetch: ["name", "garage"]),
                FetchDescriptor(entityName: "Vehicle", predicate: try PredicateParser.parse("wheels > 10")),
            ] {
                var sink = Collected()
                let count = try #require(try store.fetchWithoutWaiting(descriptor, into: &sink), "\(descriptor)")
                let fetched = try await store.fetch(descriptor).objects
                #expect(sink.rows == fetched, "\(descriptor)")
                #expect(sink.snapshots.isEmpty && count == fetched.count, "\(descriptor)")
            }
            var sink = Collected()
            _ = try store.fetchWithoutWaiting(FetchDescriptor(entityName: "Car"), into: &sink)
            #expect(sink.rows.first?.toOne("garage") == ids.garage)
            #expect(sink.rows.first?["manual"] == .url(URL(string: "https://example.com/manual?page=2")!))

            // A garage's vehicles take a second statement: snapshots, as fetch(_:) reads them.
            var garages = Collected()
            #expect(try store.fetchWithoutWaiting(FetchDescriptor(entityName: "Garage"), into: &garages) == 1)
            #expect(garages.rows.isEmpty)
            #expect(garages.snapshots == (try await store.fetch(FetchDescriptor(entityName: "Garage")).objects))
            #expect(garages.snapshots.first?.toMany("vehicles") == [ids.car])

            // A sink that takes no more gives the read up, rows or snapshots.
            var small = Collected(capacity: 2)
            #expect(try store.fetchWithoutWaiting(FetchDescriptor(entityName: "Vehicle"), into: &small) == nil)
            #expect(small.rows.count == 2)
            var none = Collected(capacity: 1)
            #expect(try store.fetchWithoutWaiting(FetchDescriptor(entityName: "Garage"), into: &none) == nil)

            let unknown = #expect(throws: ModelError.self) {
                var sink = Collected()
                _ = try store.fetchWithoutWaiting(FetchDescriptor(entityName: "Nobody"), into: &sink)
            }
            #expect(unknown?.code == .unknownEntity)
        }
    }

    @Test func pointReadsHandOverTheObjectTheIdentifierNames() async throws {
        try await withStore(Self.schema) { store, _ in
            let ids = try await fill(store)
            let key = try #require(ids.car.primaryKey)
            func named(_ entity: String, _ key: Int64) -> PersistentIdentifier {
                PersistentIdentifier(storeIdentifier: store.storeIdentifier, entityName: entity, key: .permanent(key))
            }
            // The car by its own entity and by its superentity's; not as a bike, not a missing key.
            for (id, found) in [
                (ids.car, true), (named("Vehicle", key), true), (named("Bike", key), false), (named("Car", 999), false),
                (ids.vehicle, true),
            ] {
                var sink = Collected()
                #expect(try store.objectsWithoutWaiting(for: [id], into: &sink), "\(id)")
                #expect(sink.snapshots.isEmpty, "\(id)")
                #expect(sink.rows == (try await store.snapshots(for: [id])), "\(id)")
                #expect(sink.rows.count == (found ? 1 : 0), "\(id)")
            }
            // A garage (a second statement for its vehicles) and several objects: snapshots, in order.
            for request in [[ids.garage], [ids.bike, ids.car, ids.bike]] {
                var sink = Collected()
                #expect(try store.objectsWithoutWaiting(for: request, into: &sink), "\(request)")
                #expect(sink.rows.isEmpty, "\(request)")
                #expect(sink.snapshots == (try await store.snapshots(for: request)), "\(request)")
                #expect(sink.snapshots.map(\.id) == request, "\(request)")
            }
            let other = PersistentIdentifier(storeIdentifier: UUID(), entityName: "Car", key: .permanent(key))
            let error = #expect(throws: ModelError.self) {
                var sink = Collected()
                _ = try store.objectsWithoutWaiting(for: [other], into: &sink)
            }
            #expect(error?.code == .invalidIdentifier)
        }
    }
}
