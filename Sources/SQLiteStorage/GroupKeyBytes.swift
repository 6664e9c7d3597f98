import CSQLite
import Foundation
import ModelCore

/// A growable byte buffer written without Array's bookkeeping per append.
final class ScratchBytes {
    private var base = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 8)
    private var capacity = 256
    var count = 0

    deinit { base.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    func append(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    func append<T: FixedWidthInteger>(_ value: T) {
        reserve(MemoryLayout<T>.size)
        base.storeBytes(of: value, toByteOffset: count, as: T.self)
        count += MemoryLayout<T>.size
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    private func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: max(capacity * 2, count + extra), alignment: 8)
        grown.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = grown
        capacity = max(capacity * 2, count + extra)
    }
}

/// A stored group key as SQLite's BINARY comparison orders it: NULL, then integers by value,
/// then text, then blobs, each byte by byte with the shorter first on a common prefix.
enum GroupKeyCell {
    case null
    case integer(Int64)
    case text(ArraySlice<UInt8>)
    case blob(ArraySlice<UInt8>)

    /// The keys of one group, from their encoding (see ``GroupTable/encode(_:)``).
    static func decode(_ encoded: ArraySlice<UInt8>) -> [GroupKeyCell] {
        var cells: [GroupKeyCell] = []
        var index = encoded.startIndex
        func integer<T: FixedWidthInteger>(_ type: T.Type) -> T {
            defer { index += MemoryLayout<T>.size }
            return encoded[index..<(index + MemoryLayout<T>.size)].withUnsafeBytes { $0.loadUnaligned(as: T.self) }
        }
        while index < encoded.endIndex {
            let storage = Int32(encoded[index])
            index += 1
            switch storage {
            case SQLITE_INTEGER: cells.append(.integer(integer(Int64.self)))
            case SQLITE_TEXT, SQLITE_BLOB:
                let count = Int(integer(UInt32.self))
                let bytes = encoded[index..<(index + count)]
                index += count
                cells.append(storage == SQLITE_TEXT ? .text(bytes) : .blob(bytes))
            default: cells.append(.null)
            }
        }
        return cells
    }

    /// The key as a value of `type`; its storage class is the one `type` is written in
    /// (``GroupTable/encode(_:)`` gives up on any other).
    func value(as type: AttributeType, path: PropertyPath) throws(ModelError) -> Value {
        switch self {
        case .null: return .null
        case .integer(let integer): return .stored(integer: integer, as: type)
        case .blob(let bytes): return .data(Data(bytes))
        case .text(let bytes):
            let text = String(decoding: bytes, as: UTF8.self)
            guard let value = Value.stored(text: text, as: type) else { throw Self.unreadable(text, as: type, path) }
            return value
        }
    }

    private static func unreadable(_ text: String, as type: AttributeType, _ path: PropertyPath) -> ModelError {
        ModelError(
            .storageFailure, "the stored value '\(text.prefix(80))' of \(path) is not a valid \(type.rawValue)",
            context: ["keyPath": path.description])
    }

    private var rank: Int {
        switch self {
        case .null: 0
        case .integer: 1
        case .text: 2
        case .blob: 3
        }
    }

    func compare(_ other: GroupKeyCell) -> Int {
        switch (self, other) {
        case (.integer(let a), .integer(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.text(let a), .text(let b)), (.blob(let a), .blob(let b)):
            if a == b { return 0 }
            return a.lexicographicallyPrecedes(b) ? -1 : 1
        default: return rank - other.rank
        }
    }
}
