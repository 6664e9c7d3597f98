import Foundation
import GRPCCore
import GRPCProtobuf
import ModelWire
import SwiftProtobuf

/// gRPC server reflection (`grpc.reflection.v1.ServerReflection`, also answered under
/// `v1alpha` for older clients such as grpcio-reflection's): generic tools list the daemon's
/// services and read their messages without our protos. It answers from every `.proto` file's
/// descriptor, compiled in (``ProtoDescriptors``).
struct ReflectionService: Grpc_Reflection_V1_ServerReflection.SimpleServiceProtocol {
    func serverReflectionInfo(
        request: RPCAsyncSequence<Grpc_Reflection_V1_ServerReflectionRequest, any Error>,
        response: RPCWriter<Grpc_Reflection_V1_ServerReflectionResponse>, context: ServerContext
    ) async throws {
        // The index is made on the first question, not at start-up.
        for try await question in request { try await response.write(ReflectionIndex.shared.answer(question)) }
    }

    /// The same service under `grpc.reflection.v1alpha.ServerReflection`, whose messages are
    /// v1's on the wire.
    struct V1Alpha: RegistrableRPCService {
        let service = ReflectionService()

        func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
            router.registerHandler(
                forMethod: MethodDescriptor(
                    fullyQualifiedService: "grpc.reflection.v1alpha.ServerReflection", method: "ServerReflectionInfo"),
                deserializer: ProtobufDeserializer<Grpc_Reflection_V1_ServerReflectionRequest>(),
                serializer: ProtobufSerializer<Grpc_Reflection_V1_ServerReflectionResponse>()
            ) { request, context in
                StreamingServerResponse { writer in
                    try await service.serverReflectionInfo(
                        request: request.messages, response: writer, context: context)
                    return [:]
                }
            }
        }
    }
}

/// Every file's descriptor, and which file defines each symbol.
struct ReflectionIndex: Sendable {
    /// Serialized FileDescriptorProtos by file name, and each file's imports.
    private let files: [String: (bytes: Data, dependencies: [String])]
    /// The file defining each fully-qualified service, method, message and enum.
    private let symbols: [String: String]
    let services: [String]

    static let shared: ReflectionIndex = {
        // Written by regenerate-protos from the protos this very binary was built with.
        guard let data = Data(base64Encoded: ProtoDescriptors.fileDescriptorSetBase64),
            let set = try? Google_Protobuf_FileDescriptorSet(serializedBytes: data)
        else { return ReflectionIndex(set: Google_Protobuf_FileDescriptorSet()) }
        return ReflectionIndex(set: set)
    }()

    init(set: Google_Protobuf_FileDescriptorSet) {
        var files: [String: (Data, [String])] = [:], symbols: [String: String] = [:], services: [String] = []
        for file in set.file {
            files[file.name] = ((try? file.serializedData()) ?? Data(), file.dependency)
            let prefix = file.package.isEmpty ? "" : file.package + "."
            for service in file.service {
                services.append(prefix + service.name)
                symbols[prefix + service.name] = file.name
                for method in service.method { symbols[prefix + service.name + "." + method.name] = file.name }
            }
            func add(_ messages: [Google_Protobuf_DescriptorProto], in scope: String) {
                for message in messages {
                    symbols[scope + message.name] = file.name
                    for enumeration in message.enumType {
                        symbols[scope + message.name + "." + enumeration.name] = file.name
                    }
                    add(message.nestedType, in: scope + message.name + ".")
                }
            }
            add(file.messageType, in: prefix)
            for enumeration in file.enumType { symbols[prefix + enumeration.name] = file.name }
        }
        self.files = files
        self.symbols = symbols
        self.services = services.sorted()
    }

    func answer(_ request: Grpc_Reflection_V1_ServerReflectionRequest) -> Grpc_Reflection_V1_ServerReflectionResponse {
        var answer = Grpc_Reflection_V1_ServerReflectionResponse()
        answer.validHost = request.host
        answer.originalRequest = request
        switch request.messageRequest {
        case .listServices:
            answer.listServicesResponse = .with { $0.service = services.map { name in .with { $0.name = name } } }
        case .fileByFilename(let name):
            answer.messageResponse = descriptors(of: name, "no file named '\(name)'")
        case .fileContainingSymbol(let symbol):
            let name = symbols[symbol.hasPrefix(".") ? String(symbol.dropFirst()) : symbol]
            answer.messageResponse = descriptors(
                of: name ?? "", "no service, method, message or enum named '\(symbol)'")
        case .fileContainingExtension(let request):
            answer.messageResponse = .errorResponse(
                .with {
                    $0.errorCode = Int32(RPCError.Code.notFound.rawValue)
                    $0.errorMessage =
                        "modeld's protos declare no extensions (asked: \(request.containingType) #\(request.extensionNumber))"
                })
        case .allExtensionNumbersOfType(let type):
            if symbols[type] != nil {
                answer.allExtensionNumbersResponse = .with { $0.baseTypeName = type }
            } else {
                answer.messageResponse = notFound("no message named '\(type)'")
            }
        case nil:
            answer.messageResponse = .errorResponse(
                .with {
                    $0.errorCode = Int32(RPCError.Code.invalidArgument.rawValue)
                    $0.errorMessage = "the request asks nothing: set one of its message_request fields"
                })
        }
        return answer
    }

    /// The file `name` and every file it imports, directly or not: what a client needs to build its types.
    private func descriptors(of name: String, _ missing: String)
        -> Grpc_Reflection_V1_ServerReflectionResponse.OneOf_MessageResponse
    {
        guard files[name] != nil else { return notFound(missing) }
        var order: [String] = [], seen = Set<String>(), pending = [name]
        while let next = pending.popLast() {
            guard seen.insert(next).inserted, let file = files[next] else { continue }
            order.append(next)
            pending.append(contentsOf: file.dependencies)
        }
        return .fileDescriptorResponse(.with { $0.fileDescriptorProto = order.compactMap { files[$0]?.bytes } })
    }

    private func notFound(_ message: String) -> Grpc_Reflection_V1_ServerReflectionResponse.OneOf_MessageResponse {
        .errorResponse(
            .with {
                $0.errorCode = Int32(RPCError.Code.notFound.rawValue)
                $0.errorMessage = message
            })
    }
}
