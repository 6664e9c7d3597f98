import ModelCore

/// Each model object's link to its context: the observation registrar, the context, and the
/// object's record there (its stored values, relationships and changes). Made by `@Model`.
public final class _ModelState {
    public let registrar = ObservationRegistrar()
    /// The context, held strongly: a context's objects keep it alive, as long as they are used.
    var core: ContextCore?
    /// The object's record in its context (or, after a delete, the record it last had).
    var record: ObjectRecord?
    var isDeleted = false
    /// The identifier of an object never inserted (temporary, in no store).
    private var provisionalID: PersistentIdentifier?

    public init() {}

    /// The record, while the object is in a context.
    var attachedRecord: ObjectRecord? {
        guard let record, !record.isDetached else { return nil }
        return record
    }

    /// The context, while the object is in one.
    var attachedCore: ContextCore? {
        guard let record, !record.isDetached else { return nil }
        return core
    }

    func identifier(of type: any PersistentModel.Type) -> PersistentIdentifier {
        if let record { return record.id }
        if let provisionalID { return provisionalID }
        let id = PersistentIdentifier.temporary(
            storeIdentifier: UUID(uuid: UUID_NULL), entityName: String(describing: type))
        provisionalID = id
        return id
    }

    /// A property's value when its slot holds none: decoded from the record (and kept in the
    /// slot), or, for a relationship, the related objects as the context has them.
    func load(_ object: some PersistentModel, property name: String) -> Any {
        guard let record else {
            fatalError(
                "\(type(of: object)).\(name) has no value: the object was made without its initializer and belongs to no context"
            )
        }
        let property = record.info.property(name)
        switch property.kind {
        case .attribute(let codec):
            guard record.isLoaded, let stored = record.attributes[name] else {
                fatalError(
                    record.unfetched.contains(name)
                        ? record.unfetchedMessage(reading: name) : record.faultMessage(reading: name))
            }
            do {
                let value = try codec.decode(stored)
                property.metadata.writeSlot(object, value)
                return value
            } catch {
                fatalError(
                    "\(record.info.entityName).\(name) of \(record.id) holds \(stored), which is not a \(property.metadata.valueType): \(error)"
                )
            }
        case .toOne, .toMany:
            guard let core, !record.isDetached else { return property.emptyValue(detachedFrom: record) }
            return core.relatedValue(of: record, property)
        }
    }

    /// Records a new value. Returns whether the slot should hold it (attributes, and everything
    /// of an object in no context); a relationship of an object in a context lives in its record.
    func store(_ object: some PersistentModel, property name: String, value: Any) -> Bool {
        guard let record, let core, !record.isDetached else {
            // An object in no context that is given a related object in one joins that context.
            guard let info = try? ModelTypeInfo.of(type(of: object)), let property = info.propertyIfAny(name),
                property.isRelationship,
                let context = property.objects(in: value).lazy.compactMap({
                    ($0 as? any PersistentModel)?._$modelState.attachedCore
                }).first
            else { return true }
            context.insert(object)
            context.setRelationship(self.record!, property, to: value)
            return false
        }
        let property = record.info.property(name)
        switch property.kind {
        case .attribute:
            core.attributeChanged(record, name)
            // Models sharing the record (an upsert's) read the value too: the one the record
            // holds is the one its save sends.
            record.forEachObject { other in
                guard other !== object else { return }
                property.metadata.writeSlot(other, value)
                property.metadata.notify(other)
            }
            return true
        case .toOne, .toMany:
            core.setRelationship(record, property, to: value)
            return false
        }
    }
}

private let UUID_NULL: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
