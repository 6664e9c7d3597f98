import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory regenerate-protos`: regenerates the
/// committed Swift code in `Sources/ModelWire/Generated` from `Protos/`, with the system's
/// `protoc` (Debian: `protobuf-compiler`; or `PROTOC_PATH`) and the protoc plugins of
/// swift-protobuf and grpc-swift-protobuf, built from the package's dependencies. Builds never
/// run it: the generated code is committed, so no build compiles protoc.
@main
struct RegenerateProtos: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let root = context.package.directoryURL
        let protos = root.appending(path: "Protos")
        let output = root.appending(path: "Sources/ModelWire/Generated")
        let protoc = try findProtoc()
        let swiftPlugin = try context.tool(named: "protoc-gen-swift").url
        let grpcPlugin = try context.tool(named: "protoc-gen-grpc-swift-2").url

        let files = try protoFiles(in: protos)
        guard !files.isEmpty else { throw PluginError("no .proto files under \(protos.path)") }
        let manager = FileManager.default
        try manager.createDirectory(at: output, withIntermediateDirectories: true)
        for name in try manager.contentsOfDirectory(atPath: output.path) where name.hasSuffix(".swift") {
            try manager.removeItem(at: output.appending(path: name))
        }

        let common = ["--proto_path=\(protos.path)"] + files
        try run(
            protoc,
            [
                "--plugin=protoc-gen-swift=\(swiftPlugin.path)",
                "--swift_out=\(output.path)",
                "--swift_opt=Visibility=Public",
                "--swift_opt=FileNaming=PathToUnderscores",
            ] + common)
        try run(
            protoc,
            [
                "--plugin=protoc-gen-grpc-swift=\(grpcPlugin.path)",
                "--grpc-swift_out=\(output.path)",
                "--grpc-swift_opt=Visibility=Public",
                "--grpc-swift_opt=Server=true",
                "--grpc-swift_opt=Client=true",
                "--grpc-swift_opt=FileNaming=PathToUnderscores",
            ] + common)
        // The gRPC generator writes a stub for every file; drop those of files without services.
        for name in try manager.contentsOfDirectory(atPath: output.path) where name.hasSuffix(".grpc.swift") {
            let file = output.appending(path: name)
            if try String(contentsOf: file, encoding: .utf8).contains("This file contained no services.") {
                try manager.removeItem(at: file)
            }
        }
        // Every file's descriptor, for gRPC server reflection: a FileDescriptorSet, base64 in Swift.
        let set = context.pluginWorkDirectoryURL.appending(path: "modeld.protoset")
        try run(protoc, ["--include_imports", "--descriptor_set_out=\(set.path)"] + common)
        let encoded = try Data(contentsOf: set).base64EncodedString()
        try """
        // DO NOT EDIT. Written by `swift package regenerate-protos` from Protos/: every file's
        // FileDescriptorProto, as a serialized FileDescriptorSet, for gRPC server reflection.

        public enum ProtoDescriptors {
            /// A FileDescriptorSet of every file under Protos/, base64-encoded.
            public static let fileDescriptorSetBase64 = "\(encoded)"
        }

        """.write(to: output.appending(path: "ProtoDescriptors.swift"), atomically: true, encoding: .utf8)
        let written = try manager.contentsOfDirectory(atPath: output.path).filter { $0.hasSuffix(".swift") }.sorted()
        print(
            "regenerate-protos: wrote \(written.count) files to Sources/ModelWire/Generated: \(written.joined(separator: ", "))"
        )
    }

    /// The `.proto` files under `directory`, relative to it, sorted.
    private func protoFiles(in directory: URL) throws -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        return enumerator.compactMap { $0 as? String }.filter { $0.hasSuffix(".proto") }.sorted()
    }

    /// `PROTOC_PATH`, or `protoc` on the `PATH`.
    private func findProtoc() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["PROTOC_PATH"] { return URL(fileURLWithPath: path) }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appending(path: "protoc")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw PluginError("protoc not found: install it (apt-get install protobuf-compiler) or set PROTOC_PATH")
    }

    private func run(_ executable: URL, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PluginError("\(executable.lastPathComponent) failed with status \(process.terminationStatus)")
        }
    }
}

struct PluginError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
