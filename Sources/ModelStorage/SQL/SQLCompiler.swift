import Foundation
import ModelCore

/// Compiles typed predicates, sorts, fetches and aggregates to one SQL statement over a
/// ``SQLTableLayout``, in a ``SQLDialect`` (SQLite's or PostgreSQL's). Every value is bound (as
/// `?1`, `?2`… or `$1`, `$2`… in ``parameters``); every identifier comes from the validated
/// schema and is quoted. Key paths through to-one relationships become
/// `LEFT JOIN`s, to-many relationships correlated subqueries.
///
/// The statement names hierarchy and join tables by their plain names, so an overlay can shadow
/// them with common table expressions of the same names (see ``OverlayTables``).
package struct SQLCompiler {
    package let layout: any SQLTableLayout
    package let dialect: any SQLDialect
    /// The keys an overlay gives its inserted objects, by temporary UUID; a temporary identifier
    /// not listed here names no object.
    package let temporaryKeys: [UUID: Int64]
    /// The values bound to `?1`, `?2`…, in order.
    package private(set) var parameters: [Value] = []
    /// The fetched object's scope (alias `t0`).
    package let root: SQLScope
    /// The scopes of the SUBQUERY variables being compiled.
    var variables: [String: SQLScope] = [:]
    private var aliasCount = 0

    package init(
        layout: any SQLTableLayout, dialect: any SQLDialect, entity: ResolvedEntity, temporaryKeys: [UUID: Int64] = [:]
    ) {
        self.layout = layout
        self.dialect = dialect
        self.temporaryKeys = temporaryKeys
        self.root = SQLScope(alias: "t0", entity: entity)
    }

    package var schema: ResolvedSchema { layout.schema }

    /// Binds `value` and returns its parameter (`?N` or `$N`).
    package mutating func bind(_ value: Value) -> String {
        parameters.append(value)
        return dialect.placeholder(parameters.count, for: value)
    }

    /// A new table alias, unique within the statement.
    package mutating func alias(_ prefix: String = "t") -> String {
        aliasCount += 1
        return "\(prefix)\(aliasCount)"
    }

    /// The primary key an object identifier names here: its key, or the key an overlay gives an
    /// inserted object; -1 (no object) for other temporary identifiers.
    func primaryKey(of id: PersistentIdentifier) -> Int64 {
        switch id.key {
        case .permanent(let pk): pk
        case .temporary(let uuid): temporaryKeys[uuid] ?? -1
        }
    }

    /// The scope a key path starts in: its SUBQUERY variable's, or the fetched object's.
    func scope(of path: PropertyPath) throws(ModelError) -> SQLScope {
        guard let variable = path.variable else { return root }
        guard let scope = variables[variable] else {
            throw ModelError(
                .invalidPredicate, "variable $\(variable) is not defined here", context: ["keyPath": path.description])
        }
        return scope
    }

    /// Resolves `path` against the schema, with the SUBQUERY variables in scope.
    func resolve(_ path: PropertyPath) throws(ModelError) -> ResolvedPath {
        try schema.resolve(path, from: root.entity, variables: variables.mapValues(\.entity))
    }

    /// Follows to-one `relationships` from `alias`, adding a `LEFT JOIN` per step to `scope`
    /// (once per step and alias), and returns the alias of the object reached. A nil or dangling
    /// reference joins no row, so every attribute after it is NULL.
    mutating func join(_ relationships: ArraySlice<ResolvedRelationship>, from alias: String, in scope: SQLScope)
        -> String
    {
        var current = alias
        for relationship in relationships {
            let key = "\(current).\(relationship.name)"
            if let existing = scope.joinAliases[key] {
                current = existing
                continue
            }
            let target = self.alias()
            let table = layout.table(root: rootName(of: relationship.destination))
            scope.joins.append(
                "LEFT JOIN \(table.quoted) AS \(target) ON \(target).\"_pk\" = \(objectKey(of: relationship, from: current))"
            )
            scope.joinAliases[key] = target
            current = target
        }
        return current
    }

    /// The key of the object a to-one relationship of `alias` refers to: the foreign-key column,
    /// or, when the other side holds the key, the first object (by key) that points here.
    mutating func objectKey(of relationship: ResolvedRelationship, from alias: String) -> String {
        switch relationship.storage {
        case .inverseForeignKey(let entity, let name):
            let holder = self.alias("h")
            let table = layout.table(root: rootName(of: entity))
            return
                "(SELECT min(\(holder).\"_pk\") FROM \(table.quoted) AS \(holder) WHERE \(SQL.column(holder, name)) = \(alias).\"_pk\")"
        default:
            return SQL.column(alias, relationship.name)
        }
    }

    /// The rows of a to-many relationship of the object `owner`: a `FROM` clause whose alias
    /// `alias` names the related objects, and the condition that ties them to `owner`.
    mutating func relatedRows(_ relationship: ResolvedRelationship, of owner: String) -> RelatedRows {
        let related = alias("s")
        let target = layout.table(root: rootName(of: relationship.destination))
        switch relationship.storage {
        case .joinTable(let join, let isOwner):
            let link = alias("j")
            let (mine, theirs) = isOwner ? ("source", "target") : ("target", "source")
            return RelatedRows(
                from:
                    "\(SQL.quote(join.name)) AS \(link) JOIN \(target.quoted) AS \(related) ON \(related).\"_pk\" = \(link).\"\(theirs)\"",
                condition: "\(link).\"\(mine)\" = \(owner).\"_pk\"", alias: related,
                countSQL:
                    "(SELECT count(*) FROM \(SQL.quote(join.name)) AS \(link) WHERE \(link).\"\(mine)\" = \(owner).\"_pk\")"
            )
        case .inverseForeignKey(_, let name):
            let condition = "\(SQL.column(related, name)) = \(owner).\"_pk\""
            return RelatedRows(
                from: "\(target.quoted) AS \(related)", condition: condition, alias: related,
                countSQL: "(SELECT count(*) FROM \(target.quoted) AS \(related) WHERE \(condition))")
        case .foreignKey:
            // A to-one relationship is never walked as a collection; the typer rejects it.
            let condition = "\(related).\"_pk\" = \(SQL.column(owner, relationship.name))"
            return RelatedRows(
                from: "\(target.quoted) AS \(related)", condition: condition, alias: related,
                countSQL: "(SELECT count(*) FROM \(target.quoted) AS \(related) WHERE \(condition))")
        }
    }

    /// The root entity of `entity`'s hierarchy (the entity itself when unknown; the typed tree
    /// only names entities of the schema).
    package func rootName(of entity: String) -> String {
        schema[entity]?.root ?? entity
    }

    /// The condition restricting `alias` to `entities` when they are not the whole table, or nil.
    package mutating func entityFilter(_ entities: [String], alias: String, table: TableLayout) -> String? {
        guard Set(entities) != Set(table.entities) else { return nil }
        if entities.count == 1 { return "\(alias).\"_entity\" = \(bind(.string(entities[0])))" }
        return "\(alias).\"_entity\" IN (\(entities.map { bind(.string($0)) }.joined(separator: ", ")))"
    }
}

/// Where a compiled key path's joins go: the fetched object, a SUBQUERY variable, or the related
/// object of an `ANY`/`ALL`/`NONE` subquery.
package final class SQLScope {
    package let alias: String
    package let entity: ResolvedEntity
    /// `LEFT JOIN` clauses, in the order they were added (later ones may use earlier aliases).
    package var joins: [String] = []
    /// The alias each followed relationship (`alias.relationship`) was joined as.
    var joinAliases: [String: String] = [:]

    init(alias: String, entity: ResolvedEntity) {
        self.alias = alias
        self.entity = entity
    }

    /// The joins as SQL text, with a leading space, or "".
    package var joinClause: String { joins.isEmpty ? "" : " " + joins.joined(separator: " ") }
}

/// The related objects of a to-many relationship, as SQL.
struct RelatedRows {
    /// `FROM` clause (without the keyword) whose alias ``alias`` names the related objects.
    let from: String
    /// The condition that ties them to the owner.
    let condition: String
    let alias: String
    /// `(SELECT count(*) …)`, without joining the related table when a join table suffices.
    let countSQL: String
}
