import Dispatch
import FramedTransport
import Foundation
import GRPCCore
import ModelFixtures
import ModelTesting
import Synchronization
import Testing

/// Direct calls a deferred handler takes (``DirectMethods/DeferredHandler``, how modeld saves a
/// framed `Apply` without a task): answered later from another thread, cancelled by their
/// client or by a stopping server (the handler is told, and the call still ends with one
/// answer), declined to the usual handler, or refused with the error the handler throws. Each
/// test waits for the events it names.
@Suite struct DeferredCallTests {
    static let method = MethodDescriptor(fullyQualifiedService: "test.Deferred", method: "Take")

    /// The calls the deferred handler took, and what happened to them.
    final class Taken: Sendable {
        private let answers = Mutex<[String: DeferredAnswer]>([:])
        private let cancelled = Mutex<Set<String>>([])
        let events = Mutex<[String: TestEvent]>([:])

        /// The event named `name`, made on first use.
        func event(_ name: String) -> TestEvent {
            events.withLock { events in
                if let event = events[name] { return event }
                let event = TestEvent()
                events[name] = event
                return event
            }
        }

        func take(_ request: String, _ answer: DeferredAnswer) {
            answers.withLock { $0[request] = answer }
            answer.onCancel { [self] in
                cancelled.withLock { _ = $0.insert(request) }
                event("cancelled \(request)").signal()
            }
            event("taken \(request)").signal()
        }

        func answer(_ request: String) -> DeferredAnswer? { answers.withLock { $0[request] } }
        func wasCancelled(_ request: String) -> Bool { cancelled.withLock { $0.contains(request) } }
    }

    /// A server whose one method is deferred: "decline…" requests go to the unary handler
    /// (which answers "usual"), "throw…" ones are refused, others are taken (``Taken``).
    private func withServer(
        _ body: (GRPCServer<FramedServerTransport>, Taken, GRPCClient<FramedClientTransport>) async throws -> Void
    ) async throws {
        let taken = Taken()
        var methods = DirectMethods()
        methods.register(
            Self.method,
            deferred: { request, _, answer in
                let text = String(decoding: request, as: UTF8.self)
                if text.hasPrefix("decline") { return false }
                if text.hasPrefix("throw") { throw RPCError(code: .failedPrecondition, message: "refused \(text)") }
                taken.take(text, answer)
                return true
            }, otherwise: { _, _ in Array("usual".utf8) })
        let directory = try TemporaryDirectory.make(prefix: "defer")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("framed").path
        let transport = FramedServerTransport(
            path: path, limits: ConnectionLimits(maximumMessageSize: 1024 * 1024), directMethods: methods)
        let server = GRPCServer(transport: transport, services: [])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            try await transport.waitUntilListening()
            try await withGRPCClient(transport: FramedClientTransport(path: path)) { client in
                try await body(server, taken, client)
            }
            server.beginGracefulShutdown()
            try await group.waitForAll()
        }
    }

    private func call(_ client: GRPCClient<FramedClientTransport>, _ text: String) async throws -> String {
        try await client.unary(
            request: ClientRequest(message: Array(text.utf8)), descriptor: Self.method, serializer: RawBytes(),
            deserializer: RawBytes(), options: .defaults
        ) { String(decoding: try $0.message, as: UTF8.self) }
    }

    @Test func aTakenCallIsAnsweredFromAnotherThreadWithWhatItsAnswerMakes() async throws {
        try await withServer { _, taken, client in
            let call = Task { try await self.call(client, "one") }
            #expect(await taken.event("taken one").wait(timeout: .seconds(20)))
            let answer = try #require(taken.answer("one"))
            DispatchQueue.global().async {
                answer.answer { Array("answered one".utf8) }
                // Only the first answer counts.
                answer.answer { Array("again".utf8) }
            }
            #expect(try await call.value == "answered one")
            // The connection goes on serving.
            #expect(try await self.call(client, "decline two") == "usual")
        }
    }

    @Test func anErrorMadeByTheAnswerEndsTheCallWithItsStatus() async throws {
        try await withServer { _, taken, client in
            let call = Task { try await self.call(client, "one") }
            #expect(await taken.event("taken one").wait(timeout: .seconds(20)))
            taken.answer("one")?.answer { throw RPCError(code: .aborted, message: "the save conflicted") }
            let error = await #expect(throws: RPCError.self) { try await call.value }
            #expect(error?.code == .aborted && error?.message == "the save conflicted")
        }
    }

    @Test func aDeclinedCallRunsItsUsualHandlerAndAThrownErrorAnswersAtOnce() async throws {
        try await withServer { _, taken, client in
            let declined = try await self.call(client, "decline")
            #expect(declined == "usual")
            let error = await #expect(throws: RPCError.self) { try await self.call(client, "throw it") }
            #expect(error?.code == .failedPrecondition && error?.message == "refused throw it")
            #expect(taken.answer("decline") == nil)
        }
    }

    @Test func aCallItsClientCancelsTellsTheHandlerWhichStillAnswersIt() async throws {
        try await withServer { _, taken, client in
            let call = Task { try await self.call(client, "one") }
            #expect(await taken.event("taken one").wait(timeout: .seconds(20)))
            #expect(!taken.wasCancelled("one"))
            call.cancel()
            #expect(await taken.event("cancelled one").wait(timeout: .seconds(20)))
            // The handler gives its work up and answers, as a save given up does.
            taken.answer("one")?.answer { throw RPCError(code: .cancelled, message: "given up") }
            // The client's cancelled call ends with its transport's error, whatever the answer.
            await #expect(throws: (any Error).self) { try await call.value }
            // A handler's cancel action set after the call was cancelled runs at once.
            let late = TestEvent()
            taken.answer("one")?.onCancel { late.signal() }
            #expect(late.hasHappened)
            let next = try await self.call(client, "decline two")
            #expect(next == "usual")
        }
    }

    @Test func aStoppingServerCancelsATakenCallAndWaitsForItsAnswer() async throws {
        try await withServer { server, taken, client in
            let call = Task { try await self.call(client, "one") }
            #expect(await taken.event("taken one").wait(timeout: .seconds(20)))
            server.beginGracefulShutdown()
            #expect(await taken.event("cancelled one").wait(timeout: .seconds(20)))
            #expect(taken.wasCancelled("one"))
            taken.answer("one")?.answer { Array("finished while stopping".utf8) }
            let answered = try await call.value
            #expect(answered == "finished while stopping")
        }
    }
}
