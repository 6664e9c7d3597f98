extension Schema {
    /// SHA-256 of the schema's normalized canonical JSON: entities and properties sorted by name,
    /// `originalName`s dropped, so that declaration order and rename hints don't change the hash.
    func computeVersionHash() -> String {
        var normalized = self
        normalized.entities = entities.sorted { $0.name < $1.name }.map { entity in
            var entity = entity
            entity.originalName = nil
            entity.attributes = entity.attributes.sorted { $0.name < $1.name }.map { attribute in
                var attribute = attribute
                attribute.originalName = nil
                return attribute
            }
            entity.relationships = entity.relationships.sorted { $0.name < $1.name }
            return entity
        }
        return SHA256.hex(Array(("modeld-schema-1\n" + normalized.canonicalJSON()).utf8))
    }

    /// The schema's version hash, or nil if the schema is not valid.
    public var versionHash: String? {
        (try? ResolvedSchema(self))?.versionHash
    }

    /// Throws `invalidSchema` naming the first problem found, if any.
    public func validate() throws(ModelError) {
        try SchemaValidator(self).validate()
    }
}
