import Foundation
import ModelCore

/// What a save answers, in ModelCore's types: its result and, when asked for, the history
/// transaction it wrote (the `modeld.v1.SaveResult` message).
public struct SaveResponse: Sendable, Equatable {
    public var result: SaveResult
    public var transaction: HistoryTransaction?

    public init(_ result: SaveResult, transaction: HistoryTransaction? = nil) {
        self.result = result
        self.transaction = transaction
    }

    /// The message.
    public var wire: Modeld_V1_SaveResult {
        Modeld_V1_SaveResult(result, transaction: transaction)
    }

    /// The message's bytes, its map of temporary to permanent URIs written by hand: building
    /// the message first made two strings per inserted object and a map of them, and
    /// SwiftProtobuf then wrote the map (about half a second for 100,000 objects).
    public func serializedBytes() throws -> [UInt8] {
        var writer = ProtobufWriter()
        for (temporary, permanent) in result.remappedIdentifiers {
            writer.message(1) { entry in
                entry.uri(1, temporary)
                entry.uri(2, permanent)
            }
        }
        if let token = result.token {
            writer.tag(2, 0)
            writer.varint(UInt64(bitPattern: token.rawValue))
        }
        guard let transaction else { return writer.bytes }
        // The transaction's fields (3 and 4) follow as SwiftProtobuf writes them: a message's
        // bytes followed by another's read as the two merged.
        let rest: [UInt8] = try Modeld_V1_SaveResult(SaveResult(), transaction: transaction).serializedBytes()
        return writer.bytes + rest
    }
}
