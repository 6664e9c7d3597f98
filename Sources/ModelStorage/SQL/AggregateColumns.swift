import ModelCore

extension AggregateDescriptor {
    /// The columns of an SQL aggregate's rows, in select order: each group key that ends at an
    /// attribute, then each aggregation, with the type its values decode as.
    package func resultColumns(for entity: ResolvedEntity, in schema: ResolvedSchema) throws
        -> [(name: String, type: AttributeType)]
    {
        var columns: [(name: String, type: AttributeType)] = []
        for path in groupBy {
            guard let attribute = try schema.resolve(path, from: entity).attribute else { continue }
            columns.append((path.description, attribute.type))
        }
        for aggregation in aggregations {
            columns.append((aggregation.name, try aggregation.resultType(for: entity, in: schema)))
        }
        return columns
    }
}
