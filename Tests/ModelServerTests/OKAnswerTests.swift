@testable import FramedTransport
import GRPCCore
import NIOCore
import Testing

/// A unary call's answer written in one go (`FramedServerTransport.okAnswer`) holds the frames
/// the general writers make: empty metadata, the message, and an OK status.
@Suite struct OKAnswerTests {
    private static func framesWrittenOneByOne(_ response: [UInt8], stream: UInt32) -> [UInt8] {
        let allocator = ByteBufferAllocator()
        var frames = allocator.frame(stream: stream, kind: .metadata) { $0.writeMetadata([:]) }
        var message = allocator.frame(stream: stream, kind: .message) { $0.writeBytes(response) }
        var status = ServerConnectionHandler.statusFrame(
            stream: stream, status: Status(code: .ok, message: ""), allocator: allocator
        ).bytes
        frames.writeBuffer(&message)
        frames.writeBuffer(&status)
        return Array(frames.readableBytesView)
    }

    static let answers: [([UInt8], UInt32)] = [
        ([], 1), ([7], 3), ((0...255).map { UInt8($0) }, 0x0102_0304),
        ([UInt8](repeating: 0xAB, count: 70_000), .max),
    ]

    @Test(arguments: answers)
    func theAnswerIsItsThreeFrames(response: [UInt8], stream: UInt32) {
        let answer = FramedServerTransport.okAnswer(response, stream: stream, allocator: ByteBufferAllocator())
        #expect(Array(answer.readableBytesView) == Self.framesWrittenOneByOne(response, stream: stream))
    }
}
