import Foundation
@testable import ModelCore
import ModelFixtures
import Testing

/// `PersistentIdentifier(uri:)` reads well-formed URIs byte by byte and sends anything else
/// through the checks that name the wrong part; both must accept exactly the same URIs.
@Suite struct URIParsingTests {
    /// The byte-by-byte reading, or nil where it gives up.
    static func quick(_ uri: String) -> PersistentIdentifier? {
        Array(uri.utf8).withUnsafeBufferPointer { PersistentIdentifier.parse($0) }
    }

    static func checked(_ uri: String) -> PersistentIdentifier? {
        try? PersistentIdentifier(checking: uri)
    }

    /// Every one-byte change of some good URIs (each byte replaced by a set of likely
    /// troublemakers, deleted, or doubled) is accepted or refused alike by both readings.
    @Test func bothReadingsAcceptTheSameURIs() {
        let goods = [
            "modeld://11111111-2222-3333-4444-555555555555/Trip/p42",
            "modeld://0A1B2C3D-4E5F-4061-8293-A4B5C6D7E8F9/Item_2/p9223372036854775807",
            "modeld://11111111-2222-3333-4444-555555555555/T/t0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9",
        ]
        let replacements: [UInt8] = Array("0189afAFgG-_/ pPtT:.%".utf8) + [0, 0x7f, 0xc3, 0xff]
        var variants = Set(goods)
        for good in goods {
            let bytes = Array(good.utf8)
            for index in bytes.indices {
                for replacement in replacements {
                    var changed = bytes
                    changed[index] = replacement
                    variants.insert(String(decoding: changed, as: UTF8.self))
                }
                var deleted = bytes
                deleted.remove(at: index)
                variants.insert(String(decoding: deleted, as: UTF8.self))
                var doubled = bytes
                doubled.insert(bytes[index], at: index)
                variants.insert(String(decoding: doubled, as: UTF8.self))
            }
        }
        var accepted = 0
        for uri in variants {
            let quick = Self.quick(uri), checked = Self.checked(uri)
            #expect(
                quick == checked,
                "\(uri): byte by byte \(String(describing: quick)), checked \(String(describing: checked))")
            if quick != nil { accepted += 1 }
        }
        // Some changes keep a URI good (another hex digit, another letter of the entity).
        #expect(accepted > goods.count)
        #expect(accepted < variants.count / 2)
    }

    @Test func randomIdentifiersReadQuickly() {
        var generator = PredicateGenerator(seed: 0x2E)
        for _ in 0..<1_000 {
            let id = generator.identifier()
            #expect(Self.quick(id.uriRepresentation) == id)
        }
    }
}
