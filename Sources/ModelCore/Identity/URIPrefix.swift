import Foundation

extension PersistentIdentifier {
    /// The part of an object URI before its key, `modeld://<store-uuid>/<Entity>/`, kept from one
    /// URI to the next. The URIs of one response or request usually share it, and writing the
    /// store's UUID as text, or reading it back, was most of the work of each URI.
    public struct URIPrefix: Sendable {
        let storeIdentifier: UUID
        let entityName: String
        /// The prefix's UTF-8 bytes, its last `/` included.
        public let bytes: [UInt8]

        init(storeIdentifier: UUID, entityName: String, bytes: [UInt8]) {
            self.storeIdentifier = storeIdentifier
            self.entityName = entityName
            self.bytes = bytes
        }

        init(storeIdentifier: UUID, entityName: String) {
            self.storeIdentifier = storeIdentifier
            self.entityName = entityName
            var bytes: [UInt8] = []
            PersistentIdentifier.appendURIPrefix(storeIdentifier, entityName, to: &bytes)
            self.bytes = bytes
        }
    }

    /// ``appendURI(to:)``, taking the store and entity part from `prefix` when it is this
    /// identifier's, and keeping this identifier's there otherwise. The bytes are the same.
    public func appendURI(to bytes: inout [UInt8], prefix: inout URIPrefix?) {
        keep(in: &prefix)
        bytes.append(contentsOf: prefix.unsafelyUnwrapped.bytes)
        appendKey(to: &bytes)
    }

    /// Writes the URI of an identifier with a permanent key into `buffer`, as
    /// ``appendURI(to:prefix:)`` appends it, and returns how many bytes it took; nil, having
    /// written nothing of use, for a temporary key or a URI longer than `buffer`. One copy of
    /// the prefix and the key's digits written in place: appending the two to an array cost a
    /// daemon more than a hundred instructions an object.
    public func writeURI(into buffer: UnsafeMutableBufferPointer<UInt8>, prefix: inout URIPrefix?) -> Int? {
        guard case .permanent(let number) = key, number > 0 else { return nil }
        keep(in: &prefix)
        var digits = 1, rest = number / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        return prefix.unsafelyUnwrapped.bytes.withUnsafeBufferPointer { (head) -> Int? in
            let length = head.count + 1 + digits
            guard length <= buffer.count, let base = buffer.baseAddress, let start = head.baseAddress else {
                return nil
            }
            // One memcpy: `update(from:count:)` copied byte by byte.
            UnsafeMutableRawPointer(base).copyMemory(from: start, byteCount: head.count)
            base[head.count] = UInt8(ascii: "p")
            _ = Self.writeDigits(of: number, endingAt: base + length)
            return length
        }
    }

    /// Makes `prefix` this identifier's store and entity part, unless it is already (it is then
    /// non-nil).
    private func keep(in prefix: inout URIPrefix?) {
        let isKept = prefix.map { $0.storeIdentifier.isSame(as: storeIdentifier) && $0.entityName == entityName }
        if isKept != true {
            prefix = URIPrefix(storeIdentifier: storeIdentifier, entityName: entityName)
        }
    }

    /// ``init(uriBytes:)``, taking the store and entity from `prefix` when `text` starts with
    /// its bytes, and keeping the prefix of `text` there otherwise. Accepts exactly what
    /// ``init(uriBytes:)`` accepts.
    public init?(uriBytes text: UnsafeBufferPointer<UInt8>, prefix: inout URIPrefix?) {
        if let known = prefix, text.count <= 300, text.count > known.bytes.count,
            known.bytes.withUnsafeBufferPointer({ memcmp(text.baseAddress!, $0.baseAddress!, $0.count) == 0 })
        {
            // The prefix ends at the entity's `/`, which no entity name holds: the rest is the key.
            guard let key = Self.parseKey(UnsafeBufferPointer(rebasing: text[known.bytes.count...])) else { return nil }
            self.init(storeIdentifier: known.storeIdentifier, entityName: known.entityName, key: key)
            return
        }
        guard let parsed = Self.parse(text) else { return nil }
        // Its bytes as they came: `modeld://`, the UUID, `/`, the entity, `/`.
        let length = Self.scheme.count + 37 + parsed.entityName.utf8.count + 1
        prefix = URIPrefix(
            storeIdentifier: parsed.storeIdentifier, entityName: parsed.entityName, bytes: Array(text[..<length]))
        self = parsed
    }
}
