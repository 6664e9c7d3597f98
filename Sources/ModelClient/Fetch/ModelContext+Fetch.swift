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
                let isNew = core.records[snapshot.id] == nil
                let record = try core.merge(snapshot)
                // A record first made from some attributes only knows which it lacks.
                if isNew, let fetched = request.propertiesToFetch {
                    record.unfetched = Set(record.info.attributes.map(\.name)).subtracting(fetched)
                }
                records.append(record)
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
