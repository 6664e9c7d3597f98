import ModelCore
import ModelStorage

/// What ``ReadContext/decodeObjects(_:_:table:plans:_:)`` reads from the rows of an objects
/// statement: where each selected column is, and each entity's ``RowPlan``, made at its first row
/// (or all made beforehand, for a statement the layout keeps).
struct RowPlans: Sendable {
    private let positions: [String: Int32]
    private let properties: Set<String>?
    private var plans: [String: RowPlan] = [:]

    /// Plans for a statement selecting `_pk`, `_entity` (NULL for a table of one entity,
    /// ``SQLCompiler/entityColumn``), `_version`, then `columns` (a foreign key's column followed
    /// by its target's `_entity`), returning `properties` (nil: all).
    init(columns: [SelectedColumn], properties: Set<String>?) {
        var positions: [String: Int32] = [:]
        var position: Int32 = 3
        for column in columns {
            positions[column.name] = position
            if case .reference = column.kind { position += 2 } else { position += 1 }
        }
        self.positions = positions
        self.properties = properties
    }

    /// The plan already made for the entity `row`'s `_entity` column names, told by its bytes
    /// among the first few plans, without making a string of the name and hashing it (600 and
    /// 400 instructions of a point read); nil when none of them is.
    func knownPlan(of row: SQLiteStatement) -> RowPlan? {
        plans.values.prefix(4).first { row.textEquals(1, $0.entityNameBytes) }
    }

    /// The plan when exactly one has been made (as for a statement of a table of one entity,
    /// planned beforehand), found without hashing its entity's name.
    var onlyPlan: RowPlan? { plans.count == 1 ? plans.values.first : nil }

    /// The plan of `entityName`'s rows; nil for an entity the schema does not have.
    mutating func plan(for entityName: String, schema: ResolvedSchema) -> RowPlan? {
        if let known = plans[entityName] { return known }
        guard let entity = schema[entityName] else { return nil }
        let plan = RowPlan(entity, positions: positions, properties: properties, schema: schema)
        plans[entityName] = plan
        return plan
    }
}

/// What an objects statement reads from the rows of one entity: each attribute and foreign key
/// it returns, with its column (nil when not selected). A class: a row's reader holds it, and
/// copying a structure of six tables cost six retains and releases a row.
final class RowPlan: Sendable {
    let entityName: String
    /// Every attribute returned, null: each row's attributes are written into a copy of it, at
    /// each attribute's index, which costs one copy of the table rather than a hash and a
    /// growing table per attribute.
    let attributeTable: [String: Value]
    let attributes: [(index: Dictionary<String, Value>.Index, type: AttributeType, position: Int32?)]
    /// A foreign key returned: its relationship, its target's entity and hierarchy, and its
    /// column (followed by the target's `_entity`).
    typealias ForeignKey = (name: String, destination: String, root: String, position: Int32?)
    let foreignKeys: [ForeignKey]
    /// The names of the attributes and foreign keys returned, in the order of ``attributes``
    /// and ``foreignKeys``: what a row handed to a sink holds (``ReadContext/writeObjects``).
    let shape: ObjectShape
    /// The entity's name as UTF-8, to tell a row of it without making a string of the row's.
    let entityNameBytes: [UInt8]

    init(_ entity: ResolvedEntity, positions: [String: Int32], properties: Set<String>?, schema: ResolvedSchema) {
        entityName = entity.name
        let returned = entity.attributes.filter { properties?.contains($0.name) ?? true }
        let table = Dictionary(returned.map { ($0.name, Value.null) }, uniquingKeysWith: { first, _ in first })
        attributeTable = table
        attributes = returned.map { (table.index(forKey: $0.name)!, $0.type, positions[$0.name]) }
        foreignKeys = entity.relationships.filter {
            $0.storage == .foreignKey && (properties?.contains($0.name) ?? true)
        }.map {
            ($0.name, $0.destination, schema[$0.destination]?.root ?? $0.destination, positions[$0.name])
        }
        shape = ObjectShape(
            entityName: entity.name, attributeNames: returned.map(\.name), toOneNames: foreignKeys.map(\.name))
        entityNameBytes = Array(entity.name.utf8)
    }
}

