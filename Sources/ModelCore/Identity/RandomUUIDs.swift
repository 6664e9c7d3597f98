import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif

extension UUID {
    /// A new random (version 4) UUID, as `UUID()` makes, but cheaply: on Linux, Foundation's
    /// `UUID()` opens, reads and closes /dev/urandom for every UUID (about 5 µs, three system
    /// calls), which a save of 100,000 new objects paid 100,000 times. This one takes 16 bytes
    /// from a pool of random bytes that one call to `arc4random_buf` fills for 256 UUIDs.
    public static func random() -> UUID {
        let (first, second) = randomPool.withLock { $0.next() }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            raw.storeBytes(of: first, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: second, toByteOffset: 8, as: UInt64.self)
            raw[6] = (raw[6] & 0x0F) | 0x40 // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80 // RFC 4122 variant
        }
        return UUID(uuid: bytes)
    }

    private static let randomPool = Mutex(RandomPool())
}

/// Random bytes from the system, fetched a block at a time.
private struct RandomPool: ~Copyable {
    private static let count = 512
    private let words = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: RandomPool.count)
    private var used = RandomPool.count

    deinit { words.deallocate() }

    /// The next 16 bytes never handed out before.
    mutating func next() -> (UInt64, UInt64) {
        if used + 2 > Self.count {
            arc4random_buf(UnsafeMutableRawPointer(words.baseAddress!), Self.count * MemoryLayout<UInt64>.size)
            used = 0
        }
        defer { used += 2 }
        return (words[used], words[used + 1])
    }
}
