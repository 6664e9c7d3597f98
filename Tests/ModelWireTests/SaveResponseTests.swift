import Foundation
import ModelCore
import ModelFixtures
import ModelWire
import SwiftProtobuf
import Testing

/// A save's answer written by hand reads, through SwiftProtobuf, as the message built from it.
@Suite struct SaveResponseTests {
    static let store = UUID()

    static func transaction(_ random: inout SeededRandom, changes: Int) -> HistoryTransaction {
        HistoryTransaction(
            token: HistoryToken(Int64(random.int(1...1_000_000))),
            timestamp: Timestamp(microsecondsSince1970: 1_800_000_000_000_000),
            author: random.chance(0.5) ? nil : "importer",
            changes: (0..<changes).map { index in
                HistoryChange(
                    kind: random.pick([.insert, .update, .delete]),
                    id: PersistentIdentifier(
                        storeIdentifier: store, entityName: "Trip", key: .permanent(Int64(index + 1))),
                    changedProperties: random.chance(0.5) ? [] : ["name"],
                    tombstone: random.chance(0.8) ? [:] : ["name": random.pick(WireConversionTests.values)])
            })
    }

    /// Results with no remapped objects or hundreds, any token (none, zero, negative, large), with
    /// and without their transaction.
    @Test(arguments: 1...30)
    func handWrittenBytesReadAsTheMessage(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var remapped: [PersistentIdentifier: PersistentIdentifier] = [:]
        for index in 0..<random.pick([0, 1, 2, random.int(3...400)]) {
            remapped[.temporary(storeIdentifier: Self.store, entityName: random.pick(["Trip", "Stop", "Stop_2"]))] =
                PersistentIdentifier(
                    storeIdentifier: Self.store, entityName: "Trip",
                    key: .permanent(Int64(index + 1) * Int64(random.int(1...1_000_000))))
        }
        let token: HistoryToken? =
            random.chance(0.2)
            ? nil : HistoryToken(random.pick([0, -1, 1, Int64.max, Int64(random.int(2...1_000_000))]))
        let transaction = random.chance(0.3) ? Self.transaction(&random, changes: random.int(0...20)) : nil
        // Versions: the inserted objects' 1s, which are not sent, and some updated objects'.
        var versions = Dictionary(uniqueKeysWithValues: remapped.values.map { ($0, Int64(1)) })
        var updated: [PersistentIdentifier: Int64] = [:]
        for index in 0..<random.pick([0, 1, random.int(2...50)]) {
            let id = PersistentIdentifier(
                storeIdentifier: Self.store, entityName: "Stop", key: .permanent(Int64(index + 1)))
            updated[id] = random.pick([2, 3, Int64.max, Int64(random.int(4...1_000_000))])
        }
        versions.merge(updated) { _, new in new }
        let response = SaveResponse(
            SaveResult(remappedIdentifiers: remapped, versions: versions, token: token), transaction: transaction)

        let parsed = try Modeld_V1_SaveResult(serializedBytes: response.serializedBytes())
        #expect(parsed == response.wire)
        #expect(parsed.remapped.count == remapped.count)
        #expect(parsed.hasToken == (token != nil))

        // The client reads the bytes by hand into what the message says.
        let fields = try SaveResultFields(
            serialized: response.serializedBytes(), in: random.chance(0.5) ? Self.store : nil)
        #expect(fields.remappedIdentifiers == remapped)
        #expect(fields.versions == updated)
        #expect(parsed.versions.count == updated.count)
        #expect(fields.token == token)
        #expect(try fields.transaction == (parsed.hasTransaction ? HistoryTransaction(wire: parsed.transaction) : nil))
        #expect(fields.transactionIsTruncated == parsed.transactionTruncated)
    }

