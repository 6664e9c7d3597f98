import Foundation
import ModelCore
import ModelWire
import SwiftProtobuf

/// libFuzzer's entry point: the first byte chooses what the rest is fed to — predicate text
/// (parsed, printed, parsed again: must round-trip), a URI, or a request message (decoded and
/// converted as the daemon does). Anything may fail with an error; nothing may crash or hang.
/// Built and run by scripts/fuzz.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: start + 1, count: count - 1))
    switch start[0] % 4 {
    case 0:
        let text = String(decoding: bytes, as: UTF8.self)
        if let predicate = try? PredicateParser.parse(text) {
            guard (try? PredicateParser.parse(predicate.description)) == predicate else {
                fatalError("round trip failed for \(text.debugDescription)")
            }
        }
    case 1:
        if let id = try? PersistentIdentifier(uri: String(decoding: bytes, as: UTF8.self)) {
            guard (try? PersistentIdentifier(uri: id.uriRepresentation)) == id else {
                fatalError("URI round trip failed")
            }
        }
    case 2:
        if let request = try? Modeld_V1_StoreFetchRequest(serializedBytes: bytes) {
            _ = try? FetchDescriptor(wire: request.fetch)
        }
        if let request = try? Modeld_V1_StoreAggregateRequest(serializedBytes: bytes) {
            _ = try? AggregateDescriptor(wire: request.aggregate)
        }
    default:
        if let request = try? Modeld_V1_ApplyRequest(serializedBytes: bytes) {
            _ = try? ObjectEdit.edits(wire: request.changes, in: nil)
        }
        if let request = try? Modeld_V1_ApplySchemaRequest(serializedBytes: bytes),
            let schema = try? Schema(wire: request.schema)
        {
            _ = try? ResolvedSchema(schema)
        }
    }
    return 0
}
