import FramedTransport
import ModelCore
import ModelWire

extension QueryServiceHandler {
    /// `Apply` of insert runs alone, the usual save, taken on the event loop that read it and
    /// answered without a task (``DirectMethods/DeferredHandler``): the save is queued for the
    /// store's writer, and its group's commit answers the call, whose response is made on the
    /// event loop again. A task per save cost the daemon about a tenth of a save's instructions
    /// (its allocator's slabs, its jobs and continuations). The same checks in the same order,
    /// the same errors and the same answer as ``apply(_:)``; a cancelled call gives its save up
    /// as cancelling that one's task does. False, having done nothing, for any other request, a
    /// request that asks for its transaction, or runs that way does not save (``apply(_:)``
    /// then runs it).
    func applyDeferred(serialized bytes: [UInt8], caller: PeerCredentials?, answer: DeferredAnswer) throws -> Bool {
        guard let request = ApplyRequestFields(serialized: bytes), !request.returnTransaction,
            let runs = request.insertRuns
        else { return false }
        return try core.rpc.handleDeferred(core.rpc.answeredAtOnce.apply, caller: caller, answer: answer) { respond in
            let store = try core.store(request.store, for: .write)
            // Read before anything is saved, as the usual way reads it.
            _ = try UniquenessPolicy(wire: request.uniquenessPolicy)
            let core = core, answerRuns = request.answerRuns
            let giveUp: (@Sendable () -> Void)?
            do {
                giveUp = try store.container.submitInsertRuns(
                    runs, author: request.author.isEmpty ? nil : request.author
                ) { result in
                    respond {
                        var response = core.announced(try result.get(), store: store)
                        response.answersRuns = answerRuns
                        // The last answer's URI prefix, taken out rather than written under the
                        // lock, which other connections' saves take too; put back when it changed.
                        let kept = store.lastAnsweredURIPrefix.withLock { $0 }
                        var prefix = kept
                        let bytes = try response.serializedBytes(uriPrefix: &prefix)
                        if prefix?.bytes != kept?.bytes { store.lastAnsweredURIPrefix.withLock { $0 = prefix } }
                        return bytes
                    }
                }
            } catch let error as ModelError where error.namesWhatTheSchemaLacks {
                // Nothing was queued: the usual way asks whether another process migrated the store.
                return false
            }
            guard let giveUp else { return false }
            answer.onCancel(giveUp)
            return true
        }
    }
}
