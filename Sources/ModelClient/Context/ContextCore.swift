import ModelCore

/// The inside of a ``ModelContext``: the records of the objects it knows, the objects with
/// unsaved changes, and the connection to its unit of work (a daemon session, or an engine
/// context in-process). Objects hold it strongly; it holds them weakly unless they changed.
final class ContextCore {
    weak var owner: ModelContext?
    let container: ModelContainer
    var types: ModelTypes { container.types }
    var author: String?
    var mergePolicy: MergePolicy = .error
    /// SwiftData's: an insert that repeats an object's unique values updates that object.
    var uniquenessPolicy: UniquenessPolicy = .upsert
    var records: [PersistentIdentifier: ObjectRecord] = [:]
    /// Records with unsaved changes, in the order they first changed.
    var pending: [ObjectRecord] = []
    private var pendingSet = Set<ObjectIdentifier>()
    /// Whether the unit of work holds changes this context sent but has not saved.
    var flushedChanges = false
    private var generation: UInt64 = 0
    /// One operation of the context at a time: an actor that owns a context may start a second
    /// operation while the first waits for the store, and the second waits its turn.
    let gate = AsyncSemaphore(permits: 1)
    private var connection: (any ContextConnection)?
    private var connectionSettings: ContextSettings?

    init(container: ModelContainer, author: String?) {
        self.container = container
        self.author = author
    }

    func nextGeneration() -> UInt64 {
        generation += 1
        return generation
    }

    // MARK: The unit of work

    /// The settings the unit of work is to have.
    var settings: ContextSettings {
        ContextSettings(author: author, mergePolicy: mergePolicy, uniquenessPolicy: uniquenessPolicy)
    }

    /// The connection, opened on first use; opened again if the author or a policy changed
    /// while nothing was sent to it.
    func unitOfWork() async throws -> any ContextConnection {
        let settings = settings
        if let connection, connectionSettings == settings || flushedChanges {
            return connection
        }
        if let old = connection {
            connection = nil
            await old.close()
        }
        let opened = try await container.store.openContext(settings)
        connection = opened
        connectionSettings = settings
        return opened
    }

    /// Runs a context operation: one at a time, and once more on a new unit of work if the
    /// daemon ended the session (it expired while idle, or the daemon restarted), after marking
    /// every pending change to be sent again.
    ///
    /// It runs where its caller runs: on the actor that owns the context, if one does, so the
    /// actor's other tasks touch the context only while the operation waits. The permit is
    /// taken without leaving that actor (`acquire` is `nonisolated(nonsending)`): a closure
    /// called just after an await that left the actor started on the global executor, beside
    /// the actor's other tasks (the Swift 6.3 compiler emits no hop back before calling one),
    /// and so did `gate.withPermit`'s. ModelActorIsolationTests checks where it runs.
    func perform<T>(_ body: () async throws -> T) async throws -> T {
        try await gate.acquire()
        defer { gate.release() }
        do {
            return try await body()
        } catch let error as ModelError where error.code == .notFound && error.context["session"] != nil {
            await dropConnection()
            return try await body()
        }
    }

    /// Forgets the connection (after a failure that leaves its state unknown); the next
    /// operation opens a new one.
    func dropConnection() async {
        let old = connection
        connection = nil
        if flushedChanges { markAllUnsent() }
        flushedChanges = false
        await old?.close()
    }

    /// The connection, which the caller now closes.
    func takeConnection() -> (any ContextConnection)? {
        defer { connection = nil }
        return connection
    }

    // MARK: Records and objects

    func markPending(_ record: ObjectRecord) {
        if let object = record.anyObject { record.pinned = object }
        if pendingSet.insert(ObjectIdentifier(record)).inserted { pending.append(record) }
    }

    func clearPending() {
        for record in pending { record.pinned = nil }
        pending = []
        pendingSet = []
    }

    /// The object of `id`: the one the context has, or one made from its record (a fault if the
    /// context knows nothing but the identifier).
    func object(for id: PersistentIdentifier) -> AnyObject {
        if let record = records[id] { return object(for: record) }
        guard let info = types.info(forEntity: id.entityName) else {
            fatalError("\(id) is of the entity \(id.entityName), which this container's models don't include")
        }
        let record = ObjectRecord(id: id, info: info, isLoaded: false)
        records[id] = record
        return object(for: record)
    }

    func object(for record: ObjectRecord) -> AnyObject {
        if let object = record.object { return object }
        let object = record.info.type.init(backingData: _ModelBackingData())
        let state = object._$modelState
        state.core = self
        state.record = record
        record.object = object
        if record.hasChanges { record.pinned = object }
        return object
    }

