import ModelCore

extension Schema {
    /// This schema with the entity `old` renamed `new` as a migration renames it (`originalName`
    /// set), and every relationship to it pointed at its new name.
    public func renamingEntity(_ old: String, to new: String) -> Schema {
        var schema = self
        for index in schema.entities.indices {
            if schema.entities[index].name == old {
                schema.entities[index].name = new
                schema.entities[index].originalName = old
            }
            for relationship in schema.entities[index].relationships.indices
            where schema.entities[index].relationships[relationship].destination == old {
                schema.entities[index].relationships[relationship].destination = new
            }
        }
        return schema
    }
}
