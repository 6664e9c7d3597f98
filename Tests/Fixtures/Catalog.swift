import ModelCore

/// A schema that uses every attribute type and every kind of relationship, for conformance tests.
///
/// - `Item`: one attribute of each type, all optional, plus required `title` and `rank` with a
///   default; unique on `sku`; to-one `shelf`.
/// - `Shelf` <->> `Item` (nullify); `Shelf` belongs to a `Library` (deny: a library with shelves
///   cannot be deleted); `Shelf.items` holds at most 5 items.
/// - `Author` <<->> `Book` (many-to-many, nullify); `Book.authors` needs at least 1 author.
/// - `Person` <-> `Passport` (one-to-one, cascade from person); `Person.friends` to-many without
///   inverse (noAction), `Person.mentor` to-one without inverse.
public enum Catalog {
    public static let schema = Schema(entities: [
        EntityDescription(
            name: "Item",
            attributes: [
                AttributeDescription(name: "title", type: .string),
                AttributeDescription(name: "rank", type: .int, defaultValue: .int(0)),
                AttributeDescription(name: "sku", type: .string, isOptional: true),
                AttributeDescription(name: "label", type: .string, isOptional: true),
                AttributeDescription(name: "count", type: .int, isOptional: true),
                AttributeDescription(name: "price", type: .double, isOptional: true),
                AttributeDescription(name: "inStock", type: .bool, isOptional: true),
                AttributeDescription(name: "added", type: .date, isOptional: true),
                AttributeDescription(name: "blob", type: .data, isOptional: true),
                AttributeDescription(name: "code", type: .uuid, isOptional: true),
                AttributeDescription(name: "link", type: .url, isOptional: true),
                AttributeDescription(name: "amount", type: .decimal, isOptional: true),
                AttributeDescription(name: "meta", type: .json, isOptional: true),
            ],
            relationships: [RelationshipDescription(name: "shelf", destination: "Shelf", inverse: "items")],
            uniqueConstraints: [["sku"]],
            indexes: [["rank"], ["label", "price"]]
        ),
        EntityDescription(
            name: "Shelf",
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(
                    name: "items", destination: "Item", isToMany: true, deleteRule: .nullify, maxCount: 5),
                RelationshipDescription(name: "library", destination: "Library", inverse: "shelves"),
            ]
        ),
        EntityDescription(
            name: "Library",
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(name: "shelves", destination: "Shelf", isToMany: true, deleteRule: .deny)
            ]
        ),
        EntityDescription(
            name: "Author",
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(name: "books", destination: "Book", isToMany: true, inverse: "authors")
            ]
        ),
        EntityDescription(
            name: "Book",
            attributes: [AttributeDescription(name: "title", type: .string)],
            relationships: [
                RelationshipDescription(name: "authors", destination: "Author", isToMany: true, minCount: 1)
            ]
        ),
        EntityDescription(
            name: "Person",
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(
                    name: "passport", destination: "Passport", inverse: "holder", deleteRule: .cascade),
                RelationshipDescription(name: "friends", destination: "Person", isToMany: true, deleteRule: .noAction),
                RelationshipDescription(name: "mentor", destination: "Person"),
            ]
        ),
        EntityDescription(
            name: "Passport",
            attributes: [AttributeDescription(name: "number", type: .string)],
            relationships: [RelationshipDescription(name: "holder", destination: "Person")]
        ),
    ])
}
