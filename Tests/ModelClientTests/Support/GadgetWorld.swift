import Foundation
import ModelClient
import Testing

/// The gadgets, makers and parts the predicate tests run against, saved to a store and fetched
/// back in a fresh context. `check` runs a predicate in the store and, as the oracle, Foundation's
/// own `Predicate.evaluate` over every object in memory: the two must select the same objects.
struct GadgetWorld {
    let context: ModelContext
    let gadgets: [Gadget]
    let makers: [Maker]
    let parts: [Part]

    static let codes = (1...6).map { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)")! }

    static func make(in container: ModelContainer) async throws -> GadgetWorld {
        let setup = ModelContext(container)
        let acme = Maker(name: "acme", country: "US"), bolt = Maker(name: "bolt", country: "DE"),
            crux = Maker(name: "crux", country: "US")
        for maker in [acme, bolt, crux] { setup.insert(maker) }
        func gadget(
            _ name: String, _ notes: String?, _ price: Double, _ count: Int, _ rating: Int?, _ released: String,
            _ active: Bool,
            _ kind: GadgetKind, _ code: Int, _ link: String?, tags: [String] = [], maker: Maker?,
            parts: [(String, Double)]
        ) {
            let gadget = Gadget(
                name: name, notes: notes, price: price, count: count, rating: rating, released: day(released),
                isActive: active,
                kind: kind, code: codes[code - 1], link: link.flatMap(URL.init(string:)))
            gadget.tags = tags
            setup.insert(gadget)
            gadget.maker = maker
            gadget.parts = parts.map { Part(label: $0.0, weight: $0.1) }
        }
        gadget(
            "hammer", "steel head", 12.5, 3, 4, "2026-01-10", true, .tool, 1, "https://acme.example/hammer",
            tags: ["heavy"],
            maker: acme, parts: [("head", 1.2), ("handle", 0.4)])
        gadget("yo-yo", nil, 2.0, 10, nil, "2025-06-01", false, .toy, 2, nil, maker: acme, parts: [("string", 0.01)])
        gadget(
            "Widget", "Blue gizmo", 99.99, 0, 5, "2026-03-15", true, .gizmo, 3, "https://bolt.example/w",
            tags: ["blue", "smart"],
            maker: bolt, parts: [])
        gadget(
            "wrench", "", 15.0, 7, 2, "2024-12-31", true, .tool, 4, nil, maker: nil,
            parts: [("jaw", 0.5), ("screw", 0.05), ("grip", 0.3)])
        gadget("", "unnamed", 0.5, 1, 3, "2026-02-02", false, .toy, 5, nil, maker: bolt, parts: [])
        let turbo = SpecialGadget(name: "turbo", price: 250, count: 2, level: 3)
        setup.insert(turbo)
        turbo.maker = bolt
        turbo.parts = [Part(label: "rotor", weight: 2.5)]
        try await setup.save()

        let context = ModelContext(container)
        let makers = try await context.fetch(FetchDescriptor<Maker>())
        let gadgets = try await context.fetch(FetchDescriptor<Gadget>())
        let parts = try await context.fetch(FetchDescriptor<Part>())
        #expect(gadgets.count == 6 && makers.count == 3 && parts.count == 7)
        return GadgetWorld(context: context, gadgets: gadgets, makers: makers, parts: parts)
    }

    func check(_ predicate: Predicate<Gadget>, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await check(predicate, among: gadgets, key: { $0.name }, sourceLocation: sourceLocation)
    }

    func checkMaker(_ predicate: Predicate<Maker>, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await check(predicate, among: makers, key: { $0.name }, sourceLocation: sourceLocation)
    }

    func checkPart(_ predicate: Predicate<Part>, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await check(predicate, among: parts, key: { $0.label }, sourceLocation: sourceLocation)
    }

    /// The store selects what `evaluate` selects, and that is some of the objects but not all
    /// (so the check can tell a predicate from true or false).
    private func check<T: PersistentModel>(
        _ predicate: Predicate<T>, among all: [T], key: (T) -> String,
        sourceLocation: SourceLocation
    ) async throws {
        let expected = Set(try all.filter { try predicate.evaluate($0) }.map(key))
        #expect(
            !expected.isEmpty && expected.count < all.count,
            "the data should make this predicate select some objects but not all (it selects \(expected.sorted()))",
            sourceLocation: sourceLocation)
        let fetched = try await context.fetch(FetchDescriptor(predicate: predicate))
        #expect(Set(fetched.map(key)) == expected, sourceLocation: sourceLocation)
        #expect(fetched.count == expected.count, "no object twice", sourceLocation: sourceLocation)
        let count = try await context.fetchCount(FetchDescriptor(predicate: predicate))
        #expect(count == expected.count, sourceLocation: sourceLocation)
    }

    /// The error the store's translation gives for `predicate`, which must name the construct.
    func refusal(
        _ predicate: Predicate<Gadget>, mentions words: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let error = await modelError(
            { _ = try await context.fetch(FetchDescriptor(predicate: predicate)) }, sourceLocation: sourceLocation)
        #expect(error?.code == .invalidPredicate, sourceLocation: sourceLocation)
        for word in words {
            #expect(
                error?.message.contains(word) == true, "\(error?.message ?? "no error") should mention \(word)",
                sourceLocation: sourceLocation)
        }
    }
}
