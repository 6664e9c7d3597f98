extension Schema {
    /// The differences from `other` to this schema, one line each, in words a person can read:
    /// `+ entity Note`, `- Trip.name`, `~ Trip.endDate: type date -> string`.
    public func differences(from other: Schema) -> [String] {
        var lines: [String] = []
        let old = Dictionary(other.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let new = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for name in old.keys.sorted() where new[name] == nil { lines.append("- entity \(name)") }
        for name in new.keys.sorted() where old[name] == nil { lines.append("+ entity \(name)") }
        for name in new.keys.sorted() {
            guard let before = old[name], let after = new[name], before != after else { continue }
            if before.superentity != after.superentity {
                lines.append("~ \(name): superentity \(before.superentity ?? "none") -> \(after.superentity ?? "none")")
            }
            if before.isAbstract != after.isAbstract {
                lines.append("~ \(name): abstract \(before.isAbstract) -> \(after.isAbstract)")
            }
            lines += Self.compare(before.attributes, after.attributes, in: name, key: \.name, describe: Self.describe)
            lines += Self.compare(
                before.relationships, after.relationships, in: name, key: \.name, describe: Self.describe)
            if Set(before.uniqueConstraints) != Set(after.uniqueConstraints) {
                lines.append("~ \(name): unique constraints \(before.uniqueConstraints) -> \(after.uniqueConstraints)")
            }
            if Set(before.indexes) != Set(after.indexes) {
                lines.append("~ \(name): indexes \(before.indexes) -> \(after.indexes)")
            }
        }
        return lines
    }

    private static func compare<T: Equatable>(
        _ before: [T], _ after: [T], in entity: String,
        key: KeyPath<T, String>, describe: (T) -> String
    ) -> [String] {
        var lines: [String] = []
        let old = Dictionary(before.map { ($0[keyPath: key], $0) }, uniquingKeysWith: { a, _ in a })
        let new = Dictionary(after.map { ($0[keyPath: key], $0) }, uniquingKeysWith: { a, _ in a })
        for name in old.keys.sorted() where new[name] == nil { lines.append("- \(entity).\(name)") }
        for name in new.keys.sorted() {
            guard let b = old[name] else { lines.append("+ \(entity).\(name): \(describe(new[name]!))"); continue }
            if let a = new[name], a != b { lines.append("~ \(entity).\(name): \(describe(b)) -> \(describe(a))") }
        }
        return lines
    }

    private static func describe(_ a: AttributeDescription) -> String {
        var parts = [a.type.rawValue + (a.isOptional ? "?" : "")]
        if let d = a.defaultValue, let text = d.textForm { parts.append("default \(text)") }
        if a.preserveValueOnDeletion { parts.append("preserved on deletion") }
        return parts.joined(separator: ", ")
    }

    private static func describe(_ r: RelationshipDescription) -> String {
        var parts = ["\(r.isToMany ? "to-many" : "to-one") \(r.destination)"]
        if let inverse = r.inverse { parts.append("inverse \(inverse)") }
        parts.append("delete rule \(r.deleteRule.rawValue)")
        if !r.isToMany && !r.isOptional { parts.append("required") }
        if let min = r.minCount { parts.append("min \(min)") }
        if let max = r.maxCount { parts.append("max \(max)") }
        return parts.joined(separator: ", ")
    }
}