    /// Takes in a snapshot from the store: a new record, or fresh values for the properties of
    /// a known one that have no unsaved changes (observers hear of values that changed).
    /// `attributesFetched` names the attributes a fetch of some of them brought (its
    /// `propertiesToFetch`): a record it loads first, new or known only by reference, then
    /// knows which it lacks, and ``ModelContext/load(_:)`` brings them.
    @discardableResult
    func merge(_ snapshot: ObjectSnapshot, attributesFetched: [String]? = nil) throws(ModelError) -> ObjectRecord {
        guard let info = types.info(forEntity: snapshot.id.entityName) else {
            throw ModelError(
                .unknownEntity,
                "the store holds \(snapshot.id), of the entity \(snapshot.id.entityName), which this container's models don't include: add its class to ModelContainer(for: …)"
            )
        }
        guard let record = records[snapshot.id] else {
            let record = ObjectRecord(
                id: snapshot.id, info: info, isLoaded: true, attributes: snapshot.attributes,
                relationships: snapshot.relationshipIDs)
            if let attributesFetched { record.unfetched = info.attributesLeftOut(fetching: attributesFetched) }
            record.version = snapshot.version
            records[snapshot.id] = record
            return record
        }
        guard record.lifecycle == .persisted, !record.isMarkedDeleted else { return record }
        // Unsaved changes were made to the values of the version read before: a save checks that
        // one. (A unit of work's read of an object it holds changes to shows the version the
        // save would make, not the stored one.)
        if !record.hasChanges { record.version = snapshot.version }
        let wasLoaded = record.isLoaded
        record.isLoaded = true
        if !wasLoaded, let attributesFetched {
            record.unfetched = info.attributesLeftOut(fetching: attributesFetched)
        } else if !record.unfetched.isEmpty {
            record.unfetched.subtract(snapshot.attributes.keys)
        }
        for (name, value) in snapshot.attributes where !record.changed.contains(name) {
            let old = record.attributes[name]
            record.attributes[name] = value
            guard let property = info.propertyIfAny(name), old != value || !wasLoaded else { continue }
            record.forEachObject { object in
                property.metadata.writeSlot(object, nil)
                if wasLoaded { property.metadata.notify(object) }
            }
        }
        for (name, ids) in snapshot.relationshipIDs
        where !record.changed.contains(name) && !record.derived.contains(name) {
            let old = record.relationships[name]
            record.relationships[name] = ids
            if wasLoaded, old != ids, let property = info.propertyIfAny(name) {
                record.forEachObject { property.metadata.notify($0) }
            }
        }
        return record
    }

    // MARK: Inserting and deleting

    /// Inserts `object`, and the objects its relationships hold that belong to no context.
    func insert(_ object: any PersistentModel) {
        let state = object._$modelState
        if let core = state.core, !(state.record?.isDetached ?? true) {
            guard core === self else {
                fatalError(
                    "\(type(of: object)) \(object.persistentModelID) belongs to another context; pass its persistentModelID and fetch it in this one"
                )
            }
            if let record = state.record, record.isMarkedDeleted {
                record.isMarkedDeleted = false
            }
            return
        }
        let info: ModelTypeInfo
        do {
            info = try types.info(for: type(of: object))
        } catch {
            fatalError(error.message)
        }
        let id = PersistentIdentifier.temporary(storeIdentifier: container.storeIdentifier, entityName: info.entityName)
        let record = ObjectRecord(id: id, info: info, isLoaded: true)
        record.lifecycle = .inserted
        record.object = object
        records[id] = record
        state.core = self
        state.record = record
        state.isDeleted = false
        markPending(record)
        // Relationships set before insertion are in the slots: move them into the record.
        for property in info.relationships {
            record.relationships[property.name] = []
            guard case .value(let value) = property.metadata.readSlot(object) else { continue }
            property.metadata.writeSlot(object, nil)
            let targets = property.objects(in: value)
            guard !targets.isEmpty else { continue }
            setRelationship(record, property, targets: targets)
        }
    }

    /// Marks `object` for deletion; delete rules run when the context saves.
    func delete(_ object: any PersistentModel) {
        let state = object._$modelState
        if let core = state.core, core !== self, let record = state.record, !record.isDetached {
            // Another context's object: the stored object it stands for is deleted, by its URI
            // (an object that context has not saved yet has none in this one).
            guard !record.id.isTemporary else {
                fatalError(
                    "\(type(of: object)) \(record.id) is another context's unsaved object; delete it in that context")
            }
            return delete(id: record.id)
        }
        guard let record = state.record, state.core === self, !record.isDetached else { return }
        guard !record.isMarkedDeleted else { return }
        record.isMarkedDeleted = true
        markPending(record)
    }

    /// Marks the object `id` for deletion, whether or not the context has made it.
    func delete(id: PersistentIdentifier) {
        if let record = records[id] {
            guard !record.isMarkedDeleted, !record.isDetached else { return }
            record.isMarkedDeleted = true
            markPending(record)
            return
        }
        guard let info = types.info(forEntity: id.entityName) else { return }
        let record = ObjectRecord(id: id, info: info, isLoaded: false)
        record.isMarkedDeleted = true
        records[id] = record
        markPending(record)
    }

    // MARK: Attributes

    func attributeChanged(_ record: ObjectRecord, _ name: String) {
        record.changed.insert(name)
        record.unsent[name] = nextGeneration()
        markPending(record)
    }
}
