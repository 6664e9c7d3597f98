import Foundation
import ModelClient
import Testing

/// Grouped aggregates and NSPredicate-syntax store predicates, each checked against the same
/// figures computed from the objects in memory.
@Suite struct AggregateTests {
    @Test(arguments: Backend.allCases)
    func groupedCountsAndSumsMatchTheObjects(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            let rows = try await world.context.aggregate(
                AggregateDescriptor<Gadget>(
                    groupBy: [\Gadget.kind],
                    aggregates: [
                        .count(), .sum(\Gadget.price), .sum(\Gadget.count, as: "units"),
                        .average(\Gadget.price, as: "mean"),
                        .minimum(\Gadget.released, as: "first"), .maximum(\Gadget.count, as: "most"),
                    ]))
            let groups = Dictionary(grouping: world.gadgets, by: \.kind)
            #expect(
                rows.compactMap { $0[\Gadget.kind] }.sorted { $0.rawValue < $1.rawValue }
                    == groups.keys.sorted { $0.rawValue < $1.rawValue })
            for row in rows {
                let kind = try #require(row[\Gadget.kind])
                let members = try #require(groups[kind])
                #expect(row.count() == members.count)
                #expect(abs(try #require(row.double("sum_price")) - members.map(\.price).reduce(0, +)) < 1e-9)
                #expect(row.int("units") == members.map(\.count).reduce(0, +))
                #expect(
                    abs(try #require(row.double("mean")) - members.map(\.price).reduce(0, +) / Double(members.count))
                        < 1e-9)
                #expect(row.int("most") == members.map(\.count).max())
                #expect(row.names == ["count", "first", "kind", "mean", "most", "sum_price", "units"])
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func filteredSortedAndLimited(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            var descriptor = AggregateDescriptor<Gadget>(
                predicate: #Predicate { $0.price > 1 }, groupBy: [\Gadget.isActive],
                aggregates: [.count(), .sum(\Gadget.count, as: "units")])
            descriptor.sortBy = [(key: "units", order: .reverse)]
            let rows = try await world.context.aggregate(descriptor)
            let selected = world.gadgets.filter { $0.price > 1 }
            let expected = Dictionary(grouping: selected, by: \.isActive).mapValues { $0.map(\.count).reduce(0, +) }
                .sorted { $0.value > $1.value }
            #expect(rows.map { $0[\Gadget.isActive] } == expected.map(\.key))
            #expect(rows.map { $0.int("units") } == expected.map(\.value))

            descriptor.fetchLimit = 1
            #expect(try await world.context.aggregate(descriptor).count == 1)

            // One row over everything when nothing is grouped; pending changes count unless told not to.
            world.context.insert(
                Gadget(
                    name: "new", notes: nil, price: 1000, count: 0, rating: nil, released: day("2026-05-05"),
                    isActive: true,
                    kind: .toy, code: UUID(), link: nil))
            var total = AggregateDescriptor<Gadget>(aggregates: [.count(), .sum(\Gadget.price)])
            let withPending = try await world.context.aggregate(total)
            #expect(withPending.map { $0.count() } == [world.gadgets.count + 1])
            #expect(
                abs((withPending.first?.double("sum_price") ?? 0) - world.gadgets.map(\.price).reduce(1000, +)) < 1e-9)
            total.includePendingChanges = false
            #expect(try await world.context.aggregate(total).map { $0.count() } == [world.gadgets.count])
        }
    }

    @Test(arguments: Backend.allCases)
    func badAggregatesAreRefused(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            let relationship = await modelError {
                _ = try await world.context.aggregate(
                    AggregateDescriptor<Gadget>(groupBy: [\Gadget.maker], aggregates: [.count()]))
            }
            #expect(relationship?.code == .invalidArgument)
            #expect(relationship?.message.contains("group by") == true)
            let computed = await modelError {
                _ = try await world.context.aggregate(
                    AggregateDescriptor<Gadget>(aggregates: [.sum(\Gadget.priceWithTax)]))
            }
            #expect(computed?.message.contains("stored attribute of Gadget") == true)
            var badSort = AggregateDescriptor<Gadget>(groupBy: [\Gadget.kind], aggregates: [.count()])
            badSort.sortBy = [(key: "nothing", order: .forward)]
            let sort = await modelError { _ = try await world.context.aggregate(badSort) }
            #expect(sort?.message.contains("nothing") == true)
        }
    }

    @Test(arguments: Backend.allCases)
    func storePredicatesSayWhatPredicateCannot(_ backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let world = try await GadgetWorld.make(in: container)
            func names(_ store: StorePredicate, _ predicate: Predicate<Gadget>? = nil) async throws -> Set<String> {
                var descriptor = FetchDescriptor<Gadget>(predicate: predicate)
                descriptor.storePredicate = store
                return Set(try await world.context.fetch(descriptor).map(\.name))
            }
            func expected(_ test: (Gadget) -> Bool) -> Set<String> { Set(world.gadgets.filter(test).map(\.name)) }

            let light = try StorePredicate("SUBQUERY(parts, $p, $p.weight < %@).@count >= 2", 0.5)
            #expect(try await names(light) == expected { $0.parts.filter { $0.weight < 0.5 }.count >= 2 })
            let heavy = try StorePredicate("parts.@sum.weight > 1")
            #expect(try await names(heavy) == expected { $0.parts.map(\.weight).reduce(0, +) > 1 })
            let like = try StorePredicate("name LIKE[c] %@ OR name ENDSWITH 'ch'", "w*")
            #expect(
                try await names(like) == expected { $0.name.lowercased().hasPrefix("w") || $0.name.hasSuffix("ch") })
            let acme = try #require(world.makers.first { $0.name == "acme" })
            let byObject = try StorePredicate("maker == %@", acme)
            #expect(
                try await names(byObject, #Predicate { $0.isActive })
                    == expected { $0.maker?.name == "acme" && $0.isActive })
            #expect(
                try await names(StorePredicate("ANY parts.label BEGINSWITH[c] 'H'"))
                    == expected { $0.parts.contains { $0.label.hasPrefix("h") } })

            let error = await modelError { _ = try StorePredicate("name == = 'x'") }
            #expect(error?.code == .invalidPredicate)
            #expect(error?.message.contains("column") == true)
            // Arguments are bound: a quote in one is part of the value compared, nothing more.
            #expect(try await names(StorePredicate("name == %@", "x' OR name != 'x")).isEmpty)
            let missing = await modelError { _ = try StorePredicate("name == %@ AND count > %@", "x") }
            #expect(missing?.message.contains("more %@ than the 1 argument") == true)
            let unknown = await modelError { _ = try await names(StorePredicate("colour == 'red'")) }
            #expect(unknown?.code == .unknownProperty)
        }
    }
}
