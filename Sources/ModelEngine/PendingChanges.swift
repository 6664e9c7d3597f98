import ModelCore

/// A relationship edit as a context records it: `source.relationship` gains (`isLink`) or loses
/// `target`. Each edit is applied to both sides at once, so the two sides always agree.
struct LinkEdit: Hashable, Sendable {
    var source: PersistentIdentifier
    var relationship: String
    var target: PersistentIdentifier
    var isLink: Bool
}

/// Everything a context has read and changed. A value: a save works on a copy (delete rules add
/// to it) and the context keeps the original if the save fails.
///
/// The working view of an object is a function of its base (as read), its attribute edits and
/// the relationship edits, in order; ``rebuildViews()`` recomputes it after edits are dropped.
struct PendingChanges: Sendable {
    let schema: ResolvedSchema
    /// Objects as last read from the store (the versions optimistic locking checks against).
    var bases: [PersistentIdentifier: ObjectSnapshot] = [:]
    /// Objects inserted by the context, in order.
    var inserted: [PersistentIdentifier] = []
    /// Attribute values set by the context (all values for inserted objects).
    var attributeEdits: [PersistentIdentifier: [String: Value]] = [:]
    var links: [LinkEdit] = []
    /// Objects deleted by the context, in order (delete rules add to a save's copy).
    var deleted: [PersistentIdentifier] = []
    var deletedSet: Set<PersistentIdentifier> = []
    /// Objects the client changed itself; their saves check the version read. Objects changed
    /// only as the other side of a relationship edit are not checked.
    var directlyEdited: Set<PersistentIdentifier> = []
    /// Versions the caller read objects at (``ObjectEdit/expectVersion(_:of:)``): a save checks
    /// these rather than the bases' (a client that keeps its own unit of work read the objects
    /// itself, maybe before this context existed).
    var expectedVersions: [PersistentIdentifier: Int64] = [:]
    /// Working views of every object the context touched.
    private(set) var views: [PersistentIdentifier: ObjectState] = [:]
    /// The objects with views, in the order they were first touched (so saves are deterministic).
    private(set) var touchOrder: [PersistentIdentifier] = []
    private var touchSet: Set<PersistentIdentifier> = []

    init(schema: ResolvedSchema) {
        self.schema = schema
    }

    /// Whether anything would be saved.
    var hasChanges: Bool { !inserted.isEmpty || !attributeEdits.isEmpty || !links.isEmpty || !deleted.isEmpty }

    /// The working view of `id`: its pending state if touched, else its base; nil if unknown.
    func view(of id: PersistentIdentifier) -> ObjectState? {
        views[id] ?? bases[id].map(ObjectState.init)
    }

    /// Whether the context has this object's state (inserted, or read).
    func isKnown(_ id: PersistentIdentifier) -> Bool { views[id] != nil || bases[id] != nil }

    /// Whether the context changed this object in any way.
    func isTouched(_ id: PersistentIdentifier) -> Bool { views[id] != nil || deletedSet.contains(id) }

    // MARK: Recording changes

    /// Makes room for `count` more inserts at once, so that a large batch does not grow (and
    /// rehash) each table many times over.
    mutating func reserveInserts(_ count: Int) {
        inserted.reserveCapacity(inserted.count + count)
        attributeEdits.reserveCapacity(attributeEdits.count + count)
        directlyEdited.reserveCapacity(directlyEdited.count + count)
        views.reserveCapacity(views.count + count)
        touchOrder.reserveCapacity(touchOrder.count + count)
        touchSet.reserveCapacity(touchSet.count + count)
    }

    mutating func recordInsert(_ id: PersistentIdentifier, attributes: [String: Value]) {
        inserted.append(id)
        attributeEdits[id] = attributes
        directlyEdited.insert(id)
        setView(ObjectState(id: id, version: nil, attributes: attributes))
    }

    mutating func recordAttributes(_ values: [String: Value], of id: PersistentIdentifier) {
        guard var state = view(of: id) else { return }
        attributeEdits[id, default: [:]].merge(values) { _, new in new }
        state.attributes.merge(values) { _, new in new }
        setView(state)
        directlyEdited.insert(id)
    }

    /// Records a delete the client asked for (checked against the version read).
    mutating func recordDelete(_ id: PersistentIdentifier) {
        guard deletedSet.insert(id).inserted else { return }
        deleted.append(id)
        directlyEdited.insert(id)
    }

    /// Records a delete made by a cascade rule (not checked against a version).
    mutating func recordCascadeDelete(_ id: PersistentIdentifier) {
        guard deletedSet.insert(id).inserted else { return }
        deleted.append(id)
    }

    /// Records a relationship edit and applies it to both sides' views. The caller has made sure
    /// both objects are known.
    mutating func record(_ edit: LinkEdit, direct: Bool) {
        links.append(edit)
        if direct { directlyEdited.insert(edit.source) }
        apply(edit)
    }

