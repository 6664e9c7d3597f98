import SwiftDiagnostics
import SwiftSyntax

/// Every compile-time error the model macros report, each saying what to write instead.
enum ModelDiagnostic: String, CaseIterable, DiagnosticMessage {
    case notAClass
    case genericClass
    case letProperty
    case missingType
    case unstorableType
    case lazyProperty
    case weakProperty
    case observedProperty
    case multipleBindings
    case propertyWrapper
    case transientWithoutDefault
    case attributeAndRelationship
    case transientAndPersisted
    case relationshipOnValue
    case reservedName
    case constraintForOtherType
    case constraintOutsideModel
    case notAnActor

    var severity: DiagnosticSeverity { .error }

    var diagnosticID: MessageID { MessageID(domain: "ModelMacros", id: rawValue) }

    /// The message; `name` is the property or type concerned, `detail` a type or attribute.
    func message(_ name: String = "", _ detail: String = "") -> Message {
        Message(kind: self, text: text(name, detail))
    }

    var message: String { text("", "") }

    private func text(_ name: String, _ detail: String) -> String {
        switch self {
        case .notAClass:
            "@Model applies to a class: \(detail) can't be a model (SwiftData's models are classes, so that contexts can track each object)"
        case .genericClass:
            "@Model can't model the generic class '\(name)': an entity needs one fixed set of properties"
        case .letProperty:
            "'\(name)' is a 'let', which a context can't change or load: declare it with 'var', or mark it @Transient"
        case .missingType:
            "@Model needs the type of '\(name)' written out: add a type annotation (var \(name): Type = …)"
        case .unstorableType:
            "'\(name)' has the type \(detail), which can't be stored: use a value type that is Codable or RawRepresentable, a @Model class, or an array or set of them, or mark '\(name)' @Transient"
        case .lazyProperty:
            "'\(name)' is 'lazy', which a context can't persist: make it a plain 'var', or mark it @Transient"
        case .weakProperty:
            "'\(name)' is '\(detail)': a model holds its relationships itself; remove '\(detail)', or mark '\(name)' @Transient"
        case .observedProperty:
            "'\(name)' has a '\(detail)' observer, which a persisted property can't have: observe the model with Observation, or mark '\(name)' @Transient"
        case .multipleBindings:
            "declare each persisted property on its own line ('\(name)' shares its declaration with another)"
        case .propertyWrapper:
            "'\(name)' uses the property wrapper @\(detail), which a persisted property can't have: mark it @Transient, or remove the wrapper"
        case .transientWithoutDefault:
            "@Transient property '\(name)' needs a default value: objects fetched from a store are made without calling your initializer"
        case .attributeAndRelationship:
            "'\(name)' has both @Attribute and @Relationship: use @Relationship for a property whose type is another model, @Attribute otherwise"
        case .transientAndPersisted:
            "'\(name)' is @Transient, so it isn't stored: remove @\(detail), or remove @Transient"
        case .relationshipOnValue:
            "@Relationship needs a property whose type is another @Model class, or an array or set of them; '\(name)' is \(detail) (use @Attribute)"
        case .reservedName:
            "'\(name)' is a name PersistentModel uses for itself: rename the property"
        case .constraintForOtherType:
            "#\(detail)<\(name)> is declared inside another class: write it in the body of \(name)'s own @Model class"
        case .constraintOutsideModel:
            "#\(detail) belongs in the body of a @Model class"
        case .notAnActor:
            "@ModelActor applies to an actor: \(detail) can't own a model context"
        }
    }

    struct Message: DiagnosticMessage {
        let kind: ModelDiagnostic
        let text: String
        var message: String { text }
        var diagnosticID: MessageID { kind.diagnosticID }
        var severity: DiagnosticSeverity { .error }
    }
}

/// A fix-it's label.
struct ModelFixIt: FixItMessage {
    let message: String
    var fixItID: MessageID { MessageID(domain: "ModelMacros", id: message) }
}
