import Foundation
import ModelCore
import ModelStorage

/// Opens stores of the `memory` scheme: every `open` makes a new, empty store with a fresh UUID
/// (two opens of `memory:trips` are two different stores), and `destroy` has nothing to remove.
public struct MemoryStorageFactory: StorageBackendFactory {
    /// `memory`.
    public let scheme = "memory"

    /// A factory for `memory:` stores.
    public init() {}

    /// `memory:<name>`.
    public func location(forStoreNamed name: String, in directory: URL) -> StoreLocation? {
        StoreLocation(scheme: scheme, path: name)
    }

    /// `memory:name` or `memory://name`.
    public func location(parsing url: String) throws(ModelError) -> StoreLocation {
        let generic = try StoreLocation(url: url)
        guard generic.scheme == scheme else {
            throw ModelError(.invalidArgument, "'\(url)' is not a memory store URL; use memory:name")
        }
        return StoreLocation(
            scheme: scheme, path: generic.path.hasPrefix("//") ? String(generic.path.dropFirst(2)) : generic.path)
    }

    /// A memory store is gone with its process.
    public var isPersistent: Bool { false }

    /// A new, empty store at `location`.
    public func open(_ location: StoreLocation) async throws -> any StorageBackend {
        guard location.scheme == scheme else {
            throw ModelError(.invalidArgument, "\(location) is not a memory store URL; use memory:name")
        }
        return MemoryStore(location: location)
    }

    /// Does nothing: a memory store's data goes away with the store.
    public func destroy(_ location: StoreLocation) async throws {}
}
