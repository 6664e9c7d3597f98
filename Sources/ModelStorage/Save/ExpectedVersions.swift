import Foundation
import ModelCore

/// Step 1 of a save: every update or delete that names the version it expects, whose object's
/// stored version differs (or whose object is gone), is a conflict. The backend reads the
/// conflicting objects' current snapshots for ``SaveConflicts``.
public enum ExpectedVersions {
    /// A conflict: the identifier, the version the change expected, and the stored object (nil
    /// when it is gone).
    public struct Conflict: Sendable {
        public let id: PersistentIdentifier
        public let expected: Int64
        public let ref: ObjectRef?
    }

    /// The conflicts of `changes`, each identifier once, in change-set order (updates first).
    public static func conflicts(in changes: ChangeSet, reads: some SaveReads) throws -> [Conflict] {
        let expectations =
            changes.updates.map { ($0.id, $0.expectedVersion) } + changes.deletes.map { ($0.id, $0.expectedVersion) }
        var seen = Set<PersistentIdentifier>()
        var conflicts: [Conflict] = []
        for case let (id, expected?) in expectations where seen.insert(id).inserted {
            let found = try reads.existing(id)
            guard found?.object.version != expected else { continue }
            conflicts.append(Conflict(id: id, expected: expected, ref: found?.ref))
        }
        return conflicts
    }
}
