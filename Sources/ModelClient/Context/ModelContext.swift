import ModelCore

/// A unit of work on a container's store, as SwiftData's `ModelContext`: insert, change and
/// delete model objects, then `save()` them all at once, or `rollback()`; fetch with
/// ``FetchDescriptor``s. Not Sendable: a context and its objects belong to one task or actor
/// (see `@ModelActor`); pass ``PersistentIdentifier``s between them.
///
/// Operations that reach the store are `async` (the store may be a daemon across a socket).
/// Autosave is off: changes are saved when you call ``save()``.
public final class ModelContext {
    let core: ContextCore

    public init(_ container: ModelContainer) {
        core = ContextCore(container: container, author: nil)
        core.owner = self
    }

    deinit {
        core.contextEnded()
    }

    public var container: ModelContainer { core.container }

    /// The author written into the history transactions of this context's saves.
    public var author: String? {
        get { core.author }
        set { core.author = newValue }
    }

    /// How a save resolves conflicts with changes saved since this context read the objects:
    /// `.error` (the default) refuses the save, naming the objects; `.objectTrump` keeps this
    /// context's changes over the store's, property by property; `.storeTrump` the store's.
    public var mergePolicy: MergePolicy {
        get { core.mergePolicy }
        set { core.mergePolicy = newValue }
    }

    /// What a save does with an inserted object whose `#Unique` values repeat a stored object's:
    /// `.upsert` (the default, as SwiftData) updates the stored object with the inserted one's
    /// values, and the inserted object becomes it (its `persistentModelID` is the stored
    /// object's); `.error` refuses the save with `uniqueConstraint`, naming the constraint.
    public var uniquenessPolicy: UniquenessPolicy {
        get { core.uniquenessPolicy }
        set { core.uniquenessPolicy = newValue }
    }

    /// Whether there are unsaved changes.
    public var hasChanges: Bool { core.flushedChanges || core.pending.contains { $0.hasChanges } }

    /// Objects inserted and not yet saved.
    public var insertedModelsArray: [any PersistentModel] {
        models { $0.lifecycle == .inserted && !$0.isMarkedDeleted }
    }

    /// Saved objects with unsaved changes.
    public var changedModelsArray: [any PersistentModel] {
        models { $0.lifecycle == .persisted && !$0.isMarkedDeleted && (!$0.changed.isEmpty || !$0.derived.isEmpty) }
    }

    /// Objects marked for deletion and not yet saved.
    public var deletedModelsArray: [any PersistentModel] {
        models { $0.isMarkedDeleted }
    }

    private func models(_ include: (ObjectRecord) -> Bool) -> [any PersistentModel] {
        core.pending.filter { !$0.isDetached && include($0) }.compactMap {
            core.object(for: $0) as? any PersistentModel
        }
    }

    /// Inserts `model`, and the new objects its relationships hold. It gets a temporary
    /// identifier, made permanent by the next save.
    public func insert<T: PersistentModel>(_ model: T) {
        core.insert(model)
    }

    /// Marks `model` for deletion. At the next save its delete rules run (cascade, nullify,
    /// deny) and it leaves the context and every relationship that held it. An object another
    /// context fetched or saved is deleted by its identifier, as ``delete(model:where:)`` would
    /// (the other context's object stays as it is until that context reads it again); one that
    /// context has not saved yet stops the program, as it has no identifier here.
    public func delete<T: PersistentModel>(_ model: T) {
        core.delete(model)
    }

    /// Marks every object of `model` (and its subclasses) that matches `predicate` for deletion.
    public func delete<T: PersistentModel>(
        model: T.Type, where predicate: Foundation.Predicate<T>? = nil,
        includeSubclasses: Bool = true
    ) async throws {
        try await core.perform {
            var descriptor = FetchDescriptor<T>(predicate: predicate)
            descriptor.includeSubentities = includeSubclasses
            var request = try descriptor.storeDescriptor(in: core.types)
            request.resultType = .identifiers
            try await core.flush()
            let ids = try await core.unitOfWork().fetch(request).identifiers
            for id in ids { core.delete(id: id) }
        }
    }

