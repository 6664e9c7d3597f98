import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// What `@Model` and `@ModelActor` write into a class, checked against expansions written out
/// by hand, and line by line for every kind of attribute and relationship.
@Suite struct ModelMacroExpansionTests {
    @Test func aSmallModelExpandsInFull() {
        assertExpansion(
            #"""
            @Model
            final class Note {
                var title: String
                var stars: Int = 3

                init(title: String) {
                    self.title = title
                }
            }
            """#,
            // (swift-syntax's expansion shows an initial value, `= 3`, as consumed by the init accessor.)
            expandedSource: #"""
                final class Note {
                    var title: String {
                        @storageRestrictions(initializes: _title)
                        init(initialValue) {
                            _title = _ModelSlot(initialValue)
                        }
                        get {
                            _$read(\Note.title, \Note._title, "title")
                        }
                        set {
                            _$write(\Note.title, \Note._title, "title", newValue)
                        }
                    }

                    private var _title: _ModelSlot<String>
                    var stars: Int {
                        @storageRestrictions(initializes: _stars)
                        init(initialValue) {
                            _stars = _ModelSlot(initialValue)
                        }
                        get {
                            _$read(\Note.stars, \Note._stars, "stars")
                        }
                        set {
                            _$write(\Note.stars, \Note._stars, "stars", newValue)
                        }
                    }

                    private var _stars: _ModelSlot<Int>

                    init(title: String) {
                        self.title = title
                    }

                    let _$modelState = _ModelState()

                    required init(backingData: _ModelBackingData) {
                        _title = .unloaded
                        _stars = .unloaded
                    }

                    class var schemaMetadata: [_PropertyMetadata] {
                        [
                            _PropertyMetadata(Note.self, "title", \Note.title, \Note._title, \Note?.?.title),
                            _PropertyMetadata(Note.self, "stars", \Note.stars, \Note._stars, \Note?.?.stars, default: 3)
                        ]
                    }

                    static func _$keyPathsOfNote<S: Note>(_: S.Type) -> [(AnyKeyPath, String)] {
                        [(\S.title, "title"), (\S?.?.title, "title"), (\S.stars, "stars"), (\S?.?.stars, "stars")]
                    }

                    class var _$keyPathsForSelf: [(AnyKeyPath, String)] {
                        Self._$keyPathsOfNote(Self.self)
                    }

                    class var _$entityMetadata: _EntityMetadata {
                        _EntityMetadata(Note.self, unique: [], indexes: [], identity: \Note.id)
                    }
                }

                extension Note: PersistentModel, Observation.Observable, Hashable {
                }
                """#
        )
    }

    @Test func everyKindOfPropertyGetsItsSlotAndMetadata() {
        let expansion = Expansion(
            #"""
            @Model
            public final class Everything {
                var text: String = "hi"
                var count: Int = -2
                var ratio: Double = 0.5
                var flag: Bool = true
                var when: Date = .now
                var blob: Data
                var id: UUID
                var link: URL?
                var money: Decimal
                var nick: String?
                var forced: Int!
                var mood: Mood = .happy
                var place: Place
                var tags: [String] = []
                var greeting: String = "hi \(1)"
                @Attribute(.unique, .preserveValueOnDeletion, originalName: "serial") var code: String = ""
                var owner: Person?
                @Relationship(deleteRule: .cascade, inverse: \Item.box, minimumModelCount: 1, maximumModelCount: 5)
                var items: [Item] = []
                var friends: Set<Person> = []
                @Transient var cache: Int = 0
                @ObservationIgnored @Transient var scratch: [Int] = []
                static var shared = 0
                var doubled: Int { count * 2 }
                #Unique<Everything>([\.text, \.count], [\.code])
                #Index<Everything>([\.when])

                init(blob: Data, id: UUID, money: Decimal, place: Place) {
                    self.blob = blob
                    self.id = id
                    self.money = money
                    self.place = place
                }
            }
            """#)
        #expect(expansion.diagnostics.map(\.message) == [])
        let slots = [
            ("text", "String"), ("count", "Int"), ("ratio", "Double"), ("flag", "Bool"), ("when", "Date"),
            ("blob", "Data"),
            ("id", "UUID"), ("link", "URL?"), ("money", "Decimal"), ("nick", "String?"), ("forced", "Int?"),
            ("mood", "Mood"),
            ("place", "Place"), ("tags", "[String]"), ("greeting", "String"), ("code", "String"), ("owner", "Person?"),
            ("items", "[Item]"), ("friends", "Set<Person>"),
        ]
        for (name, type) in slots {
            #expect(expansion.contains(line: "private var _\(name): _ModelSlot<\(type)>"), "slot of \(name)")
            #expect(expansion.contains(line: "_\(name) = .unloaded"), "\(name) starts unloaded in fetched objects")
            #expect(
                expansion.contains(line: "_$read(\\Everything.\(name), \\Everything._\(name), \"\(name)\")"),
                "getter of \(name)")
        }
        for name in ["cache", "scratch", "shared", "doubled"] {
            #expect(!expansion.text.contains("_\(name)"), "\(name) is not persisted")
        }
        // Literal defaults are kept in the schema; anything else (.now, interpolation) is not.
        let metadata = [
            #"_PropertyMetadata(Everything.self, "text", \Everything.text, \Everything._text, \Everything?.?.text, default: "hi"),"#,
            #"_PropertyMetadata(Everything.self, "count", \Everything.count, \Everything._count, \Everything?.?.count, default: -2),"#,
            #"_PropertyMetadata(Everything.self, "ratio", \Everything.ratio, \Everything._ratio, \Everything?.?.ratio, default: 0.5),"#,
            #"_PropertyMetadata(Everything.self, "flag", \Everything.flag, \Everything._flag, \Everything?.?.flag, default: true),"#,
            #"_PropertyMetadata(Everything.self, "when", \Everything.when, \Everything._when, \Everything?.?.when),"#,
            #"_PropertyMetadata(Everything.self, "mood", \Everything.mood, \Everything._mood, \Everything?.?.mood, default: .happy),"#,
            #"_PropertyMetadata(Everything.self, "greeting", \Everything.greeting, \Everything._greeting, \Everything?.?.greeting),"#,
            #"_PropertyMetadata(Everything.self, "code", \Everything.code, \Everything._code, \Everything?.?.code, default: "", attribute: _AttributeMetadata(.unique, .preserveValueOnDeletion, originalName: "serial")),"#,
            #"_PropertyMetadata(Everything.self, "items", \Everything.items, \Everything._items, \Everything?.?.items, relationship: _RelationshipMetadata(deleteRule: .cascade, inverse: \Item.box, minimumModelCount: 1, maximumModelCount: 5)),"#,
            #"_PropertyMetadata(Everything.self, "friends", \Everything.friends, \Everything._friends, \Everything?.?.friends)"#,
        ]
        for line in metadata {
            #expect(expansion.contains(line: line), "\(line)")
        }
        #expect(
            expansion.contains(
                line:
                    #"_EntityMetadata(Everything.self, unique: [[\.text, \.count], [\.code]], indexes: [[\.when]], identity: nil)"#
            ))
        // A public class's generated members are public; a class with an initializer gets no init().
        #expect(expansion.contains(line: "public let _$modelState = _ModelState()"))
        #expect(expansion.contains(line: "public required init(backingData: _ModelBackingData) {"))
        #expect(expansion.contains(line: "public class var schemaMetadata: [_PropertyMetadata] {"))
        #expect(!expansion.contains(line: "public init() {"))
    }

    @Test func aModelWhosePropertiesAllHaveDefaultsGetsAnEmptyInitializer() {
        let defaults = Expansion("@Model\nclass Counter {\n    var value: Int = 0\n    var label: String? = nil\n}")
        #expect(defaults.contains(line: "init() {"))
        let withoutDefault = Expansion("@Model\nclass Counter {\n    var value: Int\n}")
        #expect(!withoutDefault.contains(line: "init() {"))
    }

    @Test func aSubclassOverridesTheMetadataAndCallsSuper() {
        let expansion = Expansion(
            """
            @Model
            class Special: Gadget {
                var level: Int = 1
            }
            """)
        #expect(expansion.diagnostics.isEmpty)
        #expect(expansion.contains(line: "override class var schemaMetadata: [_PropertyMetadata] {"))
        #expect(expansion.contains(line: "override class var _$entityMetadata: _EntityMetadata {"))
        // Its key paths go after its superclasses', all written against the dynamic class.
        #expect(expansion.contains(line: "super._$keyPathsForSelf + Self._$keyPathsOfSpecial(Self.self)"))
        #expect(expansion.contains(line: "super.init(backingData: backingData)"))
        // Its `id` is the identity unless a superclass declares an `id` of its own.
        #expect(
            expansion.contains(
                line:
                    #"_EntityMetadata(Special.self, unique: [], indexes: [], identity: super._$entityMetadata.identity == nil ? nil : \Special.id)"#
            ))
        #expect(!expansion.text.contains("_$modelState"), "the state is the root class's")
        #expect(!expansion.contains(line: "init() {"), "a subclass inherits or declares its initializers")
        // Listing a protocol first does not make a class a subclass.
        let root = Expansion("@Model\nclass Plain: Codable {\n    var level: Int = 1\n}")
        #expect(root.contains(line: "let _$modelState = _ModelState()"))
        #expect(root.contains(line: "class var schemaMetadata: [_PropertyMetadata] {"))
    }

    @Test func theMarkersAndConstraintsAddNothingOfTheirOwn() {
        let expansion = Expansion(
            """
            @Model
            class Tagged {
                @Attribute(.unique) var name: String = ""
                #Unique<Tagged>([\\.name])
            }
            """)
        #expect(expansion.diagnostics.isEmpty)
        #expect(!expansion.text.contains("@Attribute") && !expansion.text.contains("#Unique<"))
        #expect(
            expansion.contains(
                line: #"_EntityMetadata(Tagged.self, unique: [[\.name]], indexes: [], identity: \Tagged.id)"#))
    }

    @Test func aModelActorGetsItsContainerAndContext() {
        assertExpansion(
            """
            @ModelActor
            public actor Handler {
                func work() {}
            }
            """,
            expandedSource: """
                public actor Handler {
                    func work() {}

                    public nonisolated let modelContainer: ModelContainer

                    public let modelContext: ModelContext

                    public init(modelContainer: ModelContainer) {
                        self.modelContainer = modelContainer
                        self.modelContext = ModelContext(modelContainer)
                    }
                }

                extension Handler: ModelActor {
                }
                """
        )
    }
}
