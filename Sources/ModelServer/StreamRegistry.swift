import ModelCore
import Synchronization

/// The streams the daemon is sending (fetches and histories), and the limits that keep a client
/// that stops reading from holding the daemon's resources:
/// - a fetch streamed as the store reads it holds the store's snapshot (an SQLite reader of its
///   own) until it ends, so at most ``maximumStreamingFetches`` run at once; a fetch that waits
///   longer than the stall timeout for one of them is refused (RESOURCE_EXHAUSTED);
/// - a fetch whose client has not taken a response for ``stallTimeout`` is ended
///   (RESOURCE_EXHAUSTED), which frees what it held;
/// - at shutdown every stream is ended (UNAVAILABLE), so that clients that stopped reading do
///   not hold the daemon up.
final class StreamRegistry: Sendable {
    enum Kind: Sendable {
        /// A fetch read from the store as it is sent: holds a streaming slot, and is ended when
        /// its client stalls.
        case streamedFetch
        /// A fetch read whole, then sent: ended when its client stalls.
        case fetch
        /// A history: ended only at shutdown (it holds nothing while it waits).
        case history
        /// A watch: ended when its client stalls (it holds its last result), and at shutdown.
        case watch
    }

    let maximumStreamingFetches: Int
    let stallTimeout: Duration
    private let slots: AsyncSemaphore
    private let streams = Mutex<[ObjectIdentifier: SentStream]>([:])
    private let stopping = Atomic(false)
    private let inUse = Atomic(0)

    init(maximumStreamingFetches: Int, stallTimeout: Duration) {
        self.maximumStreamingFetches = maximumStreamingFetches
        self.stallTimeout = stallTimeout
        slots = AsyncSemaphore(permits: maximumStreamingFetches)
    }

    /// Streamed fetches under way.
    var streamingFetches: Int { inUse.load(ordering: .relaxed) }

    /// Streams of `kind` being sent now.
    func count(of kind: Kind) -> Int {
        streams.withLock { $0.values.reduce(0) { $0 + ($1.kind == kind ? 1 : 0) } }
    }

    /// Runs `body`, which sends a stream of `kind` on store `store`, under the limits. A stream
    /// the registry ends throws the reason, whatever `body` threw.
    func run<T>(_ kind: Kind, store: String, _ body: (StreamProgress) async throws -> T) async throws -> T {
        if case .streamedFetch = kind { try await takeSlot() }
        defer {
            if case .streamedFetch = kind {
                inUse.subtract(1, ordering: .relaxed)
                slots.release()
            }
        }
        let stream = SentStream(kind: kind)
        let key = ObjectIdentifier(stream)
        withUnsafeCurrentTask { stream.attach($0) }
        let isStopping = streams.withLock { streams in
            streams[key] = stream
            return stopping.load(ordering: .relaxed)
        }
        defer {
            streams.withLock { _ = $0.removeValue(forKey: key) }
            stream.detach()
        }
        if isStopping { stream.end(.stopping) }
        do {
            try Task.checkCancellation()
            return try await body(StreamProgress(stream: stream))
        } catch {
            if let reason = stream.endReason { throw reason.error(store: store, stallTimeout: stallTimeout) }
            throw error
        }
    }

    /// Takes a streaming slot, waiting at most the stall timeout for one.
    private func takeSlot() async throws {
        if slots.tryAcquire() {
            inUse.add(1, ordering: .relaxed)
            return
        }
        let slots = slots, timeout = stallTimeout
        let taken = await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await slots.acquire()) != nil }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            // When the time ran out first, the wait may still have got a slot as it was cancelled.
            return first ? true : await group.next() ?? false
        }
        if taken, Task.isCancelled { slots.release() }
        try Task.checkCancellation()
        guard taken else {
            throw ModelError(
                .resourceExhausted,
                "\(maximumStreamingFetches) fetches are streaming already (modeld --max-streaming-fetches), and none ended within \(stallTimeout.components.seconds) s: try again shortly"
            )
        }
        inUse.add(1, ordering: .relaxed)
    }

    /// Ends the watched streams that have waited for their client longer than the stall
    /// timeout; runs until cancelled.
    func endStalledStreams() async throws {
        let interval = min(max(stallTimeout / 4, .milliseconds(50)), .seconds(1))
        while true {
            try await Task.sleep(for: interval)
            let now = ContinuousClock.now
            for stream in streams.withLock({ Array($0.values) }) where stream.isStalled(at: now, after: stallTimeout) {
                stream.end(.stalled)
            }
        }
    }

    /// Ends every stream, and those that start from now on: the daemon is stopping.
    func endAll() {
        let all = streams.withLock { streams in
            stopping.store(true, ordering: .relaxed)
            return Array(streams.values)
        }
        for stream in all { stream.end(.stopping) }
    }
}

/// What a stream's sender tells the registry: when it waits for its client.
struct StreamProgress: Sendable {
    fileprivate let stream: SentStream?

    /// For streams the registry does not watch.
    static let untracked = StreamProgress(stream: nil)

    /// Runs `write`, counted as waiting for the client while it runs.
    func writing<T>(_ write: () async throws -> T) async throws -> T {
        stream?.startedWaiting()
        defer { stream?.stoppedWaiting() }
        return try await write()
    }
}

/// One stream being sent: the task sending it (to cancel), since when it waits for its client,
/// and why the registry ended it, if it did.
private final class SentStream: Sendable {
    enum EndReason: Sendable {
        case stalled
        case stopping

        func error(store: String, stallTimeout: Duration) -> ModelError {
            switch self {
            case .stalled:
                ModelError(
                    .resourceExhausted,
                    "the client took no response of this stream for \(stallTimeout.components.seconds) s, so it was ended to free what it held of store '\(store)' (modeld --stream-stall-timeout): read responses as they come, or fetch in pages (limit and offset)",
                    context: ["store": store])
            case .stopping:
                ModelError(
                    .unavailable, "modeld is stopping: the stream was ended; call again once it is back",
                    context: ["store": store])
            }
        }
    }

    /// The task, which may be cancelled from another thread while it runs; the lock keeps it
    /// from finishing while it is being cancelled, and no cancel reaches it once detached.
    private struct Running: @unchecked Sendable { // UnsafeCurrentTask is used only under the lock, while the task runs.
        var task: UnsafeCurrentTask?
    }

    let kind: StreamRegistry.Kind
    /// Whether it is ended when its client stalls (every kind but a history).
    var watched: Bool { kind != .history }
    private let running = Mutex(Running())
    private let reason = Mutex<EndReason?>(nil)
    /// When the stream began to wait for its client (ContinuousClock), or nil.
    private let waitingSince = Mutex<ContinuousClock.Instant?>(nil)

    init(kind: StreamRegistry.Kind) {
        self.kind = kind
    }

    func attach(_ task: UnsafeCurrentTask?) { running.withLock { $0.task = task } }
    func detach() { running.withLock { $0.task = nil } }

    var endReason: EndReason? { reason.withLock { $0 } }

    func startedWaiting() { waitingSince.withLock { $0 = .now } }
    func stoppedWaiting() { waitingSince.withLock { $0 = nil } }

    func isStalled(at now: ContinuousClock.Instant, after timeout: Duration) -> Bool {
        guard watched, let since = waitingSince.withLock({ $0 }) else { return false }
        return now - since > timeout
    }

    /// Ends the stream: its task is cancelled, and its error is `why`.
    func end(_ why: EndReason) {
        reason.withLock { if $0 == nil { $0 = why } }
        running.withLock { $0.task?.cancel() }
    }
}