    /// Sets `values` on every object of `model` (and its subclasses) that matches `predicate`,
    /// as Core Data's batch update: in the store at once, in a save of its own, without loading
    /// the objects (history records each as updated). Objects this context holds read the new
    /// values, except properties they have unsaved changes to. Returns how many objects matched.
    @discardableResult
    public func update<T: PersistentModel>(
        model: T.Type, where predicate: Foundation.Predicate<T>? = nil, set values: [PartialKeyPath<T>: any Sendable]
    ) async throws -> Int {
        try await core.perform {
            let info = try ModelTypeInfo.of(T.self)
            var attributes: [String: Value] = [:]
            for (keyPath, value) in values {
                guard let property = info.property(for: keyPath), let codec = property.codec else {
                    throw ModelError(
                        .invalidArgument,
                        "a batch update of \(info.entityName) sets stored attributes; \(keyPath) is a relationship or not stored"
                    )
                }
                // The values are `any Sendable`: one of another type than the property's is
                // refused here (the codec would cast it, and stop the program).
                if let given = unwrap(value) {
                    guard type(of: given) == codec.valueType else {
                        throw ModelError(
                            .typeMismatch,
                            "a batch update of \(info.entityName) sets \(property.name), a \(codec.valueType)\(codec.isOptional ? "?" : ""), to a value of type \(type(of: given))"
                        )
                    }
                } else if !codec.isOptional {
                    throw ModelError(
                        .validationFailed,
                        "a batch update of \(info.entityName) sets \(property.name) to nil, but it is not optional")
                }
                do {
                    attributes[property.name] = try codec.encode(value)
                } catch let error as ModelError {
                    throw ModelError(
                        error.code, "\(info.entityName).\(property.name): \(error.message)", context: error.context)
                }
            }
            let request = try FetchDescriptor<T>(predicate: predicate).storeDescriptor(in: core.types)
            let matched = try await core.container.store.batchUpdate(
                request.entityName, where: request.predicate, set: attributes, author: core.author)
            let held = core.records.values.filter {
                $0.isLoaded && $0.lifecycle == .persisted && !$0.isDetached && $0.info.isKind(of: info)
            }
            try await core.load(held.map(\.id))
            // The batch's new versions are this context's own doing: its unsaved changes (sent
            // to its unit of work by the load) go on from them, rather than conflicting with the
            // batch at the next save. They are read from saved data, which the unsaved changes
            // leave as it is.
            let changed = held.filter(\.hasChanges).map(\.id)
            if !changed.isEmpty {
                let request = ModelCore.FetchDescriptor(
                    entityName: info.entityName,
                    predicate: .comparison(
                        Comparison(.keyPath(PropertyPath([])), .in, .list(changed.map { .object($0) }))))
                var expectations: [ObjectEdit] = []
                for snapshot in try await core.container.store.fetchSaved(request).objects {
                    core.records[snapshot.id]?.version = snapshot.version
                    expectations.append(.expectVersion(snapshot.version, of: snapshot.id))
                }
                try await core.unitOfWork().stage(expectations)
            }
            return matched
        }
    }

    /// Saves every change at once, atomically and durably, in one round trip to the store
    /// (changes already sent for a fetch are saved with it). Only changed properties are sent.
    /// If the save fails, nothing is written and the changes stay, to fix and save again.
    public func save() async throws {
        try await core.perform {
            let outgoing = try core.outgoingChanges()
            guard !outgoing.edits.isEmpty || core.flushedChanges else {
                core.finishSave(SaveReport(remapped: [:], token: nil, transaction: nil, versions: [:]))
                return
            }
            let report = try await core.unitOfWork().save(applying: outgoing.edits)
            core.didSend(outgoing)
            core.finishSave(report)
            // Objects inserts were merged into hold the merged values: read them back. The save
            // is done whatever happens here; unread, they keep the values the context sent.
            if !report.merged.isEmpty { try? await core.load(report.merged) }
        }
    }

