import Foundation
import ModelCore
import Testing

/// The differential test: the same random requests over the same random data must give the
/// same answers — or fail with the same error — in memory and on each other backend (SQLite,
/// PostgreSQL). Each implements the predicate semantics on its own (an evaluator in memory, SQL
/// compiled for SQLite and for PostgreSQL in their dialects), so every disagreement is a bug
/// in one of them.
@Suite struct DifferentialTests {
    static let caseCount = 1_500

    @Test(arguments: [UInt64(2026), 7], [BackendKind.sqlite, .postgres])
    func randomRequestsGiveTheSameAnswersOnEveryBackend(seed: UInt64, kind: BackendKind) async throws {
        try await withStore(.memory, Workshop.schema) { memory in
            try await withStore(kind, Workshop.schema) { other in
                try await compare(memory, other, seed: seed)
            }
        }
    }

    private func compare(_ memory: TestStore, _ other: TestStore, seed: UInt64) async throws {
        let data = WorkshopData(seed: seed)
        try await data.save(into: memory)
        try await data.save(into: other)
        #expect(
            try await memory.dump().objects.count == Workshop.tagCount + Workshop.boxCount + Workshop.thingCount - 4)
        let loaded = await state(of: memory)
        #expect(await state(of: other) == loaded, "the same saves left different objects")

        var onMemory = QueryGenerator(seed: seed &* 31, store: memory)
        var onOther = QueryGenerator(seed: seed &* 31, store: other)
        var answered = 0, matchedSome = 0, failed = 0, aggregates = 0, mismatches = 0
        for index in 0..<Self.caseCount {
            let a = onMemory.next(), b = onOther.next()
            let fetchA = await Outcome { try await memory.backend.fetch(a.fetch, overlay: a.overlay) }
            let fetchB = await Outcome { try await other.backend.fetch(b.fetch, overlay: b.overlay) }
            if fetchA != fetchB {
                mismatches += 1
                Issue.record(
                    """
                    case \(index) (seed \(seed), \(other.backend.location.scheme)): the backends disagree on a fetch
                    \(describe(a.fetch))\(a.overlay.map { "\n  overlay: \($0)" } ?? "")
                    \(fetchA.difference(from: fetchB))
                    """)
            }
            switch fetchA {
            case .answer(let rows): answered += 1; if !rows.isEmpty && rows != ["count 0"] { matchedSome += 1 }
            case .failure: failed += 1
            }
            if let aggregateA = a.aggregate, let aggregateB = b.aggregate {
                aggregates += 1
                let rowsA = await Outcome { try await memory.backend.aggregate(aggregateA, overlay: a.overlay) }
                let rowsB = await Outcome { try await other.backend.aggregate(aggregateB, overlay: b.overlay) }
                if rowsA != rowsB {
                    mismatches += 1
                    Issue.record(
                        """
                        case \(index) (seed \(seed), \(other.backend.location.scheme)): the backends disagree on an aggregate
                        \(aggregateA)
                        \(rowsA.difference(from: rowsB))
                        """)
                }
            }
            if mismatches >= 10 { break } // enough to go on; the rest would bury them
        }
        #expect(mismatches == 0)
        // Requests over pending changes wrote nothing.
        #expect(await state(of: memory) == loaded)
        #expect(await state(of: other) == loaded)
        // The generator must exercise what it claims: most requests run, many match something,
        // and every kind of comparison was generated many times.
        #expect(
            answered >= Self.caseCount * 7 / 10, "only \(answered) of \(Self.caseCount) requests ran; \(failed) failed")
        #expect(matchedSome >= answered / 3, "only \(matchedSome) of \(answered) requests matched anything")
        #expect(aggregates >= Self.caseCount / 5)
        for kind in [
            "scalar", "nil", "paths", "list", "arithmetic", "quantified", "collection", "subquery", "entity", "object",
            "overlay",
        ] {
            #expect(
                onMemory.tally[kind, default: 0] >= 50, "only \(onMemory.tally[kind, default: 0]) \(kind) comparisons")
        }
    }

    /// Every object of the store, as lines without the store's UUID.
    private func state(of store: TestStore) async -> Outcome {
        await Outcome {
            var objects: [ObjectSnapshot] = []
            for root in ["Thing", "Box", "Tag"] {
                objects += try await store.backend.fetch(FetchDescriptor(entityName: root)).objects
            }
            return .objects(objects, prefetched: [])
        }
    }

    private func describe(_ fetch: FetchDescriptor) -> String {
        var text = "  \(fetch.entityName) WHERE \(fetch.predicate.map { "\($0)" } ?? "-")"
        text +=
            "\n  sort \(fetch.sortBy.map(\.description)) offset \(fetch.offset) limit \(fetch.limit.map(String.init) ?? "-")"
        text += " subentities \(fetch.includesSubentities) result \(fetch.resultType)"
        if let properties = fetch.propertiesToFetch { text += " properties \(properties)" }
        if !fetch.relationshipKeyPathsForPrefetching.isEmpty {
            text += " prefetch \(fetch.relationshipKeyPathsForPrefetching)"
        }
        return text
    }
}

