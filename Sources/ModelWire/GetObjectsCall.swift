import ModelCore
import Synchronization

/// A `GetObjects` request in ModelCore's types: the client's side of what the daemon reads by
/// hand (``GetObjectsRequestFields``).
public struct GetObjectsCall: Sendable {
    public var store: String
    public var ids: [PersistentIdentifier]

    public init(store: String, ids: [PersistentIdentifier]) {
        self.store = store
        self.ids = ids
    }

    /// The message.
    public var wire: Modeld_V1_GetObjectsRequest {
        Modeld_V1_GetObjectsRequest.with {
            $0.store = store
            $0.uris = ids.map(\.uriRepresentation)
        }
    }

    /// The message's bytes, as SwiftProtobuf writes ``wire``, written by hand: each URI straight
    /// from its identifier, its store and entity part taken from `prefix` when they are the
    /// same (then kept there for the next call), rather than a string made of each URI and a
    /// message of them (about 4,000 instructions of a point read's client).
    public func serializedBytes(prefix: inout PersistentIdentifier.URIPrefix?) -> [UInt8] {
        var writer = ProtobufWriter(uriPrefix: prefix)
        writer.bytes.reserveCapacity(store.utf8.count + 2 + ids.count * 64)
        if !store.isEmpty { writer.string(1, store) }
        for id in ids { writer.uri(2, id) }
        prefix = writer.uriPrefix
        return writer.bytes
    }
}

/// The store and entity part of the URIs a connection's last `GetObjects` request named, kept
/// for its next request (``GetObjectsCall/serializedBytes(prefix:)``).
public final class RequestURIPrefix: Sendable {
    private let last = Mutex<PersistentIdentifier.URIPrefix?>(nil)

    public init() {}

    /// `call`'s bytes, starting from the prefix kept and keeping the last one written.
    public func serializedBytes(of call: GetObjectsCall) -> [UInt8] {
        var prefix = last.withLock { $0 }
        let bytes = call.serializedBytes(prefix: &prefix)
        last.withLock { $0 = prefix }
        return bytes
    }
}
