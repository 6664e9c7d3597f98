import ModelCore

/// SwiftDataKit's example models: ArticleCollection <->> Article <<-> Category (all nullify),
/// and Student for grouped counts by birth year.
public enum Articles {
    public static let schema = Schema(entities: [
        EntityDescription(
            name: "ArticleCollection",
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(
                    name: "articles", destination: "Article", isToMany: true,
                    inverse: "collection", deleteRule: .nullify)
            ]
        ),
        EntityDescription(
            name: "Article",
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(name: "category", destination: "Category", deleteRule: .nullify),
                RelationshipDescription(name: "collection", destination: "ArticleCollection", deleteRule: .nullify),
            ]
        ),
        EntityDescription(
            name: "Category",
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(
                    name: "articles", destination: "Article", isToMany: true,
                    inverse: "category", deleteRule: .nullify)
            ]
        ),
        EntityDescription(
            name: "Student",
            attributes: [
                AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "birthOfYear", type: .int),
            ],
            indexes: [["birthOfYear"]]
        ),
    ])
}
