import Foundation

/// The identity of an object, the same in every process that opens the store:
/// `modeld://<store-uuid>/<Entity>/p<primary-key>` once saved, or
/// `modeld://<store-uuid>/<Entity>/t<uuid>` while an insert is not yet saved (a temporary
/// identifier, remapped to a permanent one by the save, as Core Data's are).
public struct PersistentIdentifier: Hashable, Sendable, Codable, CustomStringConvertible {
    /// A permanent primary key or a temporary UUID.
    public enum Key: Hashable, Sendable {
        case permanent(Int64)
        case temporary(UUID)
    }

    /// The UUID of the store the object belongs to.
    public let storeIdentifier: UUID
    /// The object's entity: its concrete entity, not a superentity.
    public let entityName: String
    public let key: Key

    public init(storeIdentifier: UUID, entityName: String, key: Key) {
        self.storeIdentifier = storeIdentifier
        self.entityName = entityName
        self.key = key
    }

    /// Hashes the key alone: identifiers that meet in one table almost always share their store,
    /// and keys are unique per entity hierarchy, so the store's UUID and the entity's name would
    /// add hashing work to every lookup and tell almost no identifiers apart. Equality still
    /// compares every part.
    public func hash(into hasher: inout Hasher) {
        switch key {
        case .permanent(let pk): hasher.combine(pk)
        case .temporary(let uuid): hasher.combine(uuid)
        }
    }

    /// A new temporary identifier for an object about to be inserted.
    public static func temporary(storeIdentifier: UUID, entityName: String) -> PersistentIdentifier {
        PersistentIdentifier(storeIdentifier: storeIdentifier, entityName: entityName, key: .temporary(UUID.random()))
    }

    /// Whether the identifier is temporary (the object is not saved yet).
    public var isTemporary: Bool {
        if case .temporary = key { return true }
        return false
    }

    /// The primary key of a permanent identifier.
    public var primaryKey: Int64? {
        if case .permanent(let pk) = key { return pk }
        return nil
    }

