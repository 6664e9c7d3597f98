import FramedTransport
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelCore
import ModelRemote
import ModelTesting
import ModelWire
import Testing

/// A client cannot claim to be someone else: the caller's identity is what the kernel says of
/// the socket (`SO_PEERCRED`), and headers that name another user are dropped, on both
/// transports. The test (root) creates stores with forged `modeld-peer-*` headers naming another
/// uid: each store is root's all the same.
@Suite struct ForgedCallerTests {
    @Test(arguments: DaemonTransport.allCases)
    func forgedCallerHeadersAreIgnored(_ transport: DaemonTransport) async throws {
        try await StalledClients.withDaemon { daemon in
            var forged = Metadata()
            forged.addString("4242", forKey: PeerCredentials.uidKey)
            forged.addString("4242", forKey: PeerCredentials.gidKey)
            forged.addString("1", forKey: PeerCredentials.pidKey)
            let request = Modeld_V1_CreateStoreRequest.with { $0.name = "forged-\(transport)" }
            let created: Modeld_V1_StoreInfo
            switch transport {
            case .http2:
                let http2 = try HTTP2ClientTransport.Posix(
                    target: .unixDomainSocket(path: daemon.socketPath), transportSecurity: .plaintext)
                created = try await withGRPCClient(transport: http2) {
                    try await Modeld_V1_StoreService.Client(wrapping: $0).createStore(request, metadata: forged)
                }
            case .framed:
                let path = try #require(DefaultLocations.framedSocketPath(for: daemon.socketPath))
                created = try await withGRPCClient(transport: FramedClientTransport(path: path)) {
                    try await Modeld_V1_StoreService.Client(wrapping: $0).createStore(request, metadata: forged)
                }
            }
            #expect(created.owner == "root", "\(created.owner)")
        }
    }
}
