@testable import ModelMacros
import SwiftSyntax
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// Every compile-time error of the model macros: what triggers it, its message, and where it
/// points. `everyDiagnosticIsCovered` checks that this table names every one.
@Suite struct ModelMacroDiagnosticTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let id: ModelDiagnostic
        let source: String
        let message: String
        let line: Int
        let column: Int
        var testDescription: String { id.rawValue }
    }

    static let cases: [Case] = [
        Case(
            id: .notAClass, source: "@Model\nstruct Point {\n    var x: Int = 0\n}",
            message:
                "@Model applies to a class: the struct 'Point' can't be a model (SwiftData's models are classes, so that contexts can track each object)",
            line: 1, column: 1),
        Case(
            id: .genericClass, source: "@Model\nclass Box<T> {\n    var x: Int = 0\n}",
            message: "@Model can't model the generic class 'Box': an entity needs one fixed set of properties", line: 2,
            column: 10),
        Case(
            id: .letProperty, source: "@Model\nclass Person {\n    let name: String\n}",
            message:
                "'name' is a 'let', which a context can't change or load: declare it with 'var', or mark it @Transient",
            line: 3, column: 5),
        Case(
            id: .missingType, source: "@Model\nclass Counter {\n    var count = 0\n}",
            message: "@Model needs the type of 'count' written out: add a type annotation (var count: Type = …)",
            line: 3, column: 9),
        Case(
            id: .unstorableType, source: "@Model\nclass Button {\n    var action: () -> Void\n}",
            message:
                "'action' has the type () -> Void (a function), which can't be stored: use a value type that is Codable or RawRepresentable, a @Model class, or an array or set of them, or mark 'action' @Transient",
            line: 3, column: 17),
        Case(
            id: .lazyProperty, source: "@Model\nclass Sum {\n    lazy var total: Int = 0\n}",
            message: "'total' is 'lazy', which a context can't persist: make it a plain 'var', or mark it @Transient",
            line: 3, column: 5),
        Case(
            id: .weakProperty, source: "@Model\nclass Person {\n    weak var friend: Person?\n}",
            message:
                "'friend' is 'weak': a model holds its relationships itself; remove 'weak', or mark 'friend' @Transient",
            line: 3, column: 5),
        Case(
            id: .observedProperty, source: "@Model\nclass Game {\n    var score: Int = 0 { didSet { } }\n}",
            message:
                "'score' has a 'didSet' observer, which a persisted property can't have: observe the model with Observation, or mark 'score' @Transient",
            line: 3, column: 26),
        Case(
            id: .multipleBindings, source: "@Model\nclass Pair {\n    var a: Int = 0, b: Int = 0\n}",
            message: "declare each persisted property on its own line ('a' shares its declaration with another)",
            line: 3, column: 5),
        Case(
            id: .propertyWrapper, source: "@Model\nclass Player {\n    @Clamped var level: Int = 0\n}",
            message:
                "'level' uses the property wrapper @Clamped, which a persisted property can't have: mark it @Transient, or remove the wrapper",
            line: 3, column: 5),
        Case(
            id: .transientWithoutDefault, source: "@Model\nclass Page {\n    @Transient var cache: Int\n}",
            message:
                "@Transient property 'cache' needs a default value: objects fetched from a store are made without calling your initializer",
            line: 3, column: 20),
        Case(
            id: .attributeAndRelationship,
            source: "@Model\nclass Pet {\n    @Attribute(.unique) @Relationship var owner: Person?\n}",
            message:
                "'owner' has both @Attribute and @Relationship: use @Relationship for a property whose type is another model, @Attribute otherwise",
            line: 3, column: 25),
        Case(
            id: .transientAndPersisted,
            source: "@Model\nclass Page {\n    @Transient @Attribute(.unique) var cache: Int = 0\n}",
            message: "'cache' is @Transient, so it isn't stored: remove @Attribute, or remove @Transient", line: 3,
            column: 16),
        Case(
            id: .relationshipOnValue, source: "@Model\nclass Post {\n    @Relationship var names: [String] = []\n}",
            message:
                "@Relationship needs a property whose type is another @Model class, or an array or set of them; 'names' is a [String] (use @Attribute)",
            line: 3, column: 5),
        Case(
            id: .reservedName, source: "@Model\nclass Draft {\n    var hasChanges: Bool = false\n}",
            message: "'hasChanges' is a name PersistentModel uses for itself: rename the property", line: 3, column: 9),
        Case(
            id: .constraintForOtherType,
            source: "@Model\nclass Tag {\n    var name: String = \"\"\n    #Unique<Other>([\\.name])\n}",
            message:
                "#Unique<Other> is declared inside another class: write it in the body of Other's own @Model class",
            line: 4, column: 5),
        Case(
            id: .constraintOutsideModel,
            source: "class Thing {\n    var name: String = \"\"\n    #Index<Thing>([\\.name])\n}",
            message: "#Index belongs in the body of a @Model class", line: 3, column: 5),
        Case(
            id: .notAnActor, source: "@ModelActor\nclass Handler {\n}",
            message: "@ModelActor applies to an actor: the class 'Handler' can't own a model context", line: 1,
            column: 1),
    ]

    @Test(arguments: cases)
    func reportsWhatCannotBeModelled(_ expected: Case) {
        let expansion = Expansion(expected.source)
        #expect(expansion.diagnostics.map(\.id) == [expected.id.rawValue])
        let reported = expansion.diagnostics.first
        #expect(reported?.message == expected.message)
        #expect(reported?.line == expected.line)
        #expect(reported?.column == expected.column)
        // A class that can't be modelled gets no members, so the compiler shows this error and not others.
        #expect(!expansion.text.contains("schemaMetadata"))
    }

    @Test func everyDiagnosticIsCovered() {
        #expect(Set(Self.cases.map(\.id)) == Set(ModelDiagnostic.allCases))
    }

    @Test func aLetPropertyIsFixedToAVar() {
        assertExpansion(
            "@Model\nclass Person {\n    let name: String\n}",
            expandedSource:
                "class Person {\n    let name: String\n}\n\nextension Person: PersistentModel, Observation.Observable, Hashable {\n}",
            diagnostics: [
                DiagnosticSpec(
                    message: ModelDiagnostic.letProperty.message("name").message, line: 3, column: 5,
                    fixIts: [FixItSpec(message: "Use 'var'")])
            ],
            fixedSource: "@Model\nclass Person {\n    var name: String\n}"
        )
    }

    @Test func severalProblemsAreReportedTogether() {
        let expansion = Expansion("@Model\nclass Mess {\n    let a: Int\n    lazy var b: Int = 0\n    var c = 1\n}")
        #expect(expansion.diagnostics.map(\.id) == ["letProperty", "lazyProperty", "missingType"])
        #expect(expansion.diagnostics.map(\.line) == [3, 4, 5])
    }
}
