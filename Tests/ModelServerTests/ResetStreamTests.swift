import GRPCCore
import ModelCore
@testable import ModelRemote
import Testing

/// A stream the daemon resets without a status is read by what the request could have been:
/// the transport resets requests over the size limit, and the daemon resets calls when it stops.
@Suite struct ResetStreamTests {
    static let reset = RPCError(
        code: .unavailable, message: "Stream unexpectedly closed: received RST_STREAM frame (0x8: cancel).")

    @Test func aResetLargeRequestPointsAtTheSizeLimit() throws {
        let client = try DaemonClient.connect(socketPath: "/nonexistent/modeld.sock")
        defer { client.close() }
        let error = client.translate(Self.reset, small: false)
        #expect(error.code == .resourceExhausted)
        #expect(error.message.contains("maximum message size"), "\(error.message)")
    }

    /// A request well under the smallest size limit the daemon allows cannot be what the limit
    /// refused; blaming its size would send the reader the wrong way.
    @Test func aResetSmallRequestSaysTheDaemonEndedIt() throws {
        let client = try DaemonClient.connect(socketPath: "/nonexistent/modeld.sock")
        defer { client.close() }
        let error = client.translate(Self.reset, small: true)
        #expect(error.code == .unavailable)
        #expect(error.message.contains("ended the call") && !error.message.contains("message size"), "\(error.message)")
        #expect(error.context["socket"] == "/nonexistent/modeld.sock")
    }
}
