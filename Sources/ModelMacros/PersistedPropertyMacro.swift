import SwiftSyntax
import SwiftSyntaxMacros

/// `@_PersistedProperty`, which `@Model` puts on each persisted property: a slot of the
/// property's type holds the value (`_name`), and the accessors go through the object's model
/// state, which observes reads and writes, tracks changed properties, and loads values from the
/// object's context.
public struct PersistedPropertyMacro: AccessorMacro, PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let (name, _) = property(declaration), let owner = enclosingClass(context) else { return [] }
        return [
            """
            @storageRestrictions(initializes: _\(raw: name))
            init(initialValue) {
                _\(raw: name) = _ModelSlot(initialValue)
            }
            """,
            """
            get {
                _$read(\\\(raw: owner).\(raw: name), \\\(raw: owner)._\(raw: name), "\(raw: name)")
            }
            """,
            """
            set {
                _$write(\\\(raw: owner).\(raw: name), \\\(raw: owner)._\(raw: name), "\(raw: name)", newValue)
            }
            """,
        ]
    }

    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let (name, type) = property(declaration) else { return [] }
        return ["private var _\(raw: name): _ModelSlot<\(raw: slotType(type))>"]
    }

    static func property(_ declaration: some DeclSyntaxProtocol) -> (String, TypeSyntax)? {
        guard let variable = declaration.as(VariableDeclSyntax.self), let binding = variable.bindings.first,
            let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text,
            let type = binding.typeAnnotation?.type
        else { return nil }
        return (name, type)
    }

    /// The slot holds an implicitly unwrapped optional as a plain optional.
    static func slotType(_ type: TypeSyntax) -> String {
        if let iuo = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
            return "\(iuo.wrappedType.trimmedDescription)?"
        }
        return type.trimmedDescription
    }

    static func enclosingClass(_ context: some MacroExpansionContext) -> String? {
        for syntax in context.lexicalContext {
            if let classDecl = syntax.as(ClassDeclSyntax.self) { return classDecl.name.text }
        }
        return nil
    }
}
