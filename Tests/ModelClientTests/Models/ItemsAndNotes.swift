import ModelClient

// The Item / Note model of "Reinventing Core Data Development with SwiftData Principles":
// optionals and defaults, an enum stored as its raw value, Codable options stored as JSON,
// to-many relationships as sets, and safe initialisers.

public enum DataDisplayMode: Int16, Sendable, Equatable, Codable {
    case sum = 1
    case average = 2
}

public struct ItemOption: Codable, Hashable, Sendable {
    public var name: String
    public var weight: Double
}

@Model
public final class Item {
    public var name: String = ""
    public var height: Double?
    public var valueDisplayMode: DataDisplayMode = DataDisplayMode.sum
    public var options: [ItemOption]?
    public var createdAt: Date = Date(timeIntervalSince1970: 0)
    public var note: Note?
    @Relationship(deleteRule: .cascade, inverse: \ItemData.item)
    public var datas: Set<ItemData>?

    public init(
        name: String, height: Double? = nil, valueDisplayMode: DataDisplayMode = .sum, options: [ItemOption]? = nil
    ) {
        self.name = name
        self.height = height
        self.valueDisplayMode = valueDisplayMode
        self.options = options
    }
}

@Model
public final class Note {
    public var name: String = ""
    public var isRoot: Bool = true
    @Relationship(deleteRule: .nullify, inverse: \Item.note)
    public var items: [Item] = []

    public init(name: String) {
        self.name = name
    }
}

@Model
public final class ItemData {
    public var value: Double = 0
    public var timestamp: Date = Date(timeIntervalSince1970: 0)
    public var item: Item?

    public init(value: Double, timestamp: Date) {
        self.value = value
        self.timestamp = timestamp
    }
}

var itemModels: [any PersistentModel.Type] { [Item.self, Note.self, ItemData.self] }
