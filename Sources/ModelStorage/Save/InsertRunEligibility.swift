import ModelCore

extension InsertRun {
    /// Whether a backend may write `runs` straight from their columns in a store of `schema`
    /// (``StorageBackend/saveInsertRuns(_:author:user:)``): each of a concrete entity of the
    /// schema without unique constraints (those the save algorithm resolves,
    /// ``UniquenessResolver``). False: the caller saves them as inserts. Throws
    /// `unknownProperty` for a column of no attribute, which a backend would otherwise drop:
    /// the engine's runs never have one.
    public static func areWritableStraight(_ runs: [InsertRun], in schema: ResolvedSchema) throws(ModelError) -> Bool {
        for run in runs {
            guard let entity = schema[run.entityName], entity.uniqueConstraints.isEmpty, !entity.isAbstract else {
                return false
            }
            // Each name is looked for among the attributes in order, from after the last one
            // found (a run's columns usually come in one order): five hashed look-ups cost a
            // one-object save 1,800 instructions. A name not found that way is looked up.
            let attributes = entity.attributes
            var next = 0
            for name in run.columns {
                if let index = attributes.firstIndex(wrappingFrom: next, where: { $0.name == name }) {
                    next = index + 1 == attributes.count ? 0 : index + 1
                } else if entity.attribute(name) == nil {
                    throw ModelError.unknownProperty(name, entity: entity.name)
                }
            }
        }
        return true
    }
}
