import FramedTransport
import ModelCore
import Foundation
import ModelWire
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Watches one HTTP/2 stream's request messages as their bytes arrive, ahead of gRPC's own
/// handler (which buffers a message until it is whole), and applies the limits the framed socket
/// applies (``ConnectionLimits``): a message whose 5-byte prefix announces more than the maximum
/// message size is refused with RESOURCE_EXHAUSTED naming the limit; one that does not arrive in
/// one frame reserves its size from the shared ``RequestBudget`` until it is whole (refused when
/// the budget is spent) and must be whole within the request timeout (DEADLINE_EXCEEDED). A
/// refusal is a trailers-only response and the stream is closed; the connection goes on.
final class HTTP2RequestGuard: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let limits: ConnectionLimits
    /// The prefix of the next message, while fewer than its 5 bytes have come.
    private var prefix: [UInt8] = []
    /// Bytes of the current message still to come, of the `announced` its prefix said.
    private var remaining = 0
    private var announced = 0
    private var reserved = 0
    private var timeout: Scheduled<Void>?
    private var refused = false

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let payload = unwrapInboundIn(data)
        var ends = false
        switch payload {
        case .data(let frame):
            if case .byteBuffer(let bytes) = frame.data {
                guard read(bytes, context: context) else { return }
            }
            ends = frame.endStream
        case .headers(let headers):
            ends = headers.endStream
        default:
            break
        }
        if ends, remaining > 0 || !prefix.isEmpty {
            // Said here, where the message's length is known: gRPC's reader says only that no
            // (or one fewer) message came.
            let arrived = prefix.isEmpty ? announced - remaining : prefix.count
            let what = prefix.isEmpty ? "its 5-byte prefix announced \(announced) bytes" : "its 5-byte prefix was cut"
            return refuse(
                context,
                ModelError(
                    .invalidArgument,
                    "the request's message was cut short: \(what), and \(arrived) arrived before the request ended; send each message whole"
                ))
        }
        context.fireChannelRead(data)
    }

    /// Follows the messages through `bytes`; false if the stream was refused.
    private func read(_ bytes: ByteBuffer, context: ChannelHandlerContext) -> Bool {
        var bytes = bytes
        while bytes.readableBytes > 0 {
            if remaining > 0 {
                let taken = min(remaining, bytes.readableBytes)
                bytes.moveReaderIndex(forwardBy: taken)
                remaining -= taken
                if remaining == 0 { messageEnded() }
                continue
            }
            let taken = min(5 - prefix.count, bytes.readableBytes)
            prefix += bytes.readBytes(length: taken) ?? []
            guard prefix.count == 5 else { break }
            let length = prefix[1...].reduce(0) { $0 << 8 | Int($1) }
            prefix = []
            guard length <= limits.maximumMessageSize else {
                refuse(
                    context,
                    ModelError(
                        .resourceExhausted,
                        "the request is \(length) bytes, over modeld's maximum message size of \(limits.maximumMessageSize) bytes (modeld --max-message-size): send less at a time"
                    ))
                return false
            }
            remaining = length
            announced = length
            if remaining == 0 { continue }
            // A message that does not end in this frame is held by gRPC until it is whole.
            if remaining > bytes.readableBytes {
                guard limits.requestBudget.reserve(length) else {
                    refuse(context, ModelError(.resourceExhausted, limits.requestBudget.refusal(for: length)))
                    return false
                }
                reserved = length
                let seconds = limits.requestTimeout.components.seconds
                timeout = context.eventLoop.assumeIsolated().scheduleTask(
                    in: .nanoseconds(Int64(limits.requestTimeout / .nanoseconds(1)))
                ) {
                    self.refuse(
                        context,
                        ModelError(
                            .deadlineExceeded,
                            "the request's \(length) bytes did not arrive within \(seconds) s (modeld --request-timeout); the call is ended"
                        ))
                }
            }
        }
        return true
    }

    private func messageEnded() {
        timeout?.cancel()
        timeout = nil
        limits.requestBudget.release(reserved)
        reserved = 0
    }

    /// Answers the stream with `error` as a trailers-only response and closes it.
    private func refuse(_ context: ChannelHandlerContext, _ error: ModelError) {
        guard !refused else { return }
        refused = true
        messageEnded()
        var headers = HPACKHeaders([
            (":status", "200"), ("content-type", "application/grpc"),
            ("grpc-status", String(ModelError.statusCode(for: error.code).rawValue)),
            ("grpc-message", Self.percentEncoded(error.rpcErrorMessage)),
        ])
        for (key, value) in error.rpcErrorMetadata {
            switch value {
            case .string(let text): headers.add(name: key, value: text)
            case .binary(let bytes): headers.add(name: key, value: Data(bytes).base64EncodedString())
            }
        }
        // Once the trailers are out (sooner could drop them), the client is asked to stop sending
        // the rest with RST_STREAM NO_ERROR, as HTTP/2 (RFC 9113, 8.1) says for a response that
        // ends before its request: a reset with CANCEL, which closing the stream sends, makes a
        // client that is still sending report CANCELLED instead of the status.
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in
            context.writeAndFlush(self.wrapOutboundOut(.rstStream(.noError)), promise: nil)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        messageEnded()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        messageEnded()
    }

    /// `grpc-message`'s encoding: printable ASCII but `%` as it is, every other byte as `%XX`.
    static func percentEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            if byte >= 0x20, byte <= 0x7E, byte != UInt8(ascii: "%") {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return encoded
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
