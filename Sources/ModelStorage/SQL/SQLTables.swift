import Foundation
import ModelCore

/// How a schema is laid out in an SQL database, as both SQL backends lay it out: one table per
/// inheritance hierarchy, named after its root entity, with `_pk`, `_entity`, `_version` and a
/// column per attribute of every entity of the hierarchy and per to-one relationship stored as a
/// foreign key; and the schema's join tables. What ``SQLCompiler`` needs to know of a layout.
package protocol SQLTableLayout: Sendable {
    var schema: ResolvedSchema { get }
    /// The hierarchy tables, in declaration order of the roots.
    var tables: [TableLayout] { get }
    /// The table of the hierarchy whose root entity is `root`.
    func table(root: String) -> TableLayout
}

extension SQLTableLayout {
    /// The table of `entity`'s hierarchy.
    package func table(for entity: ResolvedEntity) -> TableLayout {
        table(root: entity.root)
    }

    /// The columns to select for objects of `entities` of `table`: every column those entities
    /// use, or only those of the named `properties`.
    package func selectedColumns(_ table: TableLayout, entities: [String], properties: Set<String>?)
        -> [SelectedColumn]
    {
        var used = Set<String>()
        for name in entities {
            guard let entity = schema[name] else { continue }
            entity.attributes.forEach { used.insert($0.name) }
            entity.relationships.filter { $0.storage == .foreignKey }.forEach { used.insert($0.name) }
        }
        if let properties { used.formIntersection(properties) }
        return table.columns.filter { used.contains($0.name) }.map { column in
            SelectedColumn(name: column.name, kind: column.type.map { .attribute($0) } ?? .reference)
        }
    }

    /// The hierarchy tables of `schema`, in declaration order of the roots.
    package static func hierarchyTables(of schema: ResolvedSchema) -> [TableLayout] {
        schema.rootEntities.map { root in
            var columns: [TableLayout.Column] = []
            var seen = Set<String>()
            for name in root.descendants {
                guard let entity = schema[name] else { continue }
                for attribute in entity.attributes where seen.insert(attribute.name).inserted {
                    columns.append(.init(name: attribute.name, type: attribute.type))
                }
                for relationship in entity.relationships
                where relationship.storage == .foreignKey && seen.insert(relationship.name).inserted {
                    columns.append(.init(name: relationship.name, type: nil))
                }
            }
            return TableLayout(name: root.name, columns: columns, entities: root.descendants)
        }
    }
}

/// One hierarchy table.
package struct TableLayout: Sendable {
    /// A column after `_pk`, `_entity` and `_version`: an attribute (`type` set) or a foreign key.
    package struct Column: Sendable {
        package let name: String
        package let type: AttributeType?

        package init(name: String, type: AttributeType?) {
            self.name = name
            self.type = type
        }
    }

    /// The table's name: the root entity's.
    package let name: String
    package let columns: [Column]
    /// The entities whose objects live here: the root and its descendants.
    package let entities: [String]

    package init(name: String, columns: [Column], entities: [String]) {
        self.name = name
        self.columns = columns
        self.entities = entities
    }

    /// The table name, quoted.
    package var quoted: String { SQL.quote(name) }
}

/// What one selected object column holds, in the order of the `SELECT` after `_pk`, `_entity`
/// and `_version`: an attribute (one SQL column) or a to-one foreign key (two: the key and the
/// target's `_entity`, NULL when the reference dangles).
package struct SelectedColumn: Sendable {
    package enum Kind: Sendable {
        case attribute(AttributeType)
        case reference
    }

    package let name: String
    package let kind: Kind

    package init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }
}

/// Building blocks of SQL text, the same in SQLite and PostgreSQL.
package enum SQL {
    /// A double-quoted identifier. Names come from a validated schema; quoting keeps them safe
    /// whatever they are.
    package static func quote(_ identifier: String) -> String {
        guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
        return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// `alias."column"`.
    package static func column(_ alias: String, _ name: String) -> String {
        alias + "." + quote(name)
    }

    /// A single-quoted SQL string literal, for the few places SQL cannot take a parameter
    /// (partial index conditions and DDL, which name entities of a validated schema).
    package static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
