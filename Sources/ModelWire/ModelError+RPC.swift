import Foundation
import GRPCCore
import ModelCore

/// The one place where modeld's errors meet gRPC's status codes (DESIGN.md's table). The daemon
/// sends a `ModelError` as its status code and message, plus two metadata entries clients use to
/// rebuild it exactly: `modeld-error-code` (the `ModelError.Code`) and `modeld-error-context-bin`
/// (its context as a UTF-8 JSON object).
extension ModelError: RPCErrorConvertible {
    /// The metadata key carrying the `ModelError.Code`.
    public static let codeMetadataKey = "modeld-error-code"
    /// The binary metadata key carrying the context as JSON.
    public static let contextMetadataKey = "modeld-error-context-bin"

    /// The gRPC status code for each class of failure.
    public static func statusCode(for code: Code) -> RPCError.Code {
        switch code {
        case .invalidArgument, .unknownEntity, .unknownProperty, .typeMismatch, .invalidPredicate, .invalidIdentifier,
            .invalidSchema, .validationFailed:
            .invalidArgument
        case .notFound: .notFound
        case .uniqueConstraint: .alreadyExists
        case .deleteDenied, .schemaMismatch, .closed, .inUse, .historyTokenExpired: .failedPrecondition
        case .conflict: .aborted
        case .resourceExhausted: .resourceExhausted
        case .storageFailure: .internalError
        case .unavailable: .unavailable
        case .cancelled: .cancelled
        case .deadlineExceeded: .deadlineExceeded
        case .permissionDenied: .permissionDenied
        }
    }

    public var rpcErrorCode: RPCError.Code { Self.statusCode(for: code) }
    /// The message, cut to 4,000 characters: it travels in a trailer, which HTTP/2 limits.
    public var rpcErrorMessage: String { message.count > 4_000 ? String(message.prefix(3_997)) + "..." : message }

    public var rpcErrorMetadata: Metadata {
        var metadata = Metadata()
        metadata.addString(code.rawValue, forKey: Self.codeMetadataKey)
        // Each value cut to 1,000 characters, so that trailers stay well under HTTP/2's limits.
        // Always sent, `{}` for an error without context, so that a client finds both entries
        // on every error (docs/daemon.md).
        let bounded = context.mapValues { $0.count > 1_000 ? String($0.prefix(997)) + "..." : $0 }
        let json = bounded.isEmpty ? nil : try? JSONSerialization.data(withJSONObject: bounded, options: [.sortedKeys])
        metadata.addBinary(json.map { Array($0) } ?? Array("{}".utf8), forKey: Self.contextMetadataKey)
        return metadata
    }

    /// Rebuilds the `ModelError` the daemon sent; for other errors, a `ModelError` of the closest
    /// code with the status message.
    public init(_ error: RPCError) {
        let codeText = error.metadata[stringValues: Self.codeMetadataKey].first(where: { _ in true })
        let code = codeText.flatMap(Code.init(rawValue:)) ?? Self.code(for: error.code)
        var context: [String: String] = [:]
        if let bytes = error.metadata[binaryValues: Self.contextMetadataKey].first(where: { _ in true }),
            let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: String]
        {
            context = object
        }
        self.init(code, error.message, context: context)
    }

    /// The `ModelError.Code` closest to a status code sent by something other than modeld.
    static func code(for status: RPCError.Code) -> Code {
        switch status {
        case .invalidArgument, .outOfRange: .invalidArgument
        case .notFound: .notFound
        case .alreadyExists: .uniqueConstraint
        case .failedPrecondition: .closed
        case .aborted: .conflict
        case .resourceExhausted: .resourceExhausted
        case .unavailable: .unavailable
        case .cancelled: .cancelled
        case .deadlineExceeded: .deadlineExceeded
        case .permissionDenied, .unauthenticated: .permissionDenied
        default: .storageFailure
        }
    }
}
