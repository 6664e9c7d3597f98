import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import ModelTesting
import ModelWire
import SwiftProtobuf
import Testing

/// gRPC server reflection (v1) over HTTP/2: the services, the files that define symbols with
/// their imports, and NOT_FOUND answers for what is not there.
@Suite struct ReflectionTests {
    @Test func reflectionDescribesTheDaemonsProtos() async throws {
        let daemon = try await TestDaemon.shared
        let transport = try HTTP2ClientTransport.Posix(
            target: .unixDomainSocket(path: daemon.socketPath), transportSecurity: .plaintext)
        let answers = try await withGRPCClient(transport: transport) { grpc in
            try await Grpc_Reflection_V1_ServerReflection.Client(wrapping: grpc).serverReflectionInfo(
                requestProducer: { writer in
                    try await writer.write(.with { $0.listServices = "" })
                    try await writer.write(.with { $0.fileContainingSymbol = "modeld.v1.QueryService.Fetch" })
                    try await writer.write(.with { $0.fileByFilename = "modeld/v1/values.proto" })
                    try await writer.write(.with { $0.fileContainingSymbol = "modeld.v1.Nope" })
                }
            ) { response in
                var answers: [Grpc_Reflection_V1_ServerReflectionResponse] = []
                for try await answer in response.messages { answers.append(answer) }
                return answers
            }
        }
        try #require(answers.count == 4)
        #expect(
            answers[0].listServicesResponse.service.map(\.name).sorted() == [
                "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "modeld.v1.DaemonService",
                "modeld.v1.QueryService", "modeld.v1.SessionService", "modeld.v1.StoreService",
            ])
        let files = try answers[1].fileDescriptorResponse.fileDescriptorProto.map {
            try Google_Protobuf_FileDescriptorProto(serializedBytes: $0)
        }
        #expect(files.first?.name == "modeld/v1/queries.proto")
        // With every file it imports, so that a client can build each type.
        let names = Set(files.map(\.name))
        #expect(files.allSatisfy { $0.dependency.allSatisfy(names.contains) }, "\(names)")
        #expect(files.first?.service.first?.method.contains { $0.name == "Fetch" } == true)
        #expect(
            try answers[2].fileDescriptorResponse.fileDescriptorProto.map {
                try Google_Protobuf_FileDescriptorProto(serializedBytes: $0).name
            } == ["modeld/v1/values.proto"])
        #expect(answers[3].errorResponse.errorCode == Int32(RPCError.Code.notFound.rawValue))
        #expect(answers[3].errorResponse.errorMessage.contains("modeld.v1.Nope"))
    }
}