    /// Runs `block`, then saves, as SwiftData's `transaction(block:)`: what the block changes is
    /// saved at once with any change made before it, or, if the block throws, every unsaved
    /// change is rolled back and the error rethrown. A save that fails throws and keeps the
    /// changes, as ``save()`` does.
    public func transaction(block: () async throws -> Void) async throws {
        do {
            try await block()
        } catch {
            await rollback()
            throw error
        }
        try await save()
    }

    /// Discards every unsaved change: inserted objects leave the context, changed ones read
    /// their saved values again, deleted ones are no longer deleted.
    public func rollback() async {
        _ = try? await core.perform {
            core.discardChanges()
            guard core.flushedChanges else { return }
            do {
                try await core.unitOfWork().rollback()
                core.flushedChanges = false
            } catch {
                await core.dropConnection()
            }
        }
    }

    /// The object with `id` this context already has, if any (no store access).
    public func registeredModel<T: PersistentModel>(for id: PersistentIdentifier) -> T? {
        guard let record = core.records[id], !record.isDetached else { return nil }
        return core.object(for: record) as? T
    }

    /// The object with `id`, loaded from the store if the context doesn't have it (with the
    /// objects its relationships hold); nil if there is no such object.
    public func model(for id: PersistentIdentifier) async throws -> (any PersistentModel)? {
        try await core.perform {
            try core.checkStore(of: id)
            if let record = core.records[id], record.isLoaded || record.lifecycle == .inserted, !record.isDetached {
                return core.object(for: record) as? any PersistentModel
            }
            try await core.load([id])
            guard let record = core.records[id], record.isLoaded, !record.isDetached else { return nil }
            return core.object(for: record) as? any PersistentModel
        }
    }

    /// The object with `id` as a `T`: nil if there is no such object, or if it is not a `T`.
    public func model<T: PersistentModel>(for id: PersistentIdentifier, as type: T.Type) async throws -> T? {
        try await model(for: id) as? T
    }

    /// Loads the values of objects this context only knows by reference (from a relationship of
    /// an object it fetched), and the objects their relationships hold.
    public func load(_ models: [any PersistentModel]) async throws {
        try await core.perform {
            let ids = models.compactMap { model -> PersistentIdentifier? in
                guard let record = model._$modelState.record, model._$modelState.core === core,
                    !record.isLoaded || !record.unfetched.isEmpty
                else {
                    return nil
                }
                return record.id
            }
            try await core.load(ids)
        }
    }
}

extension ContextCore {
    /// Refuses identifiers of another store.
    func checkStore(of id: PersistentIdentifier) throws(ModelError) {
        guard id.storeIdentifier == container.storeIdentifier else {
            throw ModelError(
                .invalidIdentifier,
                "\(id) belongs to the store \(id.storeIdentifier), not to this container's store \(container.storeIdentifier)",
                context: ["uri": id.uriRepresentation])
        }
    }

    /// Fetches the objects `ids` (with their relationships' objects) into the context.
    func load(_ ids: [PersistentIdentifier]) async throws {
        let grouped = Dictionary(grouping: ids.filter { !$0.isTemporary }, by: \.entityName)
        for (entity, ids) in grouped.sorted(by: { $0.key < $1.key }) {
            guard let info = types.info(forEntity: entity) else { continue }
            let predicate = ModelCore.Predicate.comparison(
                Comparison(.keyPath(PropertyPath([])), .in, .list(ids.map { .object($0) })))
            let request = ModelCore.FetchDescriptor(
                entityName: entity, predicate: predicate,
                relationshipKeyPathsForPrefetching: info.relationships.map { PropertyPath([$0.name]) })
            try await flush()
            let result = try await unitOfWork().fetch(request)
            if case .objects(let objects, let prefetched) = result {
                for snapshot in objects + prefetched { try merge(snapshot) }
            }
        }
    }

    /// The context is gone: nothing can save its changes any more, so its objects are let go,
    /// and its unit of work is closed.
    func contextEnded() {
        discardChanges()
        let connection = takeConnection()
        if let connection { Task { await connection.close() } }
    }
}
