import Foundation
import ModelFixtures
import Testing

@testable import ModelCore

/// `ShortBytes` copies and compares a few bytes as overlapping words: every length up to and
/// past its word paths, at every offset, must copy exactly the bytes asked for (none before or
/// after them in the target) and tell a difference at any position, as `memcpy` and `memcmp` do.
@Suite struct ShortBytesTests {
    @Test func copiesExactlyTheBytesAskedForAtEveryLength() {
        var random = SeededRandom(seed: 41)
        for count in 0...40 {
            for offset in 0..<3 {
                // A byte past the bytes copied, which must stay behind (and gives an empty copy an address).
                let source = (0...(count + offset)).map { _ in UInt8.random(in: 1...255, using: &random) }
                var target = [UInt8](repeating: 0, count: count + 2 * offset + 4)
                source.withUnsafeBytes { source in
                    target.withUnsafeMutableBytes { target in
                        ShortBytes.copy(source.baseAddress! + offset, to: target.baseAddress! + offset, count: count)
                    }
                }
                #expect(
                    Array(target[offset..<(offset + count)]) == Array(source[offset..<(offset + count)]),
                    "\(count) at \(offset)")
                #expect(target[..<offset].allSatisfy { $0 == 0 }, "written before, \(count) at \(offset)")
                #expect(target[(offset + count)...].allSatisfy { $0 == 0 }, "written after, \(count) at \(offset)")
            }
        }
    }

    @Test func tellsADifferenceAtAnyPosition() {
        var random = SeededRandom(seed: 42)
        for count in 0...40 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            // A byte past the end that differs must not count.
            let same = bytes + [1], other = bytes + [2]
            #expect(Self.equal(same, other, count: count), "equal bytes of length \(count)")
            for position in 0..<count {
                var changed = other
                changed[position] ^= UInt8.random(in: 1...255, using: &random)
                #expect(!Self.equal(same, changed, count: count), "a difference at \(position) of \(count)")
            }
        }
    }

    private static func equal(_ a: [UInt8], _ b: [UInt8], count: Int) -> Bool {
        a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in ShortBytes.equal(a.baseAddress!, b.baseAddress!, count: count) }
        }
    }
}
