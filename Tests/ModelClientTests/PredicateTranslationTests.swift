import Foundation
import ModelClient
import Testing

/// Every `#Predicate` construct modeld translates, each run in the store against real data and
/// checked against Foundation's own evaluation of the same predicate over the same objects.
@Suite struct PredicateTranslationTests {
    @Test(arguments: Backend.allCases)
    func comparisonsAndLogic(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            try await world.check(#Predicate { $0.name == "hammer" })
            try await world.check(#Predicate { $0.name != "hammer" })
            try await world.check(#Predicate { $0.price > 12.5 })
            try await world.check(#Predicate { $0.price >= 12.5 })
            try await world.check(#Predicate { $0.count < 3 })
            try await world.check(#Predicate { $0.count <= 3 })
            try await world.check(#Predicate { 3 < $0.count })
            try await world.check(#Predicate { $0.price > 10 && $0.isActive })
            try await world.check(#Predicate { $0.count == 0 || $0.count == 10 || $0.price > 200 })
            try await world.check(#Predicate { !($0.price > 10 && $0.count > 2) })
            try await world.check(#Predicate { $0.isActive })
            try await world.check(#Predicate { !$0.isActive })
            try await world.check(#Predicate { $0.isActive == false })
            let threshold = 14.0
            try await world.check(#Predicate { $0.price > threshold })
            let always = true
            try await world.check(#Predicate { always && $0.count > 2 })
        }
    }

    @Test(arguments: Backend.allCases)
    func optionalsAndNil(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            try await world.check(#Predicate { $0.rating == nil })
            try await world.check(#Predicate { $0.rating != nil })
            try await world.check(#Predicate { $0.notes == nil })
            try await world.check(#Predicate { $0.rating != nil && $0.rating! >= 3 })
            try await world.check(#Predicate { ($0.rating ?? 0) >= 3 })
            try await world.check(#Predicate { ($0.rating ?? 5) >= 4 })
            try await world.check(#Predicate { $0.rating == 4 })
            try await world.check(#Predicate { $0.rating != 4 })
            try await world.check(#Predicate { $0.notes?.contains("gizmo") == true })
            try await world.check(#Predicate { $0.notes?.starts(with: "steel") ?? false })
            try await world.check(#Predicate { $0.notes.flatMap { $0.isEmpty } == true })
            let none: Int? = nil
            try await world.check(#Predicate { $0.rating == none })
        }
    }

    @Test(arguments: Backend.allCases)
    func stringsAndMembership(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            try await world.check(#Predicate { $0.name.contains("w") })
            try await world.check(#Predicate { $0.name.starts(with: "w") })
            try await world.check(#Predicate { $0.name.isEmpty })
            try await world.check(#Predicate { !$0.name.isEmpty })
            let search = "ench"
            try await world.check(#Predicate { $0.name.contains(search) })
            let names = ["hammer", "turbo", "nothing"]
            try await world.check(#Predicate { names.contains($0.name) })
            let counts: Set<Int> = [0, 1, 2]
            try await world.check(#Predicate { counts.contains($0.count) })
            let kinds = [GadgetKind.toy, .gizmo]
            try await world.check(#Predicate { kinds.contains($0.kind) })
        }
    }

    @Test(arguments: Backend.allCases)
    func rangesAndArithmetic(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            try await world.check(#Predicate { (2.0...15.0).contains($0.price) })
            try await world.check(#Predicate { (1..<3).contains($0.count) })
            let window = 1...3
            try await world.check(#Predicate { window.contains($0.count) })
            let open = day("2026-01-01")..<day("2026-03-01")
            try await world.check(#Predicate { open.contains($0.released) })
            try await world.check(#Predicate { $0.price * 2 > 30 })
            try await world.check(#Predicate { $0.count + 1 == 4 })
            try await world.check(#Predicate { $0.price - 10 > 0 })
            try await world.check(#Predicate { $0.price / 4 > 3 })
            try await world.check(#Predicate { -$0.price < -20 })
            try await world.check(#Predicate { $0.price * 0.5 > $0.price - 10 })
        }
    }

    @Test(arguments: Backend.allCases)
    func valuesOfEveryKind(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            let toy = GadgetKind.toy, tool = GadgetKind.tool
            try await world.check(#Predicate { $0.kind == toy })
            try await world.check(#Predicate { $0.kind != tool })
            let cutoff = day("2026-01-01")
            try await world.check(#Predicate { $0.released < cutoff })
            try await world.check(#Predicate { $0.released >= cutoff && $0.price < 50 })
            let code = GadgetWorld.codes[2]
            try await world.check(#Predicate { $0.code == code })
            let link = URL(string: "https://acme.example/hammer")
            try await world.check(#Predicate { $0.link == link })
            try await world.check(#Predicate { $0.link == nil })
            let hammer = try #require(world.gadgets.first { $0.name == "hammer" }).persistentModelID
            try await world.check(#Predicate { $0.persistentModelID == hammer })
            try await world.check(#Predicate { $0.persistentModelID != hammer })
            // Models are Identifiable by their persistentModelID, as SwiftData's (seed 001).
            try await world.check(#Predicate { $0.id == hammer })
            try await world.check(#Predicate { $0.id != hammer && $0.price < 50 })
            #expect(world.gadgets.allSatisfy { $0.id == $0.persistentModelID })
        }
    }

    @Test(arguments: Backend.allCases)
    func relationshipsAndInheritance(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            try await world.check(#Predicate { $0.maker == nil })
            try await world.check(#Predicate { $0.maker != nil })
            try await world.check(#Predicate { $0.maker?.name == "acme" })
            try await world.check(#Predicate { $0.maker?.country == "DE" && $0.price < 100 })
            try await world.check(#Predicate { $0.maker != nil && $0.maker!.country == "US" })
            let acme = try #require(world.makers.first { $0.name == "acme" }).persistentModelID
            try await world.check(#Predicate { $0.maker?.persistentModelID == acme })
            try await world.check(#Predicate { $0.maker?.id == acme })
            try await world.checkPart(#Predicate { $0.gadget?.maker?.name == "bolt" })
            let tool = GadgetKind.tool
            try await world.checkPart(#Predicate { $0.gadget?.kind == tool })
            try await world.check(#Predicate { $0 is SpecialGadget })
            try await world.check(#Predicate { !($0 is SpecialGadget) && $0.maker?.name == "bolt" })
        }
    }

    @Test(arguments: Backend.allCases)
    func toManyRelationships(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            try await world.check(#Predicate { $0.parts.count >= 2 })
            try await world.check(#Predicate { $0.parts.isEmpty })
            try await world.check(#Predicate { !$0.parts.isEmpty })
            try await world.check(#Predicate { $0.parts.contains { $0.weight > 1 } })
            try await world.check(#Predicate { $0.parts.allSatisfy { $0.weight < 1 } })
            try await world.check(#Predicate { $0.parts.filter { $0.weight < 0.5 }.count >= 2 })
            try await world.check(#Predicate { !$0.parts.filter { $0.label.starts(with: "h") }.isEmpty })
            let jaw = try #require(world.parts.first { $0.label == "jaw" }).persistentModelID
            try await world.check(#Predicate { $0.parts.contains { $0.persistentModelID == jaw } })
            // The closure sees the outer object too.
            try await world.check(#Predicate { gadget in gadget.parts.contains { $0.weight * 100 > gadget.price } })
            try await world.checkMaker(#Predicate { $0.gadgets.contains { $0.price > 50 } })
            try await world.checkMaker(#Predicate { $0.gadgets.isEmpty })
            try await world.checkMaker(#Predicate { $0.gadgets.contains { $0.parts.contains { $0.weight > 2 } } })
            try await world.checkMaker(#Predicate { $0.gadgets.count == 2 && !$0.gadgets.allSatisfy { $0.isActive } })
        }
    }
}
