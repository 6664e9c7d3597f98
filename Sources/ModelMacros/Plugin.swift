import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct ModelMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        ModelMacro.self,
        PersistedPropertyMacro.self,
        MarkerMacro.self,
        ConstraintMacro.self,
        ModelActorMacro.self,
    ]
}
