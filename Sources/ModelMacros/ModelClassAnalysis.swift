import SwiftDiagnostics
import SwiftSyntax

/// What @Model reads from a class declaration: its persisted and transient properties, its
/// `#Unique` and `#Index` declarations, its superclass, and what can't be modelled.
struct ModelClassAnalysis {
    struct Property {
        let name: String
        let type: TypeSyntax
        /// The default value, when it is a literal (kept in the schema).
        let literalDefault: ExprSyntax?
        let hasDefault: Bool
        /// `@Attribute(…)` arguments, if present.
        let attribute: AttributeSyntax?
        /// `@Relationship(…)` arguments, if present.
        let relationship: AttributeSyntax?
    }

    let name: String
    /// `public ` (with the space) when the class is public or open, `package ` for package, else "".
    let accessPrefix: String
    /// The superclass, when the first inherited type is not a well-known protocol.
    let superclass: String?
    var properties: [Property] = []
    var transients: [String] = []
    /// One array expression per constraint.
    var uniques: [ExprSyntax] = []
    var indexes: [ExprSyntax] = []
    var declaresInitializer = false
    /// Whether the class declares an `id` of its own (then it, not the identity, is `id`).
    var declaresID = false
    var diagnostics: [Diagnostic] = []

    /// Protocols a model class may list first without it being taken for a superclass.
    static let wellKnownProtocols: Set<String> = [
        "AnyObject", "Codable", "Encodable", "Decodable", "Hashable", "Equatable", "Identifiable", "Sendable",
        "CustomStringConvertible", "CustomDebugStringConvertible", "Comparable", "PersistentModel", "Observable",
        "Error", "CaseIterable", "RawRepresentable",
    ]

    /// Names PersistentModel itself uses.
    static let reservedNames: Set<String> = [
        "persistentModelID", "modelContext", "hasChanges", "isDeleted", "changedPropertyNames", "schemaMetadata",
        "entityName",
    ]

    init(_ declaration: ClassDeclSyntax) {
        name = declaration.name.text
        accessPrefix = Self.accessPrefix(declaration.modifiers)
        if let first = declaration.inheritanceClause?.inheritedTypes.first?.type.trimmedDescription,
            !Self.wellKnownProtocols.contains(first), !first.hasPrefix("Observation."), !first.hasPrefix("Swift.")
        {
            superclass = first
        } else {
            superclass = nil
        }
        if let generics = declaration.genericParameterClause {
            diagnostics.append(Diagnostic(node: generics, message: ModelDiagnostic.genericClass.message(name)))
        }
        for member in declaration.memberBlock.members {
            if let variable = member.decl.as(VariableDeclSyntax.self) {
                if variable.bindings.contains(where: {
                    $0.pattern.as(IdentifierPatternSyntax.self)?.identifier.text == "id"
                }) {
                    declaresID = true
                }
                read(variable)
            } else if member.decl.is(InitializerDeclSyntax.self) {
                declaresInitializer = true
            } else if let expansion = member.decl.as(MacroExpansionDeclSyntax.self) {
                readConstraint(expansion)
            }
        }
    }

    /// Whether `variable` is one @Model persists (and so gets `@_PersistedProperty`): an instance
    /// stored `var` without @Transient, that the macros did not make themselves.
    static func isPersistedCandidate(_ variable: VariableDeclSyntax) -> Bool {
        guard variable.bindingSpecifier.tokenKind == .keyword(.var),
            !variable.modifiers.contains(where: {
                ["static", "class", "lazy", "weak", "unowned"].contains($0.name.text)
            }),
            !variable.attributes.contains(where: {
                attributeName($0) == "Transient" || attributeName($0) == "_PersistedProperty"
            }),
            variable.bindings.count == 1, let binding = variable.bindings.first,
            let identifier = binding.pattern.as(IdentifierPatternSyntax.self),
            binding.typeAnnotation != nil, isStored(binding)
        else { return false }
        let name = identifier.identifier.text
        guard !name.hasPrefix("_$"), !reservedNames.contains(name),
            !variable.attributes.contains(where: { isPropertyWrapper($0) })
        else { return false }
        if let type = binding.typeAnnotation?.type, unstorableReason(type) != nil { return false }
        return true
    }

