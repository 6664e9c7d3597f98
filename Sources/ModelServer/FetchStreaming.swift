import FramedTransport
import GRPCCore
import ModelCore
import ModelStorage
import ModelWire

/// Where a fetch's responses go: GRPCCore's writer of messages (HTTP/2, or a call with a
/// deadline), or a direct call's writer, which takes bytes written straight from the objects
/// (``FetchResponseEncoder``: building the messages first cost more than a small query).
enum FetchResponseSink: Sendable {
    case messages(RPCWriter<Modeld_V1_FetchResponse>)
    case direct(DirectResponseWriter)
}

/// Sends a fetch's results as a stream of responses: at most `batchSize` objects (or
/// identifiers) each, and well under the message size limit, so that no response is ever too big
/// to send however many objects match. The last response carries the count.
struct FetchStreaming {
    /// Objects per response when the request does not say.
    static let defaultBatchSize = 1_000
    static let maximumBatchSize = 10_000

    let batchSize: Int
    /// A response is sent once its estimated size reaches this.
    let byteBudget: Int

    /// The batch size a request asks for, checked.
    init(requested: Int32, maximumMessageSize: Int) throws(ModelError) {
        try Self.checkBatchSize(requested)
        batchSize = requested == 0 ? Self.defaultBatchSize : Int(requested)
        byteBudget = Self.budget(maximumMessageSize: maximumMessageSize)
    }

    /// Refuses a `batch_size` out of range (0 is the default).
    static func checkBatchSize(_ requested: Int32) throws(ModelError) {
        guard requested >= 0, requested <= maximumBatchSize else {
            throw ModelError(
                .invalidArgument,
                "batch_size \(requested) is out of range: use 1 to \(maximumBatchSize), or 0 for the default (\(defaultBatchSize))"
            )
        }
    }

    /// The size a streamed response aims to stay under: a megabyte (plenty to keep a stream
    /// busy), or less when the daemon's message limit is small; estimates stay well below a
    /// client's default 4 MiB limit.
    static func budget(maximumMessageSize: Int) -> Int {
        min(max(maximumMessageSize / 8, 16 * 1024), 1024 * 1024)
    }

    /// Sends a fetch's result. One that takes more than one response is sent off the event loop,
    /// registered with `streams` (which ends it if its client stops reading, and at shutdown).
    func send(_ result: FetchResult, to sink: FetchResponseSink, streams: StreamRegistry, store: String) async throws {
        let items =
            switch result {
            case .objects(let objects, let prefetched): objects.count + prefetched.count
            case .identifiers(let ids): ids.count
            case .count: 0
            }
        guard items <= batchSize else {
            return try await streams.run(.fetch, store: store) { progress in
                try await Self.offEventLoop { try await sendHere(result, to: sink, progress: progress) }
            }
        }
        try await sendHere(result, to: sink, progress: .untracked)
    }

    /// The bytes of the one response a small result is sent in: what ``send(_:to:streams:store:)``
    /// sends for it on a direct call. Nil for a result it would send in more than one (a batch of
    /// items or more, or past the byte budget) or with prefetched objects.
    func oneResponse(_ result: FetchResult) -> [UInt8]? {
        var encoder = FetchResponseEncoder()
        switch result {
        case .count(let count):
            encoder.setCount(count)
            return encoder.finish()
        case .identifiers(let ids):
            guard ids.count < batchSize else { return nil }
            for id in ids { encoder.append(identifier: id.uriRepresentation) }
        case .objects(let objects, let prefetched):
            guard prefetched.isEmpty, objects.count < batchSize else { return nil }
            for object in objects { encoder.append(object) }
        }
        guard encoder.byteCount < byteBudget else { return nil }
        encoder.setCount(result.count)
        return encoder.finish()
    }

    /// A sink for the objects of the one response a small objects fetch is sent in, taking no
    /// more (the read given up) where ``oneResponse(_:)`` would refuse the result: at a batch of
    /// objects, or past the byte budget.
    func oneResponseSink(expectedObjects: Int) -> OneResponseSink {
        OneResponseSink(batchSize: batchSize, byteBudget: byteBudget, expectedObjects: expectedObjects)
    }

    /// Runs `body` on Swift's shared threads: a direct call runs on its connection's event loop,
    /// which must not spend long encoding a big result while its other connections wait.
    static func offEventLoop<T>(_ body: () async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(globalConcurrentExecutor, operation: body)
    }

