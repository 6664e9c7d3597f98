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
            for name in run.columns where entity.attribute(name) == nil {
                throw ModelError.unknownProperty(name, entity: entity.name)
            }
        }
        return true
    }
}