    private mutating func read(_ variable: VariableDeclSyntax) {
        let modifiers = variable.modifiers.map(\.name.text)
        if modifiers.contains("static") || modifiers.contains("class") { return }
        let isTransient = variable.attributes.contains { Self.attributeName($0) == "Transient" }
        let attribute = variable.attributes.lazy.compactMap { $0.as(AttributeSyntax.self) }.first {
            Self.attributeName(.attribute($0)) == "Attribute"
        }
        let relationship = variable.attributes.lazy.compactMap { $0.as(AttributeSyntax.self) }.first {
            Self.attributeName(.attribute($0)) == "Relationship"
        }
        let names = variable.bindings.compactMap { $0.pattern.as(IdentifierPatternSyntax.self)?.identifier.text }
        guard let first = variable.bindings.first, let name = names.first else { return }
        if name.hasPrefix("_$") { return }
        guard Self.isStored(first) else {
            if !isTransient, let observer = Self.observer(first) {
                diagnose(observer, .observedProperty, name, observer.accessorSpecifier.text)
            }
            return
        }
        if isTransient {
            if let persisted = attribute ?? relationship {
                diagnose(persisted, .transientAndPersisted, name, Self.attributeName(.attribute(persisted)))
            }
            for binding in variable.bindings where binding.initializer == nil {
                let bindingName = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text ?? name
                diagnose(binding, .transientWithoutDefault, bindingName)
            }
            transients.append(contentsOf: names)
            return
        }
        if Self.reservedNames.contains(name) {
            diagnose(first.pattern, .reservedName, name)
            return
        }
        if variable.bindingSpecifier.tokenKind == .keyword(.let) {
            let fix = FixIt(
                message: ModelFixIt(message: "Use 'var'"),
                changes: [
                    .replace(
                        oldNode: Syntax(variable.bindingSpecifier),
                        newNode: Syntax(variable.bindingSpecifier.with(\.tokenKind, .keyword(.var))))
                ])
            diagnostics.append(
                Diagnostic(
                    node: variable.bindingSpecifier, message: ModelDiagnostic.letProperty.message(name), fixIts: [fix]))
            return
        }
        if variable.bindings.count > 1 {
            diagnose(variable, .multipleBindings, name)
            return
        }
        if let lazy = variable.modifiers.first(where: { $0.name.text == "lazy" }) {
            diagnose(lazy, .lazyProperty, name)
            return
        }
        if let reference = variable.modifiers.first(where: { ["weak", "unowned"].contains($0.name.text) }) {
            diagnose(reference, .weakProperty, name, reference.name.text)
            return
        }
        if let wrapper = variable.attributes.first(where: { Self.isPropertyWrapper($0) }) {
            diagnose(wrapper, .propertyWrapper, name, Self.attributeName(wrapper))
            return
        }
        if attribute != nil, let relationship {
            diagnose(relationship, .attributeAndRelationship, name)
            return
        }
        guard let type = first.typeAnnotation?.type else {
            diagnose(first.pattern, .missingType, name)
            return
        }
        if let reason = Self.unstorableReason(type) {
            diagnose(type, .unstorableType, name, reason)
            return
        }
        if let relationship, let valueKind = Self.obviousValueType(type) {
            diagnose(relationship, .relationshipOnValue, name, valueKind)
            return
        }
        let initial = first.initializer?.value
        properties.append(
            Property(
                name: name, type: type, literalDefault: initial.flatMap { Self.literal($0, type: type) },
                hasDefault: initial != nil, attribute: attribute, relationship: relationship
            ))
    }

    private mutating func readConstraint(_ expansion: MacroExpansionDeclSyntax) {
        let macro = expansion.macroName.text
        guard macro == "Unique" || macro == "Index" else { return }
        if let generic = expansion.genericArgumentClause?.arguments.first?.argument.trimmedDescription, generic != name
        {
            diagnose(expansion, .constraintForOtherType, generic, macro)
            return
        }
        let arrays = expansion.arguments.map(\.expression)
        if macro == "Unique" { uniques.append(contentsOf: arrays) } else { indexes.append(contentsOf: arrays) }
    }

    private mutating func diagnose(
        _ node: some SyntaxProtocol, _ diagnostic: ModelDiagnostic, _ name: String, _ detail: String = ""
    ) {
        diagnostics.append(Diagnostic(node: Syntax(node), message: diagnostic.message(name, detail)))
    }

    // MARK: Syntax helpers

    /// The access of generated members: `public ` for a public or open type, `package `, or "".
    static func accessPrefix(_ modifiers: DeclModifierListSyntax) -> String {
        let names = Set(modifiers.map(\.name.text))
        return names.contains("public") || names.contains("open")
            ? "public " : (names.contains("package") ? "package " : "")
    }

