import Foundation
import ModelCore
import ModelFixtures
import Testing

/// URIs written and read with the store and entity part of the previous one kept
/// (``PersistentIdentifier/URIPrefix``): the bytes, and what is accepted, must be exactly those
/// of each URI written or read on its own.
@Suite struct URIPrefixTests {
    static let store = "11111111-2222-3333-4444-555555555555"

    /// Identifiers whose stores, entities and kinds of key change from one to the next, and
    /// entities whose names start alike.
    static let identifiers: [PersistentIdentifier] = [
        Fixed.id("Trip", 42), Fixed.id("Trip", 7), Fixed.id("Trips", 7), Fixed.id("Trip", 9_223_372_036_854_775_807),
        PersistentIdentifier(storeIdentifier: Fixed.store, entityName: "Trip", key: .temporary(Fixed.temporaryKey)),
        PersistentIdentifier(storeIdentifier: Fixed.otherStore, entityName: "Trip", key: .permanent(42)),
        PersistentIdentifier(storeIdentifier: Fixed.otherStore, entityName: "Tri", key: .permanent(1)),
        Fixed.id("Trip", 1), Fixed.id("Trip", 12),
    ]

    @Test func aKeptPrefixWritesTheBytesOfEachURI() {
        var kept: [UInt8] = [], alone: [UInt8] = []
        var prefix: PersistentIdentifier.URIPrefix?
        for id in Self.identifiers {
            id.appendURI(to: &kept, prefix: &prefix)
            id.appendURI(to: &alone)
        }
        #expect(kept == alone)
        #expect(
            String(decoding: kept, as: UTF8.self).contains(
                "modeld://\(Fixed.otherStore.uuidString.lowercased())/Tri/p1"))
    }

    /// Good and bad URIs in turn, read with one kept prefix and each alone: the same identifier,
    /// or nil, every time. The bad ones share a good one's prefix, so they are read from its key.
    @Test func aKeptPrefixAcceptsExactlyWhatEachURIAloneDoes() {
        let base = "modeld://\(Self.store)/Trip/"
        let texts =
            Self.identifiers.map(\.uriRepresentation) + [
                base + "p42", base + "p0", base + "p", base + "x42", base + "p4x2", base + "p9223372036854775808",
                base + "t" + String(repeating: "a", count: 36), base + "taaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
                base + "p42/", base + "p" + String(repeating: "1", count: 300 - base.utf8.count - 1),
                base + "p" + String(repeating: "1", count: 300 - base.utf8.count), base, "modeld://\(Self.store)/Trip",
                "modeld://\(Self.store.uppercased())/Trip/p42", base + "p42", "modeld://\(Self.store)/Trip/p43",
                "modeld://\(Self.store)//p1", "modeld://\(Self.store)/Tr-p/p1", base + "p42",
            ]
        var prefix: PersistentIdentifier.URIPrefix?
        var accepted = 0
        for text in texts {
            let bytes = Array(text.utf8)
            let kept = bytes.withUnsafeBufferPointer { PersistentIdentifier(uriBytes: $0, prefix: &prefix) }
            let alone = bytes.withUnsafeBufferPointer { PersistentIdentifier(uriBytes: $0) }
            #expect(kept == alone, "\(text)")
            if kept != nil { accepted += 1 }
        }
        // Every identifier; p42 three times more and once with its store in capitals; the
        // temporary key; p43.
        #expect(accepted == Self.identifiers.count + 6)
    }

    /// A URI written in place (``PersistentIdentifier/writeURI(into:prefix:)``) is the URI
    /// appended alone, keys of every length; a temporary key, or room too small, writes none.
    @Test func aURIWrittenInPlaceIsTheURIAppended() {
        var prefix: PersistentIdentifier.URIPrefix?
        var keys: [Int64] = [1, 9, 10, 99, 100, 1_234_567, Int64.max]
        var random = SeededRandom(seed: 0x0721)
        for _ in 0..<200 { keys.append(Int64.random(in: 1...Int64.max, using: &random) >> random.int(0...62)) }
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 300)
        defer { buffer.deallocate() }
        for (index, key) in keys.enumerated() where key > 0 {
            let id = PersistentIdentifier(
                storeIdentifier: index % 3 == 0 ? Fixed.otherStore : Fixed.store,
                entityName: index % 2 == 0 ? "Trip" : "Tri", key: .permanent(key))
            let length = id.writeURI(into: buffer, prefix: &prefix)
            #expect(length.map { Array(buffer[..<$0]) } == Array(id.uriRepresentation.utf8))
            let exact = id.uriRepresentation.utf8.count
            #expect(id.writeURI(into: UnsafeMutableBufferPointer(rebasing: buffer[..<exact]), prefix: &prefix) == exact)
            #expect(
                id.writeURI(into: UnsafeMutableBufferPointer(rebasing: buffer[..<(exact - 1)]), prefix: &prefix) == nil)
        }
        let temporary = PersistentIdentifier(
            storeIdentifier: Fixed.store, entityName: "Trip", key: .temporary(Fixed.temporaryKey))
        #expect(temporary.writeURI(into: buffer, prefix: &prefix) == nil)
    }
}
