import ModelCore

/// A URI names an entity and a key, so no name may draw a key again that it drew before,
/// whatever hierarchy it comes back in. Key sequences are kept per hierarchy root, by name, and
/// no row is ever deleted (a removed root's stays as it was); a migration raises rows, in order:
/// a name the store stops using (renamed or removed) gets a row holding its hierarchy's last key,
/// a root continued under a new name goes on from its old one's, and a hierarchy that takes in a
/// name used before goes on from that name's last key. Every backend applies these the same way.
public enum RetiredNameKeys {
    /// Each sequence row to raise to at least another's value: (`name`, `keysOf`), in order.
    public static func raises(from old: ResolvedSchema, to new: ResolvedSchema, changes: SchemaChanges) -> [(
        name: String, keysOf: String
    )] {
        let continued = Dictionary(changes.entities.map { ($0.oldName, $0.name) }, uniquingKeysWith: { a, _ in a })
        var raises: [(name: String, keysOf: String)] = []
        for entity in old.entities where continued[entity.name] != entity.name && entity.root != entity.name {
            raises.append((entity.name, entity.root))
        }
        for entity in new.entities {
            let from =
                entity.root == entity.name ? changes.renamedEntities.first { $0.new == entity.name }?.old : entity.name
            if let from, from != entity.root { raises.append((entity.root, from)) }
        }
        return raises
    }
}
