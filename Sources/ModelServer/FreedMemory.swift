#if canImport(Glibc)
    import Glibc
#endif
import Synchronization

/// Gives back to the system the memory a big fetch's stream freed. glibc keeps what a program
/// frees in its arenas for the next allocations, and a stream's allocations are spread over the
/// threads that decode, encode and write it: after a PostgreSQL store streamed 100,000 objects of a
/// KB at full speed, the daemon's arenas held 84 MB of which 1.7 MB was in use (`malloc_stats`),
/// its resident size staying there until another stream reused it; `malloc_trim` took it from
/// 67 MB to 8 (docs/performance.md). So a stream that sent at least ``threshold`` bytes has the
/// arenas trimmed ``delay`` after it ends (once its last answer, its connection's buffers and its
/// backend's have been freed too), at most once an ``interval``.
final class FreedMemory: Sendable {
    /// The daemon's: glibc's `malloc_trim`.
    static let shared = FreedMemory(trim: mallocTrim)

    /// The bytes a stream sends before its end has the arenas trimmed.
    static let threshold = 16 * 1_048_576
    /// The least time between two trims (each locks every arena while it walks it).
    static let interval = Duration.seconds(1)
    /// How long after a stream's end its memory is given back.
    static let delay = Duration.milliseconds(200)

    private let trim: (@Sendable () -> Void)?
    private let lastTrim = Mutex<ContinuousClock.Instant?>(nil)

    /// Trims with `trim` (nil: nothing to trim with).
    init(trim: (@Sendable () -> Void)?) {
        self.trim = trim
    }

    /// Has the arenas trimmed shortly if a stream that sent `bytes` has just ended and no trim
    /// was asked for lately; returns whether one was.
    @discardableResult
    func streamEnded(sent bytes: Int) -> Bool {
        guard bytes >= Self.threshold, let trim else { return false }
        let now = ContinuousClock.now
        let due = lastTrim.withLock { last -> Bool in
            if let last, now - last < Self.interval { return false }
            last = now
            return true
        }
        guard due else { return false }
        Task.detached(priority: .background) {
            try? await Task.sleep(for: Self.delay)
            trim()
        }
        return true
    }

    /// glibc's `malloc_trim(0)`, looked up by name (Swift's Glibc module does not import
    /// `malloc.h`); nil where there is none.
    private static let mallocTrim: (@Sendable () -> Void)? = {
        #if canImport(Glibc)
            // RTLD_DEFAULT (a null handle): the symbol as the program sees it.
            guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
            let function = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
            return { _ = function(0) }
        #else
            return nil
        #endif
    }()
}