/// What a request gave, without the store's UUID: lines of text for an answer, or the error's
/// code and message.
enum Outcome: Equatable, CustomStringConvertible {
    case answer([String])
    case failure(String)

    init(_ body: () async throws -> FetchResult) async {
        do {
            switch try await body() {
            case .objects(let objects, let prefetched):
                self = .answer(objects.map(Self.line) + prefetched.map { "prefetched " + Self.line($0) })
            case .identifiers(let ids):
                self = .answer(ids.map(Self.name))
            case .count(let count):
                self = .answer(["count \(count)"])
            }
        } catch {
            self = .failure(Self.text(error))
        }
    }

    init(_ body: () async throws -> [AggregateRow]) async {
        do {
            self = .answer(
                try await body().map { row in
                    row.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.exact($0.value))" }.joined(separator: " ")
                })
        } catch {
            self = .failure(Self.text(error))
        }
    }

    var description: String {
        switch self {
        case .answer(let lines): "\(lines.count) rows\n    " + lines.joined(separator: "\n    ")
        case .failure(let text): "error \(text)"
        }
    }

    /// What differs between the memory backend's outcome (self) and another's: the first line
    /// where they part and the lines only one of them has, not two full dumps.
    func difference(from other: Outcome) -> String {
        guard case .answer(let mine) = self, case .answer(let theirs) = other else {
            return "memory: \(self)\nother: \(other)"
        }
        let first =
            (0..<min(mine.count, theirs.count)).first { mine[$0] != theirs[$0] } ?? min(mine.count, theirs.count)
        let onlyMemory = mine.filter { !theirs.contains($0) }, onlyOther = theirs.filter { !mine.contains($0) }
        var text = "memory has \(mine.count) rows, the other \(theirs.count); they part at row \(first)"
        if first < mine.count { text += "\n  memory row \(first): \(mine[first])" }
        if first < theirs.count { text += "\n  other row \(first): \(theirs[first])" }
        for line in onlyMemory.prefix(5) { text += "\n  only memory: \(line)" }
        for line in onlyOther.prefix(5) { text += "\n  only the other: \(line)" }
        return text
    }

    private static func text(_ error: any Error) -> String {
        (error as? ModelError).map { "\($0.code): \($0.message)" } ?? "\(type(of: error)): \(error)"
    }

    /// `Gadget/p3` or `Thing/t<uuid>`: an identifier without its store.
    static func name(_ id: PersistentIdentifier) -> String {
        switch id.key {
        case .permanent(let key): "\(id.entityName)/p\(key)"
        case .temporary(let uuid): "\(id.entityName)/t\(uuid)"
        }
    }

    /// A value's exact text: decimals with their digits as stored, doubles to the last bit.
    private static func exact(_ value: Value) -> String {
        switch value {
        case .double(let d): "double(\(d.bitPattern == (-0.0).bitPattern ? "-0.0" : "\(d)"))"
        default: "\(value)"
        }
    }

    private static func line(_ object: ObjectSnapshot) -> String {
        let attributes = object.attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\(exact($0.value))" }
        let relationships = object.relationships.sorted { $0.key < $1.key }.map { entry in
            switch entry.value {
            case .toOne(let id): "\(entry.key)->\(id.map(name) ?? "nil")"
            case .toMany(let ids): "\(entry.key)->[\(ids.map(name).joined(separator: ","))]"
            }
        }
        return "\(name(object.id)) v\(object.version) " + (attributes + relationships).joined(separator: " ")
    }
}
