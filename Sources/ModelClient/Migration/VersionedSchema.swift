import ModelCore

/// A store's schema: its entities, attributes, relationships, indexes and constraints.
public typealias Schema = ModelCore.Schema

extension ModelCore.Schema {
    /// A version of an app's models, as SwiftData's `Schema.Version`: `Schema.Version(2, 0, 0)`.
    /// It names a ``VersionedSchema``; what a store holds is recognised by the models' schema
    /// (its version hash), not by this number.
    public struct Version: Hashable, Comparable, Sendable, CustomStringConvertible {
        public var major: Int
        public var minor: Int
        public var patch: Int

        public init(_ major: Int, _ minor: Int, _ patch: Int) {
            self.major = major
            self.minor = minor
            self.patch = patch
        }

        public static func < (a: Version, b: Version) -> Bool {
            (a.major, a.minor, a.patch) < (b.major, b.minor, b.patch)
        }

        public var description: String { "\(major).\(minor).\(patch)" }
    }
}

/// One version of an app's models, as SwiftData's `VersionedSchema`: usually an enum holding
/// that version's `@Model` classes, nested so that every version can name its classes alike
/// (an entity's name is its class's name).
public protocol VersionedSchema {
    static var versionIdentifier: Schema.Version { get }
    /// The version's model classes (related models and superclasses are found from them).
    static var models: [any PersistentModel.Type] { get }
}

/// The versions an app's models went through, and how a store moves from each to the next, as
/// SwiftData's `SchemaMigrationPlan`. Give it to ``ModelContainer/init(for:migrationPlan:configurations:)``:
/// a store at one of ``schemas`` moves through the ``stages`` that follow, all of them in one
/// unit (a staged migration: all or nothing, on a crash too), to the container's models.
public protocol SchemaMigrationPlan {
    /// Every version, oldest first.
    static var schemas: [any VersionedSchema.Type] { get }
    /// How a store moves from one version to another.
    static var stages: [MigrationStage] { get }
}

/// One step of a ``SchemaMigrationPlan``, as SwiftData's `MigrationStage`.
///
/// - `lightweight`: the store migrates by inference (docs/migrations.md). Being in a plan is
///   consent: removals that delete stored values are carried out.
/// - `custom`: `willMigrate` runs with a context of the old version's models, then the store
///   migrates by inference, then `didMigrate` runs with a context of the new version's models.
///   Changes a closure leaves unsaved are saved when it returns. Unlike SwiftData's, the
///   closures are `async`, as every store operation of a ``ModelContext`` is.
public enum MigrationStage: Sendable {
    case lightweight(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type)
    case custom(
        fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type,
        willMigrate: (@Sendable (ModelContext) async throws -> Void)?,
        didMigrate: (@Sendable (ModelContext) async throws -> Void)?)

    var fromVersion: any VersionedSchema.Type {
        switch self {
        case .lightweight(let from, _), .custom(let from, _, _, _): from
        }
    }

    var toVersion: any VersionedSchema.Type {
        switch self {
        case .lightweight(_, let to), .custom(_, let to, _, _): to
        }
    }
}
