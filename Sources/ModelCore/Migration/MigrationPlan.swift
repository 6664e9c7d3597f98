/// What an inferred migration does to a store's data, step by step with the objects each step
/// touches, and what it refuses: ModelStorage's `MigrationPlanner` works it out from ``SchemaChanges`` and the
/// store's data. A dry run returns it; a migration carries it out only when nothing is refused.
public struct MigrationPlan: Hashable, Sendable {
    /// One change to the store.
    public struct Step: Hashable, Sendable {
        public enum Kind: String, Hashable, Sendable, CaseIterable {
            case addEntity, removeEntity, renameEntity
            case addAttribute, removeAttribute, renameAttribute, requireAttribute, relaxAttribute, changeDefault
            case addIndex, removeIndex, addUniqueConstraint, removeUniqueConstraint
            case addRelationship, removeRelationship, changeRelationship
        }

        public let kind: Kind
        /// The entity, by its new name (its old one for a removed entity).
        public let entity: String
        /// What is done, in words: `add budget (double?): existing objects get nil`.
        public let detail: String
        /// How many objects the step concerns: of the entity (with its subentities), or for a
        /// fill, the ones whose value it sets; for a removal, the ones that lose something.
        public let objects: Int
        /// Whether stored values go (a removal of something that holds data).
        public let losesData: Bool

        public init(kind: Kind, entity: String, detail: String, objects: Int, losesData: Bool = false) {
            self.kind = kind
            self.entity = entity
            self.detail = detail
            self.objects = objects
            self.losesData = losesData
        }
    }

    /// The store's schema version now, and the one migrated to.
    public let fromVersion: String
    public let toVersion: String
    public var steps: [Step]
    /// Why the migration cannot be made as asked, each naming what to do instead; empty when it
    /// can. A step that loses data without `allowDataLoss` is one of these.
    public var refusals: [String]

    public init(fromVersion: String, toVersion: String, steps: [Step] = [], refusals: [String] = []) {
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.steps = steps
        self.refusals = refusals
    }

    /// Whether the migration can be carried out.
    public var isAllowed: Bool { refusals.isEmpty }

    /// Whether the two versions are the same: nothing to do.
    public var isEmpty: Bool { fromVersion == toVersion && steps.isEmpty }

    /// The steps that delete stored values.
    public var dataLoss: [Step] { steps.filter(\.losesData) }

    /// The error a refused migration answers with: every refusal, one a line.
    public var refusalError: ModelError {
        ModelError(
            .schemaMismatch,
            "the store cannot migrate to schema \(toVersion.prefix(12)) by itself:\n"
                + refusals.map { "- \($0)" }.joined(separator: "\n"),
            context: [
                "storeVersion": fromVersion, "requestedVersion": toVersion,
                "refusals": refusals.joined(separator: "\n"),
            ])
    }
}

/// How a migration runs.
public struct MigrationOptions: Hashable, Sendable {
    /// Plan only: nothing is written, and a refused plan is returned rather than thrown.
    public var dryRun: Bool
    /// Carry out steps that delete stored values (removing an entity or attribute with data).
    public var allowDataLoss: Bool
    /// The author of the schema-change transaction in history.
    public var author: String?

    public init(dryRun: Bool = false, allowDataLoss: Bool = false, author: String? = nil) {
        self.dryRun = dryRun
        self.allowDataLoss = allowDataLoss
        self.author = author
    }
}
