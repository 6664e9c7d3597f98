@_exported import Foundation
@_exported import Observation
import ModelCore

// ModelClient is what a Swift app imports to work the way SwiftData does. It re-exports
// Foundation (for #Predicate and SortDescriptor) and Observation (models are Observable), and
// names the few ModelCore types its API uses, so an app needs no other import.

/// An object's identity, the same in every process that opens the store: Sendable, Codable,
/// and convertible to and from its URI (`modeld://<store-uuid>/Trip/p42`).
public typealias PersistentIdentifier = ModelCore.PersistentIdentifier
/// A position in a store's history: transactions after it are what changed since.
public typealias DefaultHistoryToken = ModelCore.HistoryToken
/// Every error ModelClient throws: a code (which is also the daemon's gRPC status) and a message.
public typealias ModelError = ModelCore.ModelError
/// What deleting an object does to the objects a relationship holds.
public typealias DeleteRule = ModelCore.DeleteRule
/// How a save resolves conflicts with changes saved since the context read the objects.
public typealias MergePolicy = ModelCore.MergePolicy
/// What a save does with an insert that repeats a stored object's `#Unique` values.
public typealias UniquenessPolicy = ModelCore.UniquenessPolicy
