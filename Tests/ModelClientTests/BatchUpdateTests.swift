import Foundation
import ModelClient
import Testing

/// `update(model:where:set:)` takes its values as `any Sendable`, so the compiler checks none of
/// them: a value of another type than its property's is refused with `typeMismatch`, and nothing
/// is written (an enum given its raw value, or a JSON attribute given a string, stopped the
/// program, or wrote what no read could decode).
@Suite struct BatchUpdateTests {
    @Test(arguments: Backend.everyKind)
    func valuesOfTheWrongTypeAreRefused(backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let context = ModelContext(container)
            context.insert(
                Gadget(
                    name: "hammer", notes: nil, price: 10, count: 1, rating: nil,
                    released: Date(timeIntervalSince1970: 0),
                    isActive: true, kind: .tool, code: UUID(), link: nil))
            try await context.save()
            let wrong: [(String, [PartialKeyPath<Gadget>: any Sendable], ModelError.Code)] = [
                ("an enum's raw value", [\.kind: "toy"], .typeMismatch),
                ("another enum", [\.count: GadgetKind.toy], .typeMismatch),
                ("a string for a JSON attribute", [\.tags: "x"], .typeMismatch),
                ("nil for a required attribute", [\.name: String?.none], .validationFailed),
            ]
            for (what, values, code) in wrong {
                let error = await modelError { try await context.update(model: Gadget.self, set: values) }
                #expect(error?.code == code, "\(what): \(String(describing: error))")
            }
            // The right types are written, an optional's nil among them.
            let matched = try await context.update(
                model: Gadget.self, set: [\.kind: GadgetKind.toy, \.tags: ["a"], \.rating: Int?.none, \.count: 3])
            #expect(matched == 1)
            let stored = try #require(try await ModelContext(container).fetch(FetchDescriptor<Gadget>()).first)
            #expect(stored.kind == .toy && stored.tags == ["a"] && stored.rating == nil && stored.count == 3)
        }
    }

    /// A batch update of an object the context holds with unsaved changes: the next save
    /// keeps both (it conflicted with the context's own batch under `.error`).
    @Test(arguments: Backend.everyKind)
    func unsavedChangesSaveAfterTheContextsOwnBatchUpdate(backend: Backend) async throws {
        try await backend.withContainer(for: gadgetModels) { container in
            let context = ModelContext(container)
            let hammer = Gadget(
                name: "hammer", notes: nil, price: 10, count: 1, rating: nil, released: Date(timeIntervalSince1970: 0),
                isActive: true, kind: .tool, code: UUID(), link: nil)
            context.insert(hammer)
            try await context.save()
            hammer.name = "mallet"
            #expect(try await context.update(model: Gadget.self, set: [\.count: 7]) == 1)
            #expect(hammer.count == 7 && hammer.name == "mallet")
            try await context.save()
            let stored = try #require(try await ModelContext(container).fetch(FetchDescriptor<Gadget>()).first)
            #expect(stored.name == "mallet" && stored.count == 7)
        }
    }
}