/// The statement reading a hierarchy's objects by key, with every property: the same for every
/// read of the hierarchy, so the layout makes it once (a point read spent a tenth of its time
/// building it).
/// A class: a point read passes it along, and copying a structure of two strings, a table and
/// plans cost six retains and releases a read.
final class ObjectsByKeyStatement: Sendable {
    let table: TableLayout
    /// `SELECT <_pk, _entity, _version, every column> FROM <table> AS t0 <joins>`; the caller
    /// adds the condition on `t0."_pk"`.
    let selectFrom: String
    /// ``selectFrom`` of the one object whose key is bound as `?1`: a point read's statement,
    /// made once rather than joined for every read.
    let selectOne: String
    /// Made for every entity of the hierarchy.
    let plans: RowPlans
    /// ``SQLiteLayout/readsObjectsInOneStatement(root:)`` of the hierarchy, kept with its
    /// statement so that a point read looks up one, not both.
    let readsInOneStatement: Bool

    init(table: TableLayout, selectFrom: String, selectOne: String, plans: RowPlans, readsInOneStatement: Bool) {
        self.table = table
        self.selectFrom = selectFrom
        self.selectOne = selectOne
        self.plans = plans
        self.readsInOneStatement = readsInOneStatement
    }
}

/// The columns an objects fetch selects, with the plans that read its rows.
struct ObjectsSelection: Sendable {
    let columns: [SelectedColumn]
    let plans: RowPlans
    /// The select list of `columns` when it joins nothing, made once for a selection the layout
    /// keeps (``SQLCompiler/plainObjectSelect(_:entity:)``: 13,000 instructions of a 50-object query
    /// made it again); nil to make it with each query.
    var select: String? = nil
}

/// What the selection of every column of an entity's objects depends on.
struct AllColumnsKey: Hashable, Sendable {
    let entity: String
    let includesSubentities: Bool
}

extension SQLiteLayout {
    /// The columns of every property of `entity`'s objects (and of its subentities' with
    /// `includesSubentities`), with a plan for each entity made beforehand: the same for every
    /// such fetch, so the layout makes them once.
    func allColumns(of entity: ResolvedEntity, includesSubentities: Bool) -> ObjectsSelection {
        let key = AllColumnsKey(entity: entity.name, includesSubentities: includesSubentities)
        if let known = allColumnsSelections.withLock({ $0[key] }) { return known }
        let entities = includesSubentities ? entity.descendants : [entity.name]
        let columns = selectedColumns(table(for: entity), entities: entities, properties: nil)
        var plans = RowPlans(columns: columns, properties: nil)
        for name in entities { _ = plans.plan(for: name, schema: schema) }
        let selection = ObjectsSelection(
            columns: columns, plans: plans,
            select: SQLCompiler.plainObjectSelect(
                columns, entity: SQLCompiler.entityColumn(of: table(for: entity), dialect: SQLiteDialect.shared)))
        allColumnsSelections.withLock { $0[key] = selection }
        return selection
    }

    /// The statement reading objects of entity `entityName`'s hierarchy by key (its root's
    /// ``objectsByKey(root:)``), remembered for the last entity asked and told apart by its name:
    /// a point read found the entity in the schema's table and then the statement in the
    /// layout's, hashing names twice (about 600 instructions). Throws `unknownEntity` as the
    /// schema does.
    func pointReadStatement(of entityName: String) throws(ModelError) -> ObjectsByKeyStatement? {
        if let last = lastPointRead.withLock({ $0 }), last.entityName == entityName { return last.statement }
        guard let statement = objectsByKey(root: try schema.entity(entityName).root) else { return nil }
        lastPointRead.withLock { $0 = (entityName, statement) }
        return statement
    }

    /// The statement reading objects of the hierarchy `root` by key; nil for a root the schema
    /// does not have.
    func objectsByKey(root: String) -> ObjectsByKeyStatement? {
        if let known = objectsByKeyStatements.withLock({ $0[root] }) { return known }
        guard let rootEntity = schema[root] else { return nil }
        let table = self.table(root: root)
        var compiler = SQLCompiler(layout: self, entity: rootEntity)
        // The root with its subentities: every entity of the table.
        let selection = allColumns(of: rootEntity, includesSubentities: true)
        let select = compiler.objectSelect(selection.columns)
        let selectFrom = "SELECT \(select) FROM \(table.quoted) AS t0\(compiler.root.joinClause)"
        let statement = ObjectsByKeyStatement(
            table: table, selectFrom: selectFrom, selectOne: selectFrom + " WHERE t0.\"_pk\" = ?1",
            plans: selection.plans, readsInOneStatement: readsObjectsInOneStatement(root: root))
        objectsByKeyStatements.withLock { $0[root] = statement }
        return statement
    }
}