    private func sendHere(_ result: FetchResult, to sink: FetchResponseSink, progress: StreamProgress) async throws {
        var response = PendingResponse(streaming: self, sink: sink, progress: progress)
        switch result {
        case .count(let count):
            response.setCount(count)
        case .identifiers(let ids):
            for id in ids { try await response.add(identifier: id.uriRepresentation) }
            response.setCount(ids.count)
        case .objects(let objects, let prefetched):
            for object in objects { try await response.add(object, prefetched: false) }
            for object in prefetched { try await response.add(object, prefetched: true) }
            response.setCount(objects.count)
        }
        try await response.send()
    }

    /// Sends an objects fetch as the backend reads it, batch by batch, so that the daemon holds
    /// a few batches rather than every object, however many match.
    func stream(
        _ descriptor: FetchDescriptor, from backend: any StorageBackend, to sink: FetchResponseSink,
        progress: StreamProgress
    ) async throws {
        try await Self.offEventLoop {
            var response = PendingResponse(streaming: self, sink: sink, progress: progress)
            let count = try await backend.fetchObjects(descriptor, batchSize: batchSize) { batch, prefetched in
                for object in batch { try await response.add(object, prefetched: prefetched) }
            }
            response.setCount(count)
            try await response.send()
            FreedMemory.shared.streamEnded(sent: response.sentBytes)
        }
    }

    /// The response being filled, sent when it holds a batch or its byte budget: a message for
    /// GRPCCore, or bytes written straight from the objects for a direct call.
    private struct PendingResponse {
        let streaming: FetchStreaming
        let sink: FetchResponseSink
        let progress: StreamProgress
        var message = Modeld_V1_FetchResponse()
        var encoder = FetchResponseEncoder()
        var items = 0
        var estimatedBytes = 0
        /// The bytes of the responses sent so far (estimated for messages).
        var sentBytes = 0

        init(streaming: FetchStreaming, sink: FetchResponseSink, progress: StreamProgress) {
            self.streaming = streaming
            self.sink = sink
            self.progress = progress
        }

        mutating func add(_ object: ObjectSnapshot, prefetched: Bool) async throws {
            switch sink {
            case .messages:
                if prefetched { message.prefetched.append(object.wire) } else { message.objects.append(object.wire) }
                estimatedBytes += object.estimatedSize
            case .direct:
                encoder.append(object, prefetched: prefetched)
            }
            try await added()
        }

        mutating func add(identifier uri: String) async throws {
            switch sink {
            case .messages:
                message.identifiers.append(uri)
                estimatedBytes += uri.utf8.count + 4
            case .direct:
                encoder.append(identifier: uri)
            }
            try await added()
        }

        private mutating func added() async throws {
            items += 1
            let bytes = if case .direct = sink { encoder.byteCount } else { estimatedBytes }
            if items >= streaming.batchSize || bytes >= streaming.byteBudget { try await send() }
        }

        /// Sets the count of results, which goes with the last response.
        mutating func setCount(_ count: Int) {
            message.count = Int64(count)
            encoder.setCount(count)
        }

        /// Sends the response; the time its write waits is the client's (``StreamProgress``).
        mutating func send() async throws {
            switch sink {
            case .messages(let writer):
                let message = message
                try await progress.writing { try await writer.write(message) }
                self.message = Modeld_V1_FetchResponse()
                sentBytes += estimatedBytes
            case .direct(let writer):
                let bytes = encoder.finish()
                sentBytes += bytes.count
                try await progress.writing { try await writer.write(bytes) }
            }
            items = 0
            estimatedBytes = 0
        }
    }
}

/// The objects of one fetch response as a backend reads them (``FetchStreaming/oneResponseSink(expectedObjects:)``).
struct OneResponseSink: ObjectRowSink {
    let batchSize: Int
    let byteBudget: Int
    private var encoder = FetchResponseEncoder()
    private var count = 0

    init(batchSize: Int, byteBudget: Int, expectedObjects: Int) {
        self.batchSize = batchSize
        self.byteBudget = byteBudget
        encoder.expectedObjects = expectedObjects
    }

    mutating func add(_ row: ObjectRow) -> Bool {
        encoder.append(row)
        count += 1
        return takesMore
    }

    mutating func add(_ snapshot: ObjectSnapshot) -> Bool {
        encoder.append(snapshot)
        count += 1
        return takesMore
    }

    mutating func add(
        id: PersistentIdentifier, version: Int64, shape: ObjectShape, toOne: [PersistentIdentifier?],
        cells: (Int) -> RowCell
    ) -> Bool {
        encoder.append(
            id: id, version: version, shape: shape, count: shape.attributeNames.count, toOne: toOne, cells: cells)
        count += 1
        return takesMore
    }

    private var takesMore: Bool { count < batchSize && encoder.byteCount < byteBudget }

    /// The response's bytes, with the count.
    mutating func finish() -> [UInt8] {
        encoder.setCount(count)
        return encoder.finish()
    }
}