    /// The URI form: `modeld://<store-uuid>/<Entity>/p42`.
    public var uriRepresentation: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(96)
        appendURI(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the URI form's UTF-8 bytes to `bytes`: how a response writes an object's URI
    /// without making a string of it first.
    public func appendURI(to bytes: inout [UInt8]) {
        Self.appendURIPrefix(storeIdentifier, entityName, to: &bytes)
        appendKey(to: &bytes)
    }

    /// Appends the part of a URI before its key: `modeld://<store-uuid>/<Entity>/`.
    static func appendURIPrefix(_ storeIdentifier: UUID, _ entityName: String, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: scheme)
        appendText(of: storeIdentifier, to: &bytes)
        bytes.append(UInt8(ascii: "/"))
        var entity = entityName
        entity.withUTF8 { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "/"))
    }

    /// Appends the key part of the URI form: `p42`, or `t` and the UUID.
    func appendKey(to bytes: inout [UInt8]) {
        switch key {
        case .permanent(let pk):
            bytes.append(UInt8(ascii: "p"))
            Self.appendDecimal(pk, to: &bytes)
        case .temporary(let uuid):
            bytes.append(UInt8(ascii: "t"))
            Self.appendText(of: uuid, to: &bytes)
        }
    }

    static let scheme: [UInt8] = Array("modeld://".utf8)

    static func appendText(of uuid: UUID, to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { text in
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[..<uuid.writeLowercased(into: text)]))
        }
    }

    static func appendDecimal(_ number: Int64, to bytes: inout [UInt8]) {
        guard number > 0 else {
            // Keys are positive; anything else is written as Swift writes it.
            bytes.append(contentsOf: String(number).utf8)
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            // ! a temporary allocation of 20 bytes has a base.
            let end = digits.baseAddress! + 20
            let start = writeDigits(of: number, endingAt: end)
            bytes.append(contentsOf: UnsafeBufferPointer(start: start, count: end - start))
        }
    }

    /// Writes the decimal digits of `number`, which is positive, to end just before `end`, and
    /// returns where they start.
    static func writeDigits(of number: Int64, endingAt end: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8>
    {
        var start = end, rest = number
        repeat {
            start -= 1
            start.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        } while rest > 0
        return start
    }

    public var description: String { uriRepresentation }

    /// Parses a URI strictly: scheme `modeld`, a UUID host, a well-formed entity name, and `p`
    /// followed by a positive decimal key or `t` followed by a UUID. Nothing else is accepted.
    public init(uri: String) throws(ModelError) {
        // Well-formed URIs are read byte by byte; anything else goes through the checks that
        // say what is wrong with it.
        if let parsed = uri.utf8.withContiguousStorageIfAvailable(Self.parse) ?? nil {
            self = parsed
        } else {
            try self.init(checking: uri)
        }
    }

    /// The URI in the UTF-8 bytes `text`, if it is well formed (nil otherwise, where
    /// ``init(uri:)`` says what is wrong): a response's URIs read without making strings of them.
    public init?(uriBytes text: UnsafeBufferPointer<UInt8>) {
        guard let parsed = Self.parse(text) else { return nil }
        self = parsed
    }

    /// The URI in `text`, if it is well formed; accepts exactly what ``init(checking:)`` accepts.
    static func parse(_ text: UnsafeBufferPointer<UInt8>) -> PersistentIdentifier? {
        let prefix: StaticString = "modeld://"
        let prefixCount = prefix.utf8CodeUnitCount
        guard text.count <= 300, text.count > prefixCount + 37,
            memcmp(text.baseAddress!, prefix.utf8Start, prefixCount) == 0,
            let store = UUID(utf8: UnsafeBufferPointer(rebasing: text[prefixCount..<prefixCount + 36])),
            text[prefixCount + 36] == UInt8(ascii: "/")
        else { return nil }
        let entityStart = prefixCount + 37
        guard let slash = text[entityStart...].firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let entityBytes = UnsafeBufferPointer(rebasing: text[entityStart..<slash])
        guard SchemaNames.isWellFormed(entityBytes),
            let key = parseKey(UnsafeBufferPointer(rebasing: text[(slash + 1)...]))
        else { return nil }
        return PersistentIdentifier(
            storeIdentifier: store, entityName: String(decoding: entityBytes, as: UTF8.self), key: key)
    }

    /// The key part of a URI (what follows the entity's `/`): `p` and a positive decimal key, or
    /// `t` and a UUID.
    static func parseKey(_ text: UnsafeBufferPointer<UInt8>) -> Key? {
        guard let kind = text.first else { return nil }
        let keyText = UnsafeBufferPointer(rebasing: text[1...])
        switch kind {
        case UInt8(ascii: "p"):
            guard let first = keyText.first, first != UInt8(ascii: "0") else { return nil }
            var value: Int64 = 0
            for digit in keyText {
                guard digit >= 0x30, digit <= 0x39 else { return nil }
                let (tens, overflowed) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflowedToo) = tens.addingReportingOverflow(Int64(digit - 0x30))
                guard !overflowed, !overflowedToo else { return nil }
                value = sum
            }
            return .permanent(value)
        case UInt8(ascii: "t"):
            return UUID(utf8: keyText).map(Key.temporary)
        default:
            return nil
        }
    }

    /// ``init(uri:)`` checking each part in turn, so that the error says which part is wrong.
    init(checking uri: String) throws(ModelError) {
        func bad(_ why: String) -> ModelError {
            ModelError(
                .invalidIdentifier,
                "'\(uri.prefix(200))' is not an object URI (\(why)); expected modeld://<store-uuid>/<Entity>/p<key>, or t<uuid> in place of p<key> for an object not yet saved",
                context: ["uri": String(uri.prefix(200))])
        }
        let prefix = "modeld://"
        guard uri.utf8.count <= 300 else { throw bad("too long") }
        guard uri.hasPrefix(prefix) else { throw bad("it must start with modeld://") }
        let parts = uri.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw bad("it must have a store, an entity and a key") }
        guard let store = UUID(text: parts[0]) else {
            throw bad("'\(parts[0].prefix(40))' is not a store UUID")
        }
        let entity = String(parts[1])
        guard SchemaNames.isWellFormed(entity) else { throw bad("'\(entity.prefix(70))' is not an entity name") }
        let keyText = parts[2]
        guard let kind = keyText.first else { throw bad("the key is empty") }
        let body = keyText.dropFirst()
        switch kind {
        case "p":
            guard !body.isEmpty, body.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), body.first != "0",
                let pk = Int64(body), pk > 0
            else {
                throw bad("'\(keyText.prefix(40))' is not p followed by a positive key")
            }
            self.init(storeIdentifier: store, entityName: entity, key: .permanent(pk))
        case "t":
            guard let uuid = UUID(text: body) else {
                throw bad("'\(keyText.prefix(40))' is not t followed by a UUID")
            }
            self.init(storeIdentifier: store, entityName: entity, key: .temporary(uuid))
        default:
            throw bad("the key must start with p (saved) or t (not yet saved)")
        }
    }

    /// Parses `uri` and checks that it belongs to the store `storeIdentifier`.
    public init(uri: String, in storeIdentifier: UUID) throws(ModelError) {
        try self.init(uri: uri)
        guard self.storeIdentifier == storeIdentifier else {
            throw ModelError(
                .invalidIdentifier,
                "\(uri) belongs to store \(self.storeIdentifier.uuidString.lowercased()), not to this store (\(storeIdentifier.uuidString.lowercased()))",
                context: ["uri": uri])
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(uri: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.message)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uriRepresentation)
    }
}
