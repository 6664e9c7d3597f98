import GRPCCore
import ModelCore
import ModelStorage
import ModelWire

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
        guard requested >= 0, requested <= Self.maximumBatchSize else {
            throw ModelError(.invalidArgument, "batch_size \(requested) is out of range: use 1 to \(Self.maximumBatchSize), or 0 for the default (\(Self.defaultBatchSize))")
        }
        batchSize = requested == 0 ? Self.defaultBatchSize : Int(requested)
        byteBudget = Self.budget(maximumMessageSize: maximumMessageSize)
    }

    /// The size a streamed response aims to stay under: a megabyte (plenty to keep a stream
    /// busy), or less when the daemon's message limit is small; estimates stay well below a
    /// client's default 4 MiB limit.
    static func budget(maximumMessageSize: Int) -> Int {
        min(max(maximumMessageSize / 8, 16 * 1024), 1024 * 1024)
    }

    func send(_ result: FetchResult, to writer: RPCWriter<Modeld_V1_FetchResponse>) async throws {
        let items = switch result {
        case .objects(let objects, let prefetched): objects.count + prefetched.count
        case .identifiers(let ids): ids.count
        case .count: 0
        }
        guard items <= batchSize else {
            return try await Self.offEventLoop { try await sendHere(result, to: writer) }
        }
        try await sendHere(result, to: writer)
    }

    /// Runs `body` on Swift's shared threads: a direct call runs on its connection's event loop,
    /// which must not spend long encoding a big result while its other connections wait.
    static func offEventLoop<T>(_ body: () async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(globalConcurrentExecutor, operation: body)
    }

    private func sendHere(_ result: FetchResult, to writer: RPCWriter<Modeld_V1_FetchResponse>) async throws {
        switch result {
        case .count(let count):
            try await writer.write(Modeld_V1_FetchResponse.with { $0.count = Int64(count) })
        case .identifiers(let ids):
            var response = Modeld_V1_FetchResponse()
            var bytes = 0
            for id in ids {
                let uri = id.uriRepresentation
                response.identifiers.append(uri)
                bytes += uri.utf8.count + 4
                if response.identifiers.count >= batchSize || bytes >= byteBudget {
                    try await writer.write(response)
                    response = Modeld_V1_FetchResponse()
                    bytes = 0
                }
            }
            response.count = Int64(ids.count)
            try await writer.write(response)
        case .objects(let objects, let prefetched):
            var responses = ObjectResponses(streaming: self, writer: writer)
            for object in objects { try await responses.add(object, prefetched: false) }
            for object in prefetched { try await responses.add(object, prefetched: true) }
            try await responses.finish(count: objects.count)
        }
    }

    /// Sends an objects fetch as the backend reads it, batch by batch, so that the daemon holds
    /// a few batches rather than every object, however many match.
    func stream(_ descriptor: FetchDescriptor, from backend: any StorageBackend,
                to writer: RPCWriter<Modeld_V1_FetchResponse>) async throws {
        try await Self.offEventLoop {
            var responses = ObjectResponses(streaming: self, writer: writer)
            let count = try await backend.fetchObjects(descriptor, batchSize: batchSize) { batch, prefetched in
                for object in batch { try await responses.add(object, prefetched: prefetched) }
            }
            try await responses.finish(count: count)
        }
    }

    /// The response being filled with objects, sent when it holds a batch or its byte budget.
    private struct ObjectResponses {
        let streaming: FetchStreaming
        let writer: RPCWriter<Modeld_V1_FetchResponse>
        var response = Modeld_V1_FetchResponse()
        var bytes = 0

        init(streaming: FetchStreaming, writer: RPCWriter<Modeld_V1_FetchResponse>) {
            self.streaming = streaming
            self.writer = writer
        }

        mutating func add(_ snapshot: ObjectSnapshot, prefetched: Bool) async throws {
            if prefetched { response.prefetched.append(snapshot.wire) } else { response.objects.append(snapshot.wire) }
            bytes += FetchStreaming.estimatedSize(snapshot)
            if response.objects.count + response.prefetched.count >= streaming.batchSize || bytes >= streaming.byteBudget {
                try await writer.write(response)
                response = Modeld_V1_FetchResponse()
                bytes = 0
            }
        }

        /// Sends what is left, with the count of results.
        mutating func finish(count: Int) async throws {
            response.count = Int64(count)
            try await writer.write(response)
        }
    }

    /// About how many bytes an object takes on the wire (an overestimate).
    static func estimatedSize(_ snapshot: ObjectSnapshot) -> Int {
        var size = 96
        for (name, value) in snapshot.attributes {
            size += name.utf8.count + 16
            switch value {
            case .string(let text), .json(let text): size += text.utf8.count
            case .data(let bytes): size += bytes.count
            case .url(let url): size += url.absoluteString.utf8.count
            case .decimal: size += 40
            case .uuid: size += 36
            default: size += 10
            }
        }
        for (name, value) in snapshot.relationships {
            size += name.utf8.count + 16
            switch value {
            case .toOne: size += 100
            case .toMany(let ids): size += ids.count * 100
            }
        }
        return size
    }
}
