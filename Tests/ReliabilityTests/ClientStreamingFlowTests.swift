import FramedTransport
import Foundation
import GRPCCore
import ModelTesting
import Synchronization
import Testing

/// A client-streaming call on the framed socket whose handler does not keep up (a restore onto a
/// slow disk) must not pile the client's messages up in the server's memory: the connection stops
/// reading past a few MiB held, the client's writes wait, and all of it arrives, in order, once
/// the handler takes it.
@Suite struct ClientStreamingFlowTests {
    static let method = MethodDescriptor(fullyQualifiedService: "test.Flow", method: "Upload")
    static let messages = 32
    static let messageSize = 1024 * 1024

    /// Counts the bytes of an upload once `gate` opens; answers their total and whether they
    /// came in order (each message is filled with its index).
    struct UploadService: RegistrableRPCService {
        let gate: AsyncStream<Void>

        func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
            router.registerHandler(
                forMethod: ClientStreamingFlowTests.method, deserializer: RawBytes(), serializer: RawBytes()
            ) { request, _ in
                for await _ in gate { break }
                var total = 0
                var inOrder = true
                var index = 0
                for try await message in request.messages {
                    inOrder = inOrder && message.allSatisfy { $0 == UInt8(index % 256) }
                    total += message.count
                    index += 1
                }
                return StreamingServerResponse(single: ServerResponse(message: Array("\(total) \(inOrder)".utf8)))
            }
        }
    }

    final class SentCount: Sendable {
        let count = Atomic(0)
    }

    /// Serves ``UploadService`` (its handler waiting for `gate`) on a framed socket of its own,
    /// and runs `body` with the server's transport and a client of it.
    private func withUploadServer(
        gate: AsyncStream<Void>,
        _ body: (FramedServerTransport, FramedClientTransport, GRPCClient<FramedClientTransport>) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory.make(prefix: "flow")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("framed").path
        let transport = FramedServerTransport(
            path: path, limits: ConnectionLimits(maximumMessageSize: 2 * Self.messageSize))
        let server = GRPCServer(transport: transport, services: [UploadService(gate: gate)])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            try await transport.waitUntilListening()
            let clientTransport = FramedClientTransport(path: path)
            try await withGRPCClient(transport: clientTransport) { client in
                try await body(transport, clientTransport, client)
            }
            server.beginGracefulShutdown()
            try await group.waitForAll()
        }
    }

    /// Uploads ``messages`` messages of 1 MiB (each filled with its index), counting each in
    /// `sent` once written, after `beforeWriting` is done with its index; the server's answer.
    private func upload(
        on client: GRPCClient<FramedClientTransport>, counting sent: SentCount,
        beforeWriting: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> Task<String, any Error> {
        Task {
            try await client.clientStreaming(
                request: StreamingClientRequest(producer: { writer in
                    for index in 0..<Self.messages {
                        await beforeWriting(index)
                        try await writer.write([UInt8](repeating: UInt8(index % 256), count: Self.messageSize))
                        sent.count.add(1, ordering: .relaxed)
                    }
                }), descriptor: Self.method, serializer: RawBytes(), deserializer: RawBytes(),
                options: .defaults
            ) { String(decoding: try $0.message, as: UTF8.self) }
        }
    }

    @Test func aSlowHandlerPausesTheClientInsteadOfBufferingItsMessages() async throws {
        let (gate, open) = AsyncStream<Void>.makeStream()
        let sent = SentCount()
        try await withUploadServer(gate: gate) { transport, _, client in
            let upload = upload(on: client, counting: sent)
            // The server stops reading once it holds a few MiB the handler has not taken...
            while transport.inboundFlow.pausedConnections == 0, sent.count.load(ordering: .relaxed) < Self.messages {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(transport.inboundFlow.pausedConnections == 1)
            // ...and the client, its socket full, cannot send the rest meanwhile.
            try await Task.sleep(for: .milliseconds(300))
            let sentWhilePaused = sent.count.load(ordering: .relaxed)
            #expect(
                sentWhilePaused < Self.messages,
                "\(sentWhilePaused) MiB sent to a handler that took none (\(transport.inboundFlow.pauses) pauses, peak \(transport.inboundFlow.peakHeld) bytes)"
            )
            #expect(transport.inboundFlow.peakHeld <= 4 * 1024 * 1024 + 3 * Self.messageSize)
            open.yield()
            open.finish()
            #expect(try await upload.value == "\(Self.messages * Self.messageSize) true")
            #expect(sent.count.load(ordering: .relaxed) == Self.messages)
            #expect(transport.inboundFlow.pausedConnections == 0)
            #expect(transport.inboundFlow.pauses >= 1)
            // The server held at most the pause threshold and the messages in flight past it.
            let peak = transport.inboundFlow.peakHeld
            #expect(peak <= 4 * 1024 * 1024 + 3 * Self.messageSize, "held \(peak) bytes at most")
        }
    }

    /// The client's side of the same: its writer runs on another thread than the connection's
    /// event loop, and the channel's writability changes only when the loop runs. With the loop
    /// held up (here: blocked on purpose), the writer waits once about 1 MiB is unwritten rather
    /// than queueing the whole upload in the client's memory.
    @Test func aWriterAheadOfItsEventLoopWaitsForIt() async throws {
        let (gate, open) = AsyncStream<Void>.makeStream()
        open.yield()
        let sent = SentCount()
        try await withUploadServer(gate: gate) { _, clientTransport, client in
            let (firstSent, firstSentDone) = AsyncStream<Void>.makeStream()
            let (loopHeld, loopHeldDone) = AsyncStream<Void>.makeStream()
            let upload = upload(on: client, counting: sent) { index in
                guard index == 1 else { return }
                firstSentDone.finish()
                for await _ in loopHeld {}
            }
            for await _ in firstSent {}
            // The connection's event loop runs nothing else until `release` is signalled.
            let release = DispatchSemaphore(value: 0)
            Task(executorPreference: clientTransport.executor) {
                loopHeldDone.finish()
                Self.wait(for: release)
            }
            try await Task.sleep(for: .milliseconds(300))
            let sentWhileHeld = sent.count.load(ordering: .relaxed)
            release.signal()
            #expect(sentWhileHeld <= 3, "\(sentWhileHeld) MiB queued while the client's event loop was held up")
            #expect(try await upload.value == "\(Self.messages * Self.messageSize) true")
        }
    }

    /// Blocks the calling thread until `semaphore` is signalled.
    private static func wait(for semaphore: DispatchSemaphore) {
        semaphore.wait()
    }
}
