import ModelCore

extension MergePolicy {
    /// Reads a merge policy from the wire.
    public init(wire: Modeld_V1_MergePolicy) throws(ModelError) {
        switch wire {
        case .error: self = .error
        case .objectTrump: self = .objectTrump
        case .storeTrump: self = .storeTrump
        case .overwrite: self = .overwrite
        case .rollback: self = .rollback
        case .UNRECOGNIZED(let number):
            throw ModelError(
                .invalidArgument,
                "unknown merge policy \(number); use error, objectTrump, storeTrump, overwrite or rollback")
        }
    }

    /// The wire form of this policy.
    public var wire: Modeld_V1_MergePolicy {
        switch self {
        case .error: .error
        case .objectTrump: .objectTrump
        case .storeTrump: .storeTrump
        case .overwrite: .overwrite
        case .rollback: .rollback
        }
    }
}

extension UniquenessPolicy {
    /// Reads a uniqueness policy from the wire.
    public init(wire: Modeld_V1_UniquenessPolicy) throws(ModelError) {
        switch wire {
        case .error: self = .error
        case .upsert: self = .upsert
        case .UNRECOGNIZED(let number):
            throw ModelError(.invalidArgument, "unknown uniqueness policy \(number); use error or upsert")
        }
    }

    /// The wire form of this policy.
    public var wire: Modeld_V1_UniquenessPolicy {
        switch self {
        case .error: .error
        case .upsert: .upsert
        }
    }
}
