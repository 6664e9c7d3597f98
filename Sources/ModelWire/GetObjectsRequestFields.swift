import Foundation
import ModelCore

/// A `GetObjectsRequest` (or a session's) read by hand, as the daemon reads a point read: its
/// store's name (field 1) and the URIs asked for (field 2), which become identifiers only once
/// the store is known (``identifiers(in:prefix:)``). SwiftProtobuf's reading of the message, and
/// a string made of every URI before it was parsed, were a tenth of a point read's work.
///
/// Only the plain form is read here: each field once at most but the URIs, ASCII text, nothing
/// else. Anything else gives nil, for the caller to read with SwiftProtobuf, which accepts and
/// refuses as it always has.
public struct GetObjectsRequestFields: Sendable {
    public let store: String
    private let bytes: [UInt8]
    private let uris: [Range<Int>]

    public init?(serialized bytes: [UInt8]) {
        let read = try? ProtobufReader.reading(bytes) { (reader) throws(ModelError) -> (String, [Range<Int>])? in
            var store: String?
            var uris: [Range<Int>] = []
            while let (field, type) = try reader.tag() {
                switch (field, type) {
                case (1, 2) where store == nil:
                    let range = try reader.stringRange()
                    guard reader.isASCII(range) else { return nil }
                    store = try reader.text(in: range)
                case (2, 2):
                    let range = try reader.stringRange()
                    guard reader.isASCII(range) else { return nil }
                    uris.append(range)
                default:
                    return nil
                }
            }
            return (store ?? "", uris)
        }
        guard let (store, uris) = read ?? nil else { return nil }
        self.store = store
        self.bytes = bytes
        self.uris = uris
    }

    /// The URIs' identifiers, each of which must be one of store `storeIdentifier`'s, with the
    /// errors of ``PersistentIdentifier/init(wire:in:)``. `prefix` keeps the store and entity
    /// part of the last URI read, for the next.
    public func identifiers(in storeIdentifier: UUID, prefix: inout PersistentIdentifier.URIPrefix?)
        throws(ModelError) -> [PersistentIdentifier]
    {
        try ProtobufReader.reading(bytes) { (reader) throws(ModelError) -> [PersistentIdentifier] in
            var ids: [PersistentIdentifier] = []
            ids.reserveCapacity(uris.count)
            for range in uris { ids.append(try reader.identifier(in: range, store: storeIdentifier, prefix: &prefix)) }
            return ids
        }
    }
}
