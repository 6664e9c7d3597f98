import ModelCore

extension ModelError {
    /// `schemaMismatch` for a schema other than the store's, with the differences listed.
    public static func schemaMismatch(store current: ResolvedSchema, requested: ResolvedSchema) -> ModelError {
        let differences = requested.schema.differences(from: current.schema)
        let listed = differences.isEmpty ? "" : ":\n" + differences.joined(separator: "\n")
        return ModelError(
            .schemaMismatch,
            "the store holds objects of a different schema (version \(current.versionHash.prefix(12)), requested \(requested.versionHash.prefix(12))); migrate the store or open another one. Differences from the store's schema\(listed)",
            context: [
                "storeVersion": current.versionHash, "requestedVersion": requested.versionHash,
                "differences": differences.joined(separator: "\n"),
            ])
    }
}
