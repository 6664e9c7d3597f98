/// How a context resolves an optimistic-concurrency conflict: objects it changed were changed
/// (or deleted) by another save since it read them. Core Data's merge policies.
public enum MergePolicy: String, Hashable, Sendable, Codable, CaseIterable {
    /// Fail the save with `conflict`, naming the objects; nothing is written (the default).
    case error
    /// Property by property, this context's changes win; properties it did not change keep the
    /// store's values (`NSMergeByPropertyObjectTrumpMergePolicy`).
    case objectTrump
    /// Property by property, the store's changes win; this context's other changes are saved
    /// (`NSMergeByPropertyStoreTrumpMergePolicy`). A conflicting delete is dropped.
    case storeTrump
    /// The context's whole view of each conflicting object replaces the store's, including
    /// properties it did not change (`NSOverwriteMergePolicy`).
    case overwrite
    /// The context's changes to conflicting objects are discarded, relationship changes with them
    /// on both sides; its other changes are saved (`NSRollbackMergePolicy`).
    case rollback
}
