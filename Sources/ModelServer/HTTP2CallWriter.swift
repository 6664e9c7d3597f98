import FramedTransport
import GRPCCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import Synchronization

/// Writes the response parts of a call GRPCCore's server runs as its stream's frames: the
/// response headers wait for the first message or the status, so that a call refused before it
/// answers is one HEADERS frame of trailers alone, as gRPC has it. A write waits while more than
/// a bounded amount is queued on the stream (``OutboundQueue``): HTTP/2's flow control holds
/// back what a client does not read, and this holds back the handler.
final class HTTP2CallWriter: ClosableRPCWriterProtocol, Sendable {
    typealias Element = RPCResponsePart<[UInt8]>

    private let channel: any Channel
    private let outbound = OutboundQueue()
    /// The response headers not yet sent, whether they have been, and whether the status has.
    private let pending = Mutex<(headers: HPACKHeaders?, sent: Bool, ended: Bool)>((nil, false, false))

    init(channel: any Channel) {
        self.channel = channel
    }

    func write(_ part: RPCResponsePart<[UInt8]>) async throws {
        switch part {
        case .metadata(let metadata):
            var headers = HPACKHeaders.grpcResponse
            headers.add(metadata)
            pending.withLock { $0.headers = headers }
        case .message(let bytes):
            if let headers = takeHeaders() {
                try outbound.enqueue(HTTP2Frame.FramePayload.headers(.init(headers: headers)), size: 0, on: channel)
            }
            let message = GRPCMessageReader.framed(bytes, allocator: channel.allocator)
            let frame = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(message)))
            if try outbound.enqueue(frame, size: message.readableBytes, on: channel) {
                try await outbound.waitForRoom()
            }
        case .status(let status, let metadata):
            let (headers, sent) = pending.withLock { state in
                defer {
                    state.headers = nil
                    state.sent = true
                    state.ended = true
                }
                return (state.headers, state.sent)
            }
            if let headers {
                try outbound.enqueue(HTTP2Frame.FramePayload.headers(.init(headers: headers)), size: 0, on: channel)
            }
            // The status is not held back: it ends the stream however full the queue is.
            let trailers = HPACKHeaders.trailers(status: status, metadata: metadata, only: headers == nil && !sent)
            try outbound.enqueue(
                HTTP2Frame.FramePayload.headers(.init(headers: trailers, endStream: true)), size: 0, on: channel)
        }
    }

    func write(contentsOf elements: some Sequence<RPCResponsePart<[UInt8]>>) async throws {
        for element in elements { try await write(element) }
    }

    func finish() async {}

    func finish(throwing error: any Error) async {
        guard !pending.withLock({ $0.ended }) else { return }
        try? await write(.status(ServerCalls.status(closing: error), [:]))
    }

    /// The response headers, if they have not gone out yet (the first to ask sends them).
    private func takeHeaders() -> HPACKHeaders? {
        pending.withLock { state in
            defer {
                state.headers = nil
                state.sent = true
            }
            return state.headers
        }
    }
}
