import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Attribute`, `@Relationship` and `@Transient` add nothing by themselves: `@Model` reads them.
/// Their arguments are still type-checked against the macros' signatures, so a misspelled option
/// is a compile error.
public struct MarkerMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// `#Unique<T>(…)` and `#Index<T>(…)` add nothing by themselves either: `@Model` reads them from
/// the class body. Their key paths are type-checked against `T`. Used anywhere but the body of a
/// `@Model` class, they are an error.
public struct ConstraintMacro: DeclarationMacro {
    public static func expansion(
        of node: some FreestandingMacroExpansionSyntax,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        let macro = node.macroName.text
        let owner = context.lexicalContext.first?.as(ClassDeclSyntax.self)
        let isModel = owner?.attributes.contains { ModelClassAnalysis.attributeName($0) == "Model" } ?? false
        if !isModel {
            context.diagnose(Diagnostic(node: node, message: ModelDiagnostic.constraintOutsideModel.message("", macro)))
        }
        return []
    }
}
