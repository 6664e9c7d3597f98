import Foundation
import ModelCore
import Testing

/// `UUID.lowercasedText` and `UUID(text:)` against Foundation's `uuidString` and
/// `UUID(uuidString:)`, which they replace on hot paths: the same text, the same acceptances.
@Suite struct UUIDTextTests {
    @Test func writesWhatFoundationWritesInLowercase() {
        var generator = SystemRandomNumberGenerator()
        var samples = (0..<2_000).map { _ in UUID() }
        samples.append(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        samples.append(UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)))
        samples.append(
            UUID(
                uuid: (
                    0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x40, 0x61, 0x82, 0x93, 0xa4,
                    UInt8.random(in: 0...255, using: &generator),
                    0xc6, 0xd7, 0xe8, 0xf9
                )))
        for uuid in samples {
            #expect(uuid.lowercasedText == uuid.uuidString.lowercased())
            #expect(UUID(text: uuid.lowercasedText) == uuid)
            #expect(UUID(text: uuid.uuidString) == uuid)
        }
    }

    @Test func refusesWhatFoundationRefuses() {
        let good = "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9"
        var inputs = [
            "", "0a1b2c3d", good + "0", String(good.dropLast()), "{\(good)}", " \(good)",
            good.replacingOccurrences(of: "-", with: ""),
            "0a1b2c3d4e5f-4061-8293-a4b5c6d7e8f9-", "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8fg",
            "0a1b2c3d-4e5f-4061-8293_a4b5c6d7e8f9",
            "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f\u{e9}", "0a1b2c3-d4e5f-4061-8293-a4b5c6d7e8f9",
            "+a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9",
        ]
        // Every single-character change of a good UUID, to each of a set of characters.
        let replacements: [Character] = ["-", "g", "G", "x", " ", "0", "F", "{", "\u{0}"]
        for index in 0..<good.count {
            for replacement in replacements {
                var changed = Array(good)
                changed[index] = replacement
                inputs.append(String(changed))
            }
        }
        var refused = 0
        for input in inputs {
            let foundation = UUID(uuidString: input)
            let parsed = UUID(text: input)
            // Strict: only 36 characters, dashes at 8, 13, 18 and 23, hex digits elsewhere, and
            // then the same UUID as Foundation's. Foundation's scan is laxer (it takes a sign or a
            // space in a digit's place); whatever it refuses is refused here too.
            #expect((parsed != nil) == Self.isStrictForm(input), "\(input.debugDescription)")
            if let parsed { #expect(parsed == foundation, "\(input.debugDescription)") }
            if foundation == nil {
                #expect(parsed == nil, "\(input.debugDescription)")
                refused += 1
            }
        }
        #expect(refused > 200)
    }

    static func isStrictForm(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        return bytes.enumerated().allSatisfy { index, byte in
            [8, 13, 18, 23].contains(index)
                ? byte == UInt8(ascii: "-")
                : (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 102) || (byte >= 65 && byte <= 70)
        }
    }
}
