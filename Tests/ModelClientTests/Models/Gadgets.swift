import ModelClient

// A model with every kind of attribute and relationship, for the predicate translation tests.

enum GadgetKind: String, Codable, CaseIterable {
    case tool, toy, gizmo
}

@Model class Gadget {
    var name: String
    var notes: String?
    var price: Double
    var count: Int
    var rating: Int?
    var released: Date
    var isActive: Bool
    var kind: GadgetKind
    var code: UUID
    var link: URL?
    var tags: [String] = []
    var maker: Maker?
    @Relationship(deleteRule: .cascade, inverse: \Part.gadget)
    var parts: [Part] = []
    @Transient var scratch: Int = 0

    var priceWithTax: Double { price * 1.2 }

    init(
        name: String, notes: String?, price: Double, count: Int, rating: Int?, released: Date, isActive: Bool,
        kind: GadgetKind, code: UUID, link: URL?
    ) {
        self.name = name
        self.notes = notes
        self.price = price
        self.count = count
        self.rating = rating
        self.released = released
        self.isActive = isActive
        self.kind = kind
        self.code = code
        self.link = link
    }
}

@Model class SpecialGadget: Gadget {
    var level: Int = 1

    init(name: String, price: Double, count: Int, level: Int) {
        self.level = level
        super.init(
            name: name, notes: nil, price: price, count: count, rating: nil, released: day("2026-01-01"),
            isActive: true,
            kind: .gizmo, code: UUID(uuidString: "00000000-0000-0000-0000-0000000000FF")!, link: nil)
    }
}

@Model class Maker {
    var name: String
    var country: String
    @Relationship(inverse: \Gadget.maker)
    var gadgets: [Gadget] = []

    init(name: String, country: String) {
        self.name = name
        self.country = country
    }
}

@Model class Part {
    var label: String
    var weight: Double
    var gadget: Gadget?

    init(label: String, weight: Double) {
        self.label = label
        self.weight = weight
    }
}

var gadgetModels: [any PersistentModel.Type] { [Gadget.self, SpecialGadget.self, Maker.self, Part.self] }
