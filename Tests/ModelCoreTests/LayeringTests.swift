import Foundation
import Testing

/// DESIGN.md's layers, checked in the sources: a module imports only modules below it, and no
/// module above ModelStorage imports a concrete backend — only the executables, the standard
/// registry (StandardBackends, which the executables, ModelClient's container and tests choose)
/// and the backends themselves do.
@Suite struct LayeringTests {
    /// Each of the package's modules, and the package modules it may import.
    static let allowed: [String: Set<String>] = [
        "ModelCore": [],
        "ModelStorage": ["ModelCore"],
        "SQLiteStorage": ["ModelCore", "ModelStorage", "CSQLite"],
        "MemoryStorage": ["ModelCore", "ModelStorage"],
        "PostgresStorage": ["ModelCore", "ModelStorage"],
        "StandardBackends": ["ModelStorage", "SQLiteStorage", "MemoryStorage", "PostgresStorage"],
        "ModelEngine": ["ModelCore", "ModelStorage"],
        "ModelWire": ["ModelCore"],
        "FramedTransport": [],
        "ModelServer": ["ModelCore", "ModelStorage", "ModelEngine", "ModelWire", "FramedTransport"],
        "ModelRemote": ["ModelCore", "ModelWire", "FramedTransport"],
        "ModelClient": ["ModelCore", "ModelStorage", "ModelEngine", "ModelWire", "ModelRemote", "StandardBackends"],
        "ModelTesting": ["ModelCore", "ModelStorage", "ModelServer", "ModelRemote", "StandardBackends"],
        "ModelClientTesting": ["ModelClient", "ModelTesting"],
        "ManualPages": [],
        "ModelMacros": [],
        "modeld": ["ModelServer", "ModelCore", "ModelWire", "ManualPages", "StandardBackends", "CScheduler"],
        "modelctl": ["ModelCore", "ModelRemote", "ModelWire", "ManualPages", "CEditLine"],
        "modeld-bench": [
            "ModelCore", "ModelRemote", "ModelTesting", "ModelWire", "ModelFixtures", "SQLiteStorage", "CSQLite",
            "SystemdHarness",
        ],
        "SystemdHarness": [],
    ]

    static var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Sources")
    }

    @Test func modulesImportOnlyTheLayersBelowThem() throws {
        let systemLibraries: Set<String> = ["CSQLite", "CEditLine", "CScheduler"]
        let packageModules = Set(Self.allowed.keys).union(systemLibraries).union(["ModelFixtures"])
        let modules = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).filter {
            !$0.hasPrefix(".")
        }
        #expect(
            Set(modules).subtracting(systemLibraries) == Set(Self.allowed.keys),
            "a module without a place in the layers")
        for module in modules where !systemLibraries.contains(module) {
            let directory = Self.sources.appendingPathComponent(module)
            guard let files = FileManager.default.enumerator(atPath: directory.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                for line in text.split(separator: "\n")
                where line.hasPrefix("import ") || line.hasPrefix("@testable import ") {
                    guard let imported = line.split(separator: " ").last.map(String.init),
                        packageModules.contains(imported)
                    else { continue }
                    #expect(Self.allowed[module]?.contains(imported) == true, "\(module)/\(file) imports \(imported)")
                }
            }
        }
    }
}
