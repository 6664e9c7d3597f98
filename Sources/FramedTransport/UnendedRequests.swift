import NIOCore

/// The calls of a framed connection handed to GRPCCore (health, history, watches, a restore)
/// whose request has not ended, each with when its last frame came (its open frame, then each
/// message): one that goes the request timeout with no frame is ended, as a direct call whose
/// request does not end in time is (``PendingDirectCalls``). Without it, a call opened and never
/// ended held its place among the connection's calls, and the connection its place among the
/// daemon's, for as long as its client liked; a restore's messages may take longer than the
/// timeout as a whole, as long as they keep coming.
struct UnendedRequests {
    private var lastFrame: [UInt32: NIODeadline] = [:]

    var isEmpty: Bool { lastFrame.isEmpty }

    /// A frame of `stream`'s request came now (its open frame or a message).
    mutating func received(on stream: UInt32, at now: NIODeadline = .now()) {
        lastFrame[stream] = now
    }

    /// `stream`'s request ended, or the call did.
    mutating func remove(_ stream: UInt32) {
        lastFrame.removeValue(forKey: stream)
    }

    /// When the first of them goes quiet for `timeout`, if any is waiting.
    func earliestDeadline(timeout: TimeAmount) -> NIODeadline? {
        lastFrame.values.min().map { $0 + timeout }
    }

    /// Takes out and returns the streams whose last frame came at or before `cutoff`.
    mutating func takeQuiet(since cutoff: NIODeadline) -> [UInt32] {
        let quiet = lastFrame.filter { $0.value <= cutoff }.keys.sorted()
        for stream in quiet { lastFrame.removeValue(forKey: stream) }
        return quiet
    }
}
