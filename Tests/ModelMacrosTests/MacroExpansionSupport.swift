import Foundation
@testable import ModelMacros
import SwiftDiagnostics
import SwiftParser
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// The model macros as the compiler sees them, by the names ModelClient declares.
let modelMacroSpecs: [String: MacroSpec] = [
    "Model": MacroSpec(type: ModelMacro.self, conformances: ["PersistentModel", "Observable", "Hashable"]),
    "_PersistedProperty": MacroSpec(type: PersistedPropertyMacro.self),
    "Attribute": MacroSpec(type: MarkerMacro.self),
    "Relationship": MacroSpec(type: MarkerMacro.self),
    "Transient": MacroSpec(type: MarkerMacro.self),
    "Unique": MacroSpec(type: ConstraintMacro.self),
    "Index": MacroSpec(type: ConstraintMacro.self),
    "ModelActor": MacroSpec(type: ModelActorMacro.self, conformances: ["ModelActor"]),
]

/// swift-syntax's expansion assertion, reporting to Swift Testing.
func assertExpansion(
    _ source: String, expandedSource: String, diagnostics: [DiagnosticSpec] = [], fixedSource: String? = nil,
    sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    assertMacroExpansion(
        source, expandedSource: expandedSource, diagnostics: diagnostics, macroSpecs: modelMacroSpecs,
        fixedSource: fixedSource,
        failureHandler: { failure in
            Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation)
        })
}

/// A source expanded: its text, and the diagnostics with where they point.
struct Expansion {
    struct Reported {
        /// The ModelDiagnostic case, by name ("other" for anything else).
        let id: String
        let message: String
        let line: Int
        let column: Int
        let fixIts: [FixIt]
    }

    let text: String
    let diagnostics: [Reported]

    init(_ source: String) {
        let file = Parser.parse(source: source)
        let context = BasicMacroExpansionContext(sourceFiles: [
            file: .init(moduleName: "TestModule", fullFilePath: "test.swift")
        ])
        let expanded = file.expand(
            macroSpecs: modelMacroSpecs,
            contextGenerator: { syntax in
                BasicMacroExpansionContext(sharingWith: context, lexicalContext: syntax.allMacroLexicalContexts())
            }, indentationWidth: .spaces(4))
        text = expanded.description
        diagnostics = context.diagnostics.map { diagnostic in
            // Freestanding macros see a detached copy of their node; the context maps it back.
            let location = context.location(
                for: diagnostic.position, anchoredAt: diagnostic.node, fileName: "test.swift")
            return Reported(
                id: (diagnostic.diagMessage as? ModelDiagnostic.Message)?.kind.rawValue ?? "other",
                message: diagnostic.message, line: location.line, column: location.column,
                fixIts: diagnostic.fixIts)
        }
    }

    /// The lines of the expanded text, without their indentation.
    var lines: [String] { text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) } }

    func contains(line: String) -> Bool { lines.contains(line) }
}