    /// Sets the to-one `relationship` of `source` to `target`, unlinking what must go first:
    /// the old target, and — for a one-to-one — the new target's old partner.
    mutating func setToOne(
        _ relationship: ResolvedRelationship, of source: PersistentIdentifier,
        to target: PersistentIdentifier?, direct: Bool
    ) {
        let current = view(of: source)?.toOne[relationship.name] ?? nil
        if current == target { return }
        if let current {
            record(
                LinkEdit(source: source, relationship: relationship.name, target: current, isLink: false),
                direct: direct)
        }
        guard let target else { return }
        link(relationship, source, target, direct: direct)
    }

    /// Adds `target` to `source.relationship` (either cardinality), first unlinking whatever a
    /// to-one inverse held, so that both sides stay consistent.
    mutating func link(
        _ relationship: ResolvedRelationship, _ source: PersistentIdentifier,
        _ target: PersistentIdentifier, direct: Bool
    ) {
        if !relationship.isToMany, let current = view(of: source)?.toOne[relationship.name] ?? nil, current != target {
            record(
                LinkEdit(source: source, relationship: relationship.name, target: current, isLink: false),
                direct: direct)
        }
        if let inverseName = relationship.inverse,
            let inverse = (try? schema.entity(relationship.destination))?.relationship(inverseName), !inverse.isToMany,
            let held = view(of: target)?.toOne[inverseName] ?? nil, held != source
        {
            // The target's to-one inverse points elsewhere: take it away from its current holder.
            record(
                LinkEdit(source: held, relationship: relationship.name, target: target, isLink: false), direct: false)
        }
        if view(of: source)?.targets(of: relationship).contains(target) == true { return }
        record(LinkEdit(source: source, relationship: relationship.name, target: target, isLink: true), direct: direct)
    }

    /// Removes `target` from `source.relationship`.
    mutating func unlink(
        _ relationship: ResolvedRelationship, _ source: PersistentIdentifier,
        _ target: PersistentIdentifier, direct: Bool
    ) {
        guard view(of: source)?.targets(of: relationship).contains(target) == true else { return }
        record(LinkEdit(source: source, relationship: relationship.name, target: target, isLink: false), direct: direct)
    }

    // MARK: Views

    private mutating func apply(_ edit: LinkEdit) {
        guard let sourceEntity = entity(of: edit.source),
            let relationship = sourceEntity.relationship(edit.relationship)
        else { return }
        applySide(edit.source, relationship, edit.target, edit.isLink)
        if let inverseName = relationship.inverse,
            let inverse = (try? schema.entity(relationship.destination))?.relationship(inverseName)
        {
            applySide(edit.target, inverse, edit.source, edit.isLink)
        }
    }

    private mutating func applySide(
        _ id: PersistentIdentifier, _ relationship: ResolvedRelationship,
        _ other: PersistentIdentifier, _ isLink: Bool
    ) {
        guard var state = view(of: id) else { return }
        if relationship.isToMany {
            if isLink {
                state.toMany[relationship.name, default: []].insert(other)
            } else {
                state.toMany[relationship.name]?.remove(other)
            }
        } else if isLink {
            state.toOne[relationship.name] = .some(other)
        } else if state.toOne[relationship.name] == .some(other) {
            state.toOne[relationship.name] = .some(nil)
        }
        setView(state)
    }

    private mutating func setView(_ state: ObjectState) {
        views[state.id] = state
        if touchSet.insert(state.id).inserted { touchOrder.append(state.id) }
    }

    /// Recomputes every working view from bases, attribute edits and relationship edits.
    mutating func rebuildViews() {
        views = [:]
        for id in inserted {
            views[id] = ObjectState(id: id, version: nil, attributes: attributeEdits[id] ?? [:])
        }
        for id in touchOrder where views[id] == nil {
            guard let values = attributeEdits[id], var state = bases[id].map(ObjectState.init) else { continue }
            state.attributes.merge(values) { _, new in new }
            views[id] = state
        }
        for edit in links { apply(edit) }
        touchOrder.removeAll { views[$0] == nil }
        touchSet = Set(touchOrder)
    }

    /// Drops every change to `id`: attribute edits, relationship edits on either side, a delete.
    mutating func discardChanges(to id: PersistentIdentifier) {
        attributeEdits[id] = nil
        links.removeAll { $0.source == id || $0.target == id }
        if deletedSet.remove(id) != nil { deleted.removeAll { $0 == id } }
        directlyEdited.remove(id)
        rebuildViews()
    }

    /// The entity of `id`, if the schema has it.
    func entity(of id: PersistentIdentifier) -> ResolvedEntity? { schema[id.entityName] }
}
