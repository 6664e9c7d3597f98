import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@ModelActor`: an actor that owns a model context. It gets `modelContainer` (Sendable, usable
/// from anywhere), `modelContext` (isolated to the actor, so its objects never leave it) and
/// `init(modelContainer:)`; pass `PersistentIdentifier`s in and out.
public struct ModelActorMacro: MemberMacro, ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let actor = declaration.as(ActorDeclSyntax.self) else {
            context.diagnose(
                Diagnostic(
                    node: node, message: ModelDiagnostic.notAnActor.message("", ModelMacro.kind(of: declaration))))
            return []
        }
        let access = ModelClassAnalysis.accessPrefix(actor.modifiers)
        return [
            "\(raw: access)nonisolated let modelContainer: ModelContainer",
            "\(raw: access)let modelContext: ModelContext",
            """
            \(raw: access)init(modelContainer: ModelContainer) {
                self.modelContainer = modelContainer
                self.modelContext = ModelContext(modelContainer)
            }
            """,
        ]
    }

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard declaration.is(ActorDeclSyntax.self), !protocols.isEmpty else { return [] }
        let list = protocols.map(\.trimmedDescription).joined(separator: ", ")
        return [try ExtensionDeclSyntax("extension \(type.trimmed): \(raw: list) {}")]
    }
}
