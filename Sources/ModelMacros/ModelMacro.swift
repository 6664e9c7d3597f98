import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Model`: makes a class a persistent model. Its stored properties become accessors over
/// per-property slots (`@_PersistedProperty`), and the class gets the initializer contexts use to
/// make fetched objects, its schema metadata (properties with their key paths, `@Attribute` and
/// `@Relationship` options, `#Unique` and `#Index`), and conformance to `PersistentModel` and
/// `Observable`.
public struct ModelMacro: MemberMacro, MemberAttributeMacro, ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
            context.diagnose(
                Diagnostic(node: node, message: ModelDiagnostic.notAClass.message("", kind(of: declaration))))
            return []
        }
        let model = ModelClassAnalysis(classDecl)
        for diagnostic in model.diagnostics { context.diagnose(diagnostic) }
        guard model.diagnostics.isEmpty else { return [] }

        let access = model.accessPrefix
        let isSubclass = model.superclass != nil
        let override = isSubclass ? "override " : ""
        var members: [DeclSyntax] = []
        if !isSubclass {
            members.append("\(raw: access)let _$modelState = _ModelState()")
        }
        let slots = model.properties.map { "_\($0.name) = .unloaded" }
        let superCall = isSubclass ? ["super.init(backingData: backingData)"] : []
        members.append(
            """
            \(raw: access)required init(backingData: _ModelBackingData) {
                \(raw: (slots + superCall).joined(separator: "\n"))
            }
            """)
        if !isSubclass, !model.declaresInitializer, model.properties.allSatisfy(\.hasDefault) {
            members.append("\(raw: access)init() {}")
        }
        let properties = model.properties.map { metadata(for: $0, in: model.name) }
        // `\Class.id` is the identity (PersistentModel's `id`) unless the class, or a superclass,
        // declares an `id` of its own.
        let identity =
            model.declaresID
            ? "nil"
            : isSubclass ? "super._$entityMetadata.identity == nil ? nil : \\\(model.name).id" : "\\\(model.name).id"
        members.append(
            """
            \(raw: access)\(raw: override)class var schemaMetadata: [_PropertyMetadata] {
                [\(raw: properties.isEmpty ? "" : "\n" + properties.joined(separator: ",\n") + "\n")]
            }
            """)
        // Key paths of this class's properties written against the dynamic class, for a
        // subclass's key paths (`\Sub.inherited`) to be found: a key path through a subclass
        // is not == to the superclass's.
        let ownKeyPaths = model.properties.flatMap {
            ["(\\S.\($0.name), \"\($0.name)\")", "(\\S?.?.\($0.name), \"\($0.name)\")"]
        }
        members.append(
            """
            \(raw: access)static func _$keyPathsOf\(raw: model.name)<S: \(raw: model.name)>(_: S.Type) -> [(AnyKeyPath, String)] {
                [\(raw: ownKeyPaths.joined(separator: ", "))]
            }
            """)
        members.append(
            """
            \(raw: access)\(raw: override)class var _$keyPathsForSelf: [(AnyKeyPath, String)] {
                \(raw: isSubclass ? "super._$keyPathsForSelf + " : "")Self._$keyPathsOf\(raw: model.name)(Self.self)
            }
            """)
        members.append(
            """
            \(raw: access)\(raw: override)class var _$entityMetadata: _EntityMetadata {
                _EntityMetadata(\(raw: model.name).self, unique: [\(raw: model.uniques.map(\.trimmedDescription).joined(separator: ", "))], indexes: [\(raw: model.indexes.map(\.trimmedDescription).joined(separator: ", "))], identity: \(raw: identity))
            }
            """)
        return members
    }

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard declaration.is(ClassDeclSyntax.self), let variable = member.as(VariableDeclSyntax.self),
            ModelClassAnalysis.isPersistedCandidate(variable)
        else { return [] }
        return ["@_PersistedProperty"]
    }

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard declaration.is(ClassDeclSyntax.self), !protocols.isEmpty else { return [] }
        let list = protocols.map { protocolName($0) }.joined(separator: ", ")
        return [try ExtensionDeclSyntax("extension \(type.trimmed): \(raw: list) {}")]
    }

    /// The metadata entry of one property: its name, key paths, literal default and options.
    static func metadata(for property: ModelClassAnalysis.Property, in className: String) -> String {
        var arguments = [
            "\(className).self", "\"\(property.name)\"", "\\\(className).\(property.name)",
            "\\\(className)._\(property.name)", "\\\(className)?.?.\(property.name)",
        ]
        if let literal = property.literalDefault {
            arguments.append("default: \(literal.trimmedDescription)")
        }
        if let attribute = property.attribute {
            arguments.append("attribute: _AttributeMetadata(\(attribute.arguments?.trimmedDescription ?? ""))")
        }
        if let relationship = property.relationship {
            arguments.append("relationship: _RelationshipMetadata(\(relationship.arguments?.trimmedDescription ?? ""))")
        }
        return "_PropertyMetadata(" + arguments.joined(separator: ", ") + ")"
    }

    static func protocolName(_ type: TypeSyntax) -> String {
        let name = type.trimmedDescription
        return name == "Observable" ? "Observation.Observable" : name
    }

    static func kind(of declaration: some DeclGroupSyntax) -> String {
        if let c = declaration.as(ClassDeclSyntax.self) { return "the class '\(c.name.text)'" }
        if let s = declaration.as(StructDeclSyntax.self) { return "the struct '\(s.name.text)'" }
        if let e = declaration.as(EnumDeclSyntax.self) { return "the enum '\(e.name.text)'" }
        if let a = declaration.as(ActorDeclSyntax.self) { return "the actor '\(a.name.text)'" }
        if let p = declaration.as(ProtocolDeclSyntax.self) { return "the protocol '\(p.name.text)'" }
        if declaration.is(ExtensionDeclSyntax.self) { return "an extension" }
        return "this declaration"
    }
}
