import ModelCore

extension ModelContext {
    /// The objects `descriptor` selects, sorted, with the objects of their relationships (see
    /// ``FetchDescriptor/relationshipKeyPathsForPrefetching``). Objects the context already has
    /// are the same objects, with fresh values for the properties it has not changed.
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) async throws -> [T] {
        try await core.perform {
            let request = try descriptor.storeDescriptor(in: core.types)
            let result = try await core.read(request, pending: descriptor.includePendingChanges)
            guard case .objects(let objects, let prefetched) = result else { return [] }
            var records: [ObjectRecord] = []
            records.reserveCapacity(objects.count)
            for snapshot in objects {
                records.append(try core.merge(snapshot, attributesFetched: request.propertiesToFetch))
            }
            for snapshot in prefetched { try core.merge(snapshot) }
            return records.map { core.object(for: $0) as! T }
        }
    }

    /// How many objects `descriptor` selects (counted by the store).
    public func fetchCount<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) async throws -> Int {
        try await core.perform {
            var request = try descriptor.storeDescriptor(in: core.types)
            request.resultType = .count
            request.relationshipKeyPathsForPrefetching = []
            if descriptor.includePendingChanges {
                try await core.flush()
                return try await core.unitOfWork().count(request)
            }
            return try await core.container.store.fetchSaved(request).count
        }
    }

    /// The identifiers of the objects `descriptor` selects, without loading them.
    public func fetchIdentifiers<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) async throws
        -> [PersistentIdentifier]
    {
        try await core.perform {
            var request = try descriptor.storeDescriptor(in: core.types)
            request.resultType = .identifiers
            request.relationshipKeyPathsForPrefetching = []
            return try await core.read(request, pending: descriptor.includePendingChanges).identifiers
        }
    }
}

extension ContextCore {
    /// Runs a fetch: through the unit of work (after sending the unsent changes, so the store
    /// sees them), or against what is saved.
    func read(_ request: ModelCore.FetchDescriptor, pending: Bool) async throws -> FetchResult {
        if pending {
            try await flush()
            return try await unitOfWork().fetch(request)
        }
        return try await container.store.fetchSaved(request)
    }
}

extension FetchResult {
    var count: Int {
        switch self {
        case .count(let count): count
        case .objects(let objects, _): objects.count
        case .identifiers(let ids): ids.count
        }
    }
}

extension ModelContext {
    /// Calls `block` with each object `descriptor` selects, in its order, loading `batchSize` at a
    /// time (SwiftData's `enumerate`): the context keeps no more than a batch of them, so a
    /// result of any size can be walked. Objects the block changes stay pending only with
    /// `allowEscapingMutations`; otherwise such a change ends the walk with `invalidArgument`
    /// (save inside the block, or allow it).
    public func enumerate<T: PersistentModel>(
        _ descriptor: FetchDescriptor<T>, batchSize: Int = 5_000, allowEscapingMutations: Bool = false,
        block: (T) async throws -> Void
    ) async throws {
        guard batchSize > 0 else {
            throw ModelError(.invalidArgument, "batchSize must be at least 1, not \(batchSize)")
        }
        var request = try descriptor.storeDescriptor(in: core.types)
        request.resultType = .identifiers
        let ids = try await core.perform {
            try await core.read(request, pending: descriptor.includePendingChanges).identifiers
        }
        var start = 0
        while start < ids.count {
            let batch = Array(ids[start..<min(start + batchSize, ids.count)])
            start += batch.count
            var models = try await core.perform { try await core.models(batch, like: request, as: T.self) }
            for model in models { try await block(model) }
            models = []
            let changed = core.evict(batch)
            if changed > 0, !allowEscapingMutations {
                throw ModelError(
                    .invalidArgument,
                    "the enumerate block changed \(changed) object(s) and left the changes unsaved: save them in the block, or pass allowEscapingMutations: true"
                )
            }
        }
    }
}

extension ContextCore {
    /// The objects with `ids`, in that order, read as `request` reads (its prefetching and
    /// attributes); objects deleted meanwhile are left out.
    func models<T: PersistentModel>(_ ids: [PersistentIdentifier], like request: ModelCore.FetchDescriptor, as: T.Type)
        async throws -> [T]
    {
        var batch = request
        batch.resultType = .objects
        batch.predicate = .comparison(Comparison(.keyPath(PropertyPath([])), .in, .list(ids.map { .object($0) })))
        batch.sortBy = []
        batch.offset = 0
        batch.limit = nil
        let result = try await read(batch, pending: true)
        guard case .objects(let objects, let prefetched) = result else { return [] }
        var byID: [PersistentIdentifier: ObjectRecord] = [:]
        for snapshot in objects { byID[snapshot.id] = try merge(snapshot, attributesFetched: batch.propertiesToFetch) }
        for snapshot in prefetched { try merge(snapshot) }
        return ids.compactMap { byID[$0].flatMap { object(for: $0) as? T } }
    }

    /// Forgets the records of `ids` that nothing holds (no unsaved change, no object alive
    /// outside the context); returns how many have unsaved changes.
    func evict(_ ids: [PersistentIdentifier]) -> Int {
        var changed = 0
        for id in ids {
            guard let record = records[id] else { continue }
            if record.hasChanges {
                changed += 1
            } else if record.object == nil {
                records[id] = nil
            }
        }
        return changed
    }
}
