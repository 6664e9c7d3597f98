import Foundation
import ModelCore
import ModelFixtures
import Testing

@Suite struct PersistentIdentifierTests {
    static let store = "11111111-2222-3333-4444-555555555555"
    static let temporary = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"

    @Test func permanentAndTemporaryURIs() throws {
        let permanent = Fixed.id("Trip", 42)
        #expect(permanent.uriRepresentation == "modeld://\(Self.store)/Trip/p42")
        #expect(permanent.description == permanent.uriRepresentation)
        #expect(!permanent.isTemporary)
        #expect(permanent.primaryKey == 42)
        #expect(try PersistentIdentifier(uri: permanent.uriRepresentation) == permanent)

        let temp = PersistentIdentifier(
            storeIdentifier: Fixed.store, entityName: "Trip", key: .temporary(Fixed.temporaryKey))
        #expect(temp.uriRepresentation == "modeld://\(Self.store)/Trip/t\(Self.temporary)")
        #expect(temp.isTemporary)
        #expect(temp.primaryKey == nil)
        #expect(try PersistentIdentifier(uri: temp.uriRepresentation) == temp)

        // UUIDs may be written in capitals; the URI is always lowercase.
        let upper = try PersistentIdentifier(
            uri: "modeld://\(Self.store.uppercased())/Trip/t\(Self.temporary.uppercased())")
        #expect(upper == temp)
        #expect(
            PersistentIdentifier(storeIdentifier: Fixed.store, entityName: "Trip", key: .permanent(.max))
                .uriRepresentation
                == "modeld://\(Self.store)/Trip/p9223372036854775807")
        let fresh = PersistentIdentifier.temporary(storeIdentifier: Fixed.store, entityName: "Note")
        #expect(fresh.isTemporary && fresh.entityName == "Note" && fresh.storeIdentifier == Fixed.store)
        #expect(fresh != PersistentIdentifier.temporary(storeIdentifier: Fixed.store, entityName: "Note"))
    }

    /// Keys of every length are written digit by digit as Swift writes them, and read back from
    /// the URI's bytes.
    @Test func keysOfEveryLengthAreWrittenAndReadAsBytes() throws {
        var keys: [Int64] = [1, .max, .max - 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            keys += [power - 1, power, power + 1]
        }
        for key in keys {
            let id = PersistentIdentifier(storeIdentifier: Fixed.store, entityName: "Trip", key: .permanent(key))
            let expected = "modeld://\(Self.store)/Trip/p" + String(key)
            var bytes: [UInt8] = [7]
            id.appendURI(to: &bytes)
            #expect(bytes == [7] + Array(expected.utf8))
            #expect(id.uriRepresentation == expected)
            #expect(Array(expected.utf8).withUnsafeBufferPointer { PersistentIdentifier(uriBytes: $0) } == id)
        }
        let named = PersistentIdentifier(
            storeIdentifier: Fixed.store, entityName: "Booking_2", key: .temporary(Fixed.temporaryKey))
        #expect(named.uriRepresentation == "modeld://\(Self.store)/Booking_2/t\(Self.temporary)")
        #expect(
            Array(named.uriRepresentation.utf8).withUnsafeBufferPointer { PersistentIdentifier(uriBytes: $0) } == named)
        for bad in [
            "modeld://\(Self.store)/Trip/p9223372036854775808", "modeld://\(Self.store)/Trip/p0",
            "modeld://\(Self.store)/Trip/p",
        ] {
            #expect(Array(bad.utf8).withUnsafeBufferPointer { PersistentIdentifier(uriBytes: $0) } == nil, "\(bad)")
            #expect(throws: ModelError.self) { try PersistentIdentifier(uri: bad) }
        }
    }

    @Test func randomIdentifiersRoundTrip() throws {
        var generator = PredicateGenerator(seed: 0x1D)
        for _ in 0..<2_000 {
            let id = generator.identifier()
            let parsed = try PersistentIdentifier(uri: id.uriRepresentation)
            #expect(parsed == id)
            #expect(parsed.uriRepresentation == id.uriRepresentation)
            #expect(try PersistentIdentifier(uri: id.uriRepresentation, in: id.storeIdentifier) == id)
        }
    }

    static let malformed: [String] = [
        "", "modeld", "modeld:/", "modeld://", "modeld:///Trip/p1", "http://\(store)/Trip/p1",
        "MODELD://\(store)/Trip/p1",
        " modeld://\(store)/Trip/p1", "modeld://\(store)/Trip/p1 ", "modeld://\(store)/Trip/p1\n",
        "modeld://not-a-uuid/Trip/p1", "modeld://\(store.replacingOccurrences(of: "-", with: ""))/Trip/p1",
        "modeld://{\(store)}/Trip/p1", "modeld://\(store)x/Trip/p1", "modeld://\(store)", "modeld://\(store)/",
        "modeld://\(store)/Trip", "modeld://\(store)/Trip/", "modeld://\(store)//p1", "modeld://\(store)/Trip/p1/",
        "modeld://\(store)/Trip/p1/extra", "modeld://\(store)/1Trip/p1", "modeld://\(store)/Tr ip/p1",
        "modeld://\(store)/Tr%20ip/p1",
        "modeld://\(store)/_Trip/p1", "modeld://\(store)/Trïp/p1",
        "modeld://\(store)/\(String(repeating: "T", count: 65))/p1",
        "modeld://\(store)/Trip/p", "modeld://\(store)/Trip/p0", "modeld://\(store)/Trip/p-1",
        "modeld://\(store)/Trip/p01",
        "modeld://\(store)/Trip/p+1", "modeld://\(store)/Trip/p1.0", "modeld://\(store)/Trip/p1e3",
        "modeld://\(store)/Trip/P1",
        "modeld://\(store)/Trip/p9223372036854775808", "modeld://\(store)/Trip/p99999999999999999999999",
        "modeld://\(store)/Trip/p１", "modeld://\(store)/Trip/p1?x=1", "modeld://\(store)/Trip/p1#frag",
        "modeld://\(store)/Trip/x1",
        "modeld://\(store)/Trip/1", "modeld://\(store)/Trip/t", "modeld://\(store)/Trip/tnot-a-uuid",
        "modeld://\(store)/Trip/t\(temporary.replacingOccurrences(of: "-", with: ""))",
        "modeld://\(store)/Trip/t\(temporary)0",
        "modeld://\(store)/Trip/p1\u{0}", "modeld://\(store)/Trip/" + String(repeating: "p", count: 300),
    ]

    @Test(arguments: malformed)
    func rejectsMalformedURIs(uri: String) throws {
        let error = try #require(throws: ModelError.self) { try PersistentIdentifier(uri: uri) }
        #expect(error.code == .invalidIdentifier)
        #expect(error.context["uri"] == String(uri.prefix(200)))
        #expect(error.message.contains("is not an object URI"))
        #expect(error.message.contains("expected modeld://<store-uuid>/<Entity>/p<key>"))
        // A client writing a temporary URI is shown its form too.
        #expect(error.message.contains("or t<uuid> in place of p<key> for an object not yet saved"))
    }

    @Test func rejectsAnotherStore() throws {
        let uri = Fixed.uri("Trip", 1, store: Fixed.otherStore)
        let error = try #require(throws: ModelError.self) { try PersistentIdentifier(uri: uri, in: Fixed.store) }
        #expect(error.code == .invalidIdentifier)
        #expect(error.message.contains(Fixed.otherStore.uuidString.lowercased()))
        #expect(error.message.contains(Fixed.store.uuidString.lowercased()))
        #expect(error.context["uri"] == uri)
        #expect(try PersistentIdentifier(uri: Fixed.uri("Trip", 1), in: Fixed.store) == Fixed.id("Trip", 1))
        // A malformed URI is reported as malformed, whatever the store.
        let malformed = try #require(throws: ModelError.self) {
            try PersistentIdentifier(uri: "modeld://x/Trip/p1", in: Fixed.store)
        }
        #expect(malformed.message.contains("is not an object URI"))
    }

    @Test func codableAsTheURI() throws {
        let ids = [
            Fixed.id("Trip", 3),
            PersistentIdentifier(storeIdentifier: Fixed.store, entityName: "Note", key: .temporary(Fixed.temporaryKey)),
        ]
        let data = try JSONEncoder().encode(ids)
        #expect(
            String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\\/", with: "/")
                == "[\"modeld://\(Self.store)/Trip/p3\",\"modeld://\(Self.store)/Note/t\(Self.temporary)\"]")
        #expect(try JSONDecoder().decode([PersistentIdentifier].self, from: data) == ids)
        let error = try #require(throws: DecodingError.self) {
            try JSONDecoder().decode([PersistentIdentifier].self, from: Data("[\"modeld://x/Trip/p1\"]".utf8))
        }
        guard case .dataCorrupted(let context) = error else {
            Issue.record("expected dataCorrupted, got \(error)")
            return
        }
        #expect(context.debugDescription.contains("is not an object URI"))
    }

    /// Identifiers hash by their key alone, but are equal only when store, entity and key are.
    @Test func identifiersDifferingInEntityOrStoreStayDistinct() {
        let trip = Fixed.id("Trip", 42), note = Fixed.id("Note", 42)
        let elsewhere = PersistentIdentifier(storeIdentifier: UUID.random(), entityName: "Trip", key: .permanent(42))
        #expect(Set([trip, note, elsewhere, Fixed.id("Trip", 42)]).count == 3)
        let table = [trip: "trip", note: "note", elsewhere: "elsewhere"]
        #expect(table[Fixed.id("Note", 42)] == "note" && table[trip] == "trip" && table[elsewhere] == "elsewhere")
    }

    /// New temporary identifiers carry random version 4 UUIDs (from a pool of random bytes
    /// refilled every 256 of them), never the same one twice.
    @Test func temporaryKeysAreDistinctVersion4UUIDs() {
        let keys = (0..<2_000).map { _ in
            PersistentIdentifier.temporary(storeIdentifier: Fixed.store, entityName: "Trip")
        }
        .compactMap { id -> UUID? in if case .temporary(let uuid) = id.key { uuid } else { nil } }
        #expect(keys.count == 2_000 && Set(keys).count == 2_000)
        #expect(keys.allSatisfy { $0.uuid.6 >> 4 == 4 && $0.uuid.8 >> 6 == 0b10 })
        #expect(Set(keys.map { $0.uuid.0 }).count > 100, "the first bytes vary")
    }
}
