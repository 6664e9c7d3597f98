import GRPCCore
import ModelCore
import ModelEngine
import ModelWire

extension QueryServiceHandler {
    /// Watch: a query kept true. The first response is the result; each later one follows a
    /// save that changed it (``QueryWatch``). The watch reads again only when the stream can
    /// take a response, so a slow client gets one difference covering every save since its last,
    /// and the daemon holds the last result and one token for it, whatever the rate of saves. A
    /// client that takes no response for the stall timeout is ended, as a fetch's is. What the
    /// watch holds counts against the daemon's ``WatchMemory``: one that does not fit ends. A
    /// caller no longer let read the store is refused its next response (PERMISSION_DENIED).
    func watch(
        request: Modeld_V1_WatchRequest, response: RPCWriter<Modeld_V1_WatchResponse>, context: ServerContext
    ) async throws {
        try await core.rpc.handle("Watch") {
            let store = try core.store(request.store, for: .read)
            try Self.checkWatchedFetch(request)
            let watch = try QueryWatch(try WatchedQuery(wire: request), on: store.container, hub: store.watches)
            let budget = FetchStreaming.budget(maximumMessageSize: core.configuration.maximumMessageSize)
            let memory = core.watchMemory
            try await core.rpc.cancellable {
                try await core.streams.run(.watch, store: store.name) { progress in
                    try await FetchStreaming.offEventLoop {
                        var held = 0
                        defer { memory.release(held) }
                        try memory.resize(&held, to: WatchMemory.perWatch)
                        var initial = true
                        while true {
                            let update: WatchUpdate
                            do {
                                update = try await watch.next()
                            } catch let error as ModelError where error.code == .closed {
                                throw store.droppedError
                            }
                            // A revoke (or leaving a granted group) ends the watch at its next
                            // result, rather than let it show what is saved after.
                            try core.checkAccess(.read, to: store.name)
                            try memory.resize(&held, to: WatchMemory.perWatch + update.result.estimatedSize)
                            for part in update.wireResponses(initial: initial, budget: budget) {
                                try await progress.writing { try await response.write(part) }
                            }
                            initial = false
                        }
                    }
                }
            }
        }
    }
}

extension QueryServiceHandler {
    /// Refuses what a watched fetch cannot do, as Fetch refuses it: a `batch_size` out of range
    /// (a watch sends its objects in parts of a byte budget, and checks it only), and a result
    /// type other than objects (a watch reports objects, and the differences between them).
    static func checkWatchedFetch(_ request: Modeld_V1_WatchRequest) throws(ModelError) {
        guard case .fetch(let fetch) = request.query else { return }
        try FetchStreaming.checkBatchSize(fetch.batchSize)
        switch fetch.resultType {
        case .objects: return
        case .identifiers, .count, .UNRECOGNIZED:
            throw ModelError(
                .invalidArgument,
                "a watched fetch reports objects: leave result_type OBJECTS (its default), and watch `count` for a count"
            )
        }
    }
}
