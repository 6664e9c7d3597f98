import Foundation
import ModelClient
import Testing

/// What can't be translated is an error naming the construct — never a filter run in memory —
/// and sorting happens in the store by stored properties only.
@Suite struct PredicateRefusalTests {
    @Test(arguments: Backend.allCases)
    func untranslatableConstructsAreNamed(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            await world.refusal(#Predicate { $0.count % 2 == 0 }, mentions: ["% operator", "IntRemainder"])
            await world.refusal(#Predicate { $0.count / 2 == 1 }, mentions: ["integer division"])
            await world.refusal(#Predicate { ($0.isActive ? $0.price : 0) > 5 }, mentions: ["ternary"])
            await world.refusal(
                #Predicate { $0.priceWithTax > 10 }, mentions: ["not a stored property of Gadget", "computed"])
            await world.refusal(#Predicate { $0.scratch == 0 }, mentions: ["@Transient"])
            await world.refusal(#Predicate { $0.tags.contains("blue") }, mentions: ["contains(_:)", "stored array"])
            await world.refusal(
                #Predicate { $0.tags.contains { $0 == "blue" } }, mentions: ["not a to-many relationship"])
            await world.refusal(
                #Predicate { ($0 as? SpecialGadget) != nil }, mentions: ["as? SpecialGadget", "is SpecialGadget"])
            await world.refusal(#Predicate { $0.name.contains("w") == false }, mentions: ["== false", "negate"])
            await world.refusal(#Predicate { $0.notes?.isEmpty ?? true }, mentions: ["?? true"])
            await world.refusal(
                #Predicate { $0.parts.filter { $0.weight > 1 }.first != nil },
                mentions: ["a property of Array<Part>", "stored properties"])
            // The context keeps serving after a refusal.
            #expect(try await world.context.fetchCount(FetchDescriptor<Gadget>()) == 6)
        }
    }

    @Test(arguments: Backend.allCases)
    func sortingHappensInTheStore(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            func names(_ sort: [SortDescriptor<Gadget>], limit: Int? = nil, offset: Int? = nil) async throws -> [String]
            {
                var descriptor = FetchDescriptor<Gadget>(sortBy: sort)
                descriptor.fetchLimit = limit
                descriptor.fetchOffset = offset
                return try await world.context.fetch(descriptor).map(\.name)
            }
            // Oracles: the same sort applied by Foundation to the objects in memory.
            for sort in [
                SortDescriptor(\Gadget.price), SortDescriptor(\Gadget.price, order: .reverse),
                SortDescriptor(\Gadget.name),
                SortDescriptor(\Gadget.released, order: .reverse), SortDescriptor(\Gadget.name, comparator: .lexical),
            ] {
                #expect(try await names([sort]) == world.gadgets.sorted(using: sort).map(\.name), "\(sort)")
            }
            let byKindThenPrice = [
                SortDescriptor(\Gadget.kind.rawValue), SortDescriptor(\Gadget.price, order: .reverse),
            ]
            let twoKeys = [SortDescriptor(\Gadget.rating, order: .reverse), SortDescriptor(\Gadget.count)]
            #expect(try await names(twoKeys) == world.gadgets.sorted(using: twoKeys).map(\.name))
            #expect(
                try await names([SortDescriptor(\Gadget.price)], limit: 2, offset: 1)
                    == Array(world.gadgets.sorted(using: SortDescriptor(\Gadget.price)).map(\.name)[1...2]))
            let none = await modelError { _ = try await names(byKindThenPrice) }
            #expect(none?.message.contains("to-one relationships") == true, "\(String(describing: none))")
            let computed = await modelError { _ = try await names([SortDescriptor(\Gadget.priceWithTax)]) }
            #expect(computed?.code == .invalidArgument)
            #expect(computed?.message.contains("computed property") == true)
            // Through a to-one relationship, as SwiftData sorts: gadgets without a maker first.
            let byMaker = [SortDescriptor(\Gadget.maker?.name, order: .reverse), SortDescriptor(\Gadget.name)]
            #expect(try await names(byMaker) == world.gadgets.sorted(using: byMaker).map(\.name))
            let byCountry = [SortDescriptor(\Gadget.maker?.country), SortDescriptor(\Gadget.name)]
            #expect(try await names(byCountry) == world.gadgets.sorted(using: byCountry).map(\.name))
        }
    }
}
