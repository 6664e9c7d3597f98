import ModelClient

// Models the macros accept but a container refuses, each for one reason: what can only be
// known once the types are resolved.

/// A property whose type is neither Codable nor RawRepresentable nor a model.
@Model class WithLock {
    var name: String = ""
    var lock: NSLock = NSLock()
}

/// An optional of an optional.
@Model class WithDoubleOptional {
    var rating: Int?? = nil
}

struct Address: Codable, Hashable {
    var street: String
}

/// @Relationship on a Codable value.
@Model class WithValueRelationship {
    @Relationship var address: Address?
}

/// A unique constraint on a computed property.
@Model class WithComputedUnique {
    var first: String = ""
    var full: String { first }
    #Unique<WithComputedUnique>([\.full])
}

/// A subclass of a model that isn't marked @Model.
class UnmarkedSubclass: Maker {}
