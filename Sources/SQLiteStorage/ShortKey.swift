/// One key of at most ``capacity`` bytes in two words, with its length and storage class in
/// the last byte: two keys are equal exactly when their words are. The words hold the bytes
/// read in overlapping pieces, as hash functions read short keys (for a length of 8 to 15, the
/// first 8 bytes and the last 8), which together cover every byte once the length is known.
struct ShortKey: Equatable {
    static let capacity = 15
    /// For a group whose keys are longer or more than one: equal to no key made from bytes,
    /// whose last byte is at most 5 | 15 << 3.
    static let none = ShortKey(low: 0, high: .max)

    let low: UInt64
    let high: UInt64

    private init(low: UInt64, high: UInt64) {
        self.low = low
        self.high = high
    }

    /// `bytes` (at most ``capacity``) of a value stored in `storage`.
    init(storage: Int32, bytes: UnsafeRawBufferPointer) {
        let count = bytes.count
        let tag = UInt64(UInt8(truncatingIfNeeded: storage) | UInt8(truncatingIfNeeded: count) << 3) << 56
        switch count {
        case 8...:
            low = bytes.loadUnaligned(as: UInt64.self)
            high = bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self) >> 8 | tag
        case 4...:
            low =
                UInt64(bytes.loadUnaligned(as: UInt32.self)) | UInt64(
                    bytes.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)) << 32
            high = tag
        case 1...:
            low = UInt64(bytes[0]) | UInt64(bytes[count / 2]) << 8 | UInt64(bytes[count - 1]) << 16
            high = tag
        default:
            low = 0
            high = tag
        }
    }
}