    /// A result naming another store's object, read for a store, fails as the wire conversion
    /// fails; so do damaged bytes, where SwiftProtobuf refuses them.
    @Test func resultsThatDoNotReadFailAsTheMessageFails() throws {
        let other = UUID()
        let response = SaveResponse(
            SaveResult(
                remappedIdentifiers: [
                    .temporary(storeIdentifier: other, entityName: "Trip"): PersistentIdentifier(
                        storeIdentifier: other, entityName: "Trip", key: .permanent(1))
                ], token: HistoryToken(3)))
        let bytes = try response.serializedBytes()
        let ours = try #require(throws: ModelError.self) { try SaveResultFields(serialized: bytes, in: Self.store) }
        let message = try Modeld_V1_SaveResult(serializedBytes: bytes)
        let theirs = try #require(throws: ModelError.self) {
            try PersistentIdentifier(wire: try #require(message.remapped.keys.first), in: Self.store)
        }
        #expect(ours == theirs)
        #expect(try SaveResultFields(serialized: bytes, in: other).remappedIdentifiers.count == 1)
        for length in 0..<bytes.count {
            let prefix = Array(bytes.prefix(length))
            if (try? Modeld_V1_SaveResult(serializedBytes: prefix)) == nil {
                #expect(throws: ModelError.self, "prefix of \(length) bytes") {
                    try SaveResultFields(serialized: prefix, in: nil)
                }
            }
        }
    }

    /// A transaction with more changes than a response carries is cut, and says so, as the
    /// message says it.
    @Test func aTransactionOverTheLimitIsCutAsTheMessageCutsIt() throws {
        var random = SeededRandom(seed: 5)
        let limit = Modeld_V1_SaveResult.transactionChangeLimit
        let response = SaveResponse(
            SaveResult(token: HistoryToken(9)), transaction: Self.transaction(&random, changes: limit + 1))
        let parsed = try Modeld_V1_SaveResult(serializedBytes: response.serializedBytes())
        #expect(parsed == response.wire)
        #expect(parsed.transactionTruncated && parsed.transaction.changes.count == limit)
    }

    /// Objects saved from runs are answered as a `remapped` entry per object, each under a
    /// temporary URI made up for it, or, when the request asked (`answer_runs`), as runs: the
    /// same bytes SwiftProtobuf reads as the message, and the client reads back the runs (and
    /// makes up its own temporary identifiers for them only when asked for the remaps).
    @Test(arguments: [false, true])
    func runsAreAnsweredAsRunsWhenAsked(answersRuns: Bool) throws {
        var result = SaveResult(
            remappedIdentifiers: [
                .temporary(storeIdentifier: Self.store, entityName: "Stop"): PersistentIdentifier(
                    storeIdentifier: Self.store, entityName: "Stop", key: .permanent(7))
            ], token: HistoryToken(12))
        result.insertedRuns = [
            InsertedRun(storeIdentifier: Self.store, entityName: "Trip", firstKey: 1, count: 300),
            InsertedRun(storeIdentifier: Self.store, entityName: "Stop", firstKey: 8, count: 1),
            InsertedRun(storeIdentifier: Self.store, entityName: "Trip", firstKey: 301, count: 2),
        ]
        var response = SaveResponse(result)
        response.answersRuns = answersRuns
        let bytes = try response.serializedBytes()
        let parsed = try Modeld_V1_SaveResult(serializedBytes: bytes)
        #expect(parsed == response.wire)
        if answersRuns {
            #expect(parsed.remapped.count == 1)
            #expect(
                parsed.insertedRuns.map { "\($0.firstUri) \($0.count)" } == [
                    "modeld://\(Self.store.uuidString.lowercased())/Trip/p1 300",
                    "modeld://\(Self.store.uuidString.lowercased())/Stop/p8 1",
                    "modeld://\(Self.store.uuidString.lowercased())/Trip/p301 2",
                ])
        } else {
            #expect(parsed.remapped.count == 304 && parsed.insertedRuns.isEmpty)
        }

        let fields = try SaveResultFields(serialized: bytes, in: Self.store)
        #expect(
            fields.insertedRuns.map { "\($0.entityName) \($0.firstKey) \($0.count)" }
                == (answersRuns
                    ? [
                        "Trip 1 300", "Stop 8 1", "Trip 301 2",
                    ] : []))
        #expect(fields.remappedIdentifiers.count == (answersRuns ? 1 : 304))
        // Every permanent identifier, once, whichever way it came.
        var permanent = Set(fields.remappedIdentifiers.values)
        for run in fields.insertedRuns { run.identifiers { permanent.insert($1) } }
        #expect(permanent.count == 304)
        #expect(
            permanent.contains(
                PersistentIdentifier(storeIdentifier: Self.store, entityName: "Trip", key: .permanent(302))))

        // A run from a URI of another store, read for this one, fails as a remapped one does.
        var foreign = SaveResult()
        foreign.insertedRuns = [InsertedRun(storeIdentifier: UUID(), entityName: "Trip", firstKey: 1, count: 2)]
        var foreignResponse = SaveResponse(foreign)
        foreignResponse.answersRuns = true
        #expect(throws: ModelError.self) {
            try SaveResultFields(serialized: try foreignResponse.serializedBytes(), in: Self.store)
        }
    }

    /// Answers written one after another from one kept URI prefix (as the daemon keeps its
    /// store's last), of saves in two stores and two entities, runs and remapped entries: each
    /// the bytes written from nothing, and the prefix left is the last URI's store and entity.
    @Test func answersWrittenFromAKeptPrefixAreTheSameBytes() throws {
        let other = UUID()
        var kept: PersistentIdentifier.URIPrefix?
        for (store, entity, answersRuns) in [
            (Self.store, "Trip", true), (Self.store, "Trip", true), (Self.store, "Stop", false),
            (other, "Stop", true), (Self.store, "Stop", true), (Self.store, "Trip", false),
        ] {
            var result = SaveResult(token: HistoryToken(5))
            result.insertedRuns = [InsertedRun(storeIdentifier: store, entityName: entity, firstKey: 41, count: 1)]
            var response = SaveResponse(result)
            response.answersRuns = answersRuns
            let before = kept
            let bytes = try response.serializedBytes(uriPrefix: &kept)
            #expect(
                bytes == (try response.serializedBytes()),
                "after \(before.map { String(decoding: $0.bytes, as: UTF8.self) } ?? "none")")
            #expect(
                kept.map { String(decoding: $0.bytes, as: UTF8.self) }
                    == "modeld://\(store.uuidString.lowercased())/\(entity)/")
            let fields = try SaveResultFields(serialized: bytes, in: store)
            let answered =
                answersRuns ? fields.insertedRuns.first?.firstIdentifier : fields.remappedIdentifiers.values.first
            #expect(answered == PersistentIdentifier(storeIdentifier: store, entityName: entity, key: .permanent(41)))
        }
    }
}