    static func attributeName(_ element: AttributeListSyntax.Element) -> String {
        guard case .attribute(let attribute) = element else { return "" }
        let name = attribute.attributeName.trimmedDescription
        return name.split(separator: ".").last.map(String.init) ?? name
    }

    /// A stored property: no accessor block.
    static func isStored(_ binding: PatternBindingSyntax) -> Bool {
        // Otherwise a getter, accessors, or observers (which ``observer(_:)`` finds, to report them).
        binding.accessorBlock == nil
    }

    static func observer(_ binding: PatternBindingSyntax) -> AccessorDeclSyntax? {
        guard case .accessors(let list)? = binding.accessorBlock?.accessors else { return nil }
        return list.first { [.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind) }
    }

    /// Attributes that are neither the model macros nor built-in ones are taken as property wrappers.
    static func isPropertyWrapper(_ element: AttributeListSyntax.Element) -> Bool {
        let known: Set<String> = [
            "Attribute", "Relationship", "Transient", "_PersistedProperty", "ObservationIgnored",
            "available", "objc", "nonobjc", "MainActor", "preconcurrency", "usableFromInline",
            "inlinable", "discardableResult", "nonisolated",
        ]
        let name = attributeName(element)
        return !name.isEmpty && !known.contains(name)
    }

    /// Why a type can't be stored, or nil: functions, tuples, `Any`, existentials, metatypes.
    static func unstorableReason(_ type: TypeSyntax) -> String? {
        var current = type
        while true {
            if let optional = current.as(OptionalTypeSyntax.self) { current = optional.wrappedType; continue }
            if let iuo = current.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) { current = iuo.wrappedType; continue }
            if let tuple = current.as(TupleTypeSyntax.self), tuple.elements.count == 1, let only = tuple.elements.first
            {
                current = only.type
                continue
            }
            if let attributed = current.as(AttributedTypeSyntax.self) { current = attributed.baseType; continue }
            break
        }
        if current.is(FunctionTypeSyntax.self) { return "\(type.trimmedDescription) (a function)" }
        if current.is(TupleTypeSyntax.self) { return "\(type.trimmedDescription) (a tuple)" }
        if current.is(MetatypeTypeSyntax.self) { return "\(type.trimmedDescription) (a metatype)" }
        if current.is(SomeOrAnyTypeSyntax.self) { return "\(type.trimmedDescription) (an existential)" }
        if let identifier = current.as(IdentifierTypeSyntax.self),
            ["Any", "AnyObject", "AnyHashable"].contains(identifier.name.text)
        {
            return "\(type.trimmedDescription)"
        }
        return nil
    }

    /// A description of a type that is plainly a value, not a model ("String", "an array of Int").
    static func obviousValueType(_ type: TypeSyntax) -> String? {
        let values: Set<String> = [
            "String", "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64",
            "Double", "Float", "Bool", "Date", "Data", "UUID", "URL", "Decimal",
        ]
        var current = type
        if let optional = current.as(OptionalTypeSyntax.self) { current = optional.wrappedType }
        if let array = current.as(ArrayTypeSyntax.self) { current = array.element }
        if let identifier = current.as(IdentifierTypeSyntax.self), values.contains(identifier.name.text) {
            return "a \(type.trimmedDescription)"
        }
        return nil
    }

    /// `expression` when it is a literal the schema can keep as a default: a string without
    /// interpolation, a number, a Boolean, or an enum case (`.family`) of a non-Foundation type.
    static func literal(_ expression: ExprSyntax, type: TypeSyntax) -> ExprSyntax? {
        if let string = expression.as(StringLiteralExprSyntax.self) {
            return string.segments.allSatisfy({ $0.is(StringSegmentSyntax.self) }) ? expression : nil
        }
        if expression.is(IntegerLiteralExprSyntax.self) || expression.is(FloatLiteralExprSyntax.self)
            || expression.is(BooleanLiteralExprSyntax.self)
        {
            return expression
        }
        if let prefix = expression.as(PrefixOperatorExprSyntax.self), prefix.operator.text == "-",
            prefix.expression.is(IntegerLiteralExprSyntax.self) || prefix.expression.is(FloatLiteralExprSyntax.self)
        {
            return expression
        }
        if let member = expression.as(MemberAccessExprSyntax.self), member.base == nil {
            var base = type
            if let optional = base.as(OptionalTypeSyntax.self) { base = optional.wrappedType }
            let foundation: Set<String> = [
                "Date", "URL", "UUID", "Data", "Decimal", "String", "Double", "Int", "Float", "Bool",
            ]
            return foundation.contains(base.trimmedDescription) ? nil : expression
        }
        return nil
    }
}
