import Foundation
import ModelCore
import ModelFixtures
import Testing

@Suite struct TimestampTests {
    static let day: Int64 = 86_400_000_000

    @Test(
        arguments: [
            ("1970-01-01T00:00:00Z", Int64(0)),
            ("1970-01-01", 0),
            ("1970-01-01T00:00:00.000001Z", 1),
            ("1969-12-31T23:59:59.999999Z", -1),
            ("1969-12-31T23:59:59.5Z", -500_000),
            ("1969-12-31", -day),
            ("1969-12-31T00:00:00.000001Z", -day + 1),
            ("1970-01-02T00:00:00-00:01", day + 60_000_000),
            ("1970-01-01T00:30:00+01:00", -1_800_000_000),
            ("2026-01-02T03:04:05.000006Z", 1_767_323_045_000_006),
            ("2026-01-02T05:04:05.000006+02:00", 1_767_323_045_000_006),
            ("2026-01-01T21:34:05.000006-0530", 1_767_323_045_000_006),
            ("2026-01-02 03:04:05.000006", 1_767_323_045_000_006),
            ("2026-01-02T03:04", 1_767_323_040_000_000),
            ("2026-01-02T03:04:05.5", 1_767_323_045_500_000),
            ("2000-02-29", 951_782_400_000_000),
            ("1600-02-29", -11_670_998_400_000_000),
            ("0000-01-01", -62_167_219_200_000_000),
            ("-0001-12-31", -62_167_219_200_000_000 - day),
            ("+2026-01-02T03:04:05.000006Z", 1_767_323_045_000_006),
            ("-290308-12-21T19:59:05.224192Z", Int64.min),
            ("294247-01-10T04:00:54.775807Z", Int64.max),
        ] as [(String, Int64)])
    func parses(text: String, micros: Int64) throws {
        let parsed = try #require(Timestamp(iso8601: text), "\(text)")
        #expect(parsed.microsecondsSince1970 == micros, "\(text): \(parsed.microsecondsSince1970 - micros) µs off")
    }

    @Test(
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000000Z"),
            (1, "1970-01-01T00:00:00.000001Z"),
            (-1, "1969-12-31T23:59:59.999999Z"),
            (-1_000_000, "1969-12-31T23:59:59.000000Z"),
            (-86_400_000_000, "1969-12-31T00:00:00.000000Z"),
            (-86_400_000_001, "1969-12-30T23:59:59.999999Z"),
            (1_767_323_045_000_006, "2026-01-02T03:04:05.000006Z"),
            (-62_167_219_200_000_000 - 86_400_000_000, "-0001-12-31T00:00:00.000000Z"),
            (Int64.min, "-290308-12-21T19:59:05.224192Z"),
            (Int64.max, "294247-01-10T04:00:54.775807Z"),
        ] as [(Int64, String)])
    func prints(micros: Int64, text: String) {
        #expect(Timestamp(microsecondsSince1970: micros).iso8601 == text)
        #expect(Timestamp(microsecondsSince1970: micros).description == text)
    }

    /// Every instant prints to text that parses back to it, including years outside 0000...9999
    /// (which once printed as text the parser could not read).
    @Test func everyInstantRoundTrips() {
        var random = SeededRandom(seed: 0xDA7E)
        var failures: [Int64] = []
        var values: [Int64] = [
            0, 1, -1, .min, .max, .min + 1, .max - 1, -Self.day, -Self.day - 1, 253_402_300_799_999_999,
            253_402_300_800_000_000, -62_167_219_200_000_001,
        ]
        for shift in 0...63 { values.append(Int64(bitPattern: random.next()) >> shift) }
        for _ in 0..<20_000 { values.append(Int64(bitPattern: random.next()) >> random.int(0...63)) }
        for micros in values {
            let t = Timestamp(microsecondsSince1970: micros)
            if Timestamp(iso8601: t.iso8601) != t { failures.append(micros) }
        }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    @Test(arguments: [
        "2026-02-30", "2026-02-29", "1900-02-29", "2026-13-01", "2026-00-10", "2026-01-00", "2026-01-32", "2026-04-31",
        "2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z", "2026-01-01T23:59:60Z", "2026-01-01T23:59:59.1234567Z",
        "2026-01-01T23:59:59.Z", "2026-1-01", "26-01-01", "202-01-01", "2026-01-01T", "2026-01-01Tx", "2026-01-01T10",
        "2026-01-01T10:00:00+24:00", "2026-01-01T10:00:00+02:60", "2026-01-01T10:00:00+2", "2026-01-01T10:00:00Z ",
        " 2026-01-01", "", "2026/01/01", "2026-01-01Z", "1234567890-01-01", "--2026-01-01", "294248-01-01",
        "-290309-01-01", "2026-01-01T10:00:00ZZ", "２０２６-01-01",
    ])
    func rejects(text: String) {
        #expect(Timestamp(iso8601: text) == nil, "\(text) parsed as \(Timestamp(iso8601: text).map(\.iso8601) ?? "")")
    }

    @Test func convertsFoundationDates() {
        #expect(Timestamp(Date(timeIntervalSince1970: -0.25)).microsecondsSince1970 == -250_000)
        #expect(Timestamp(Date(timeIntervalSince1970: 1_767_323_045.5)).microsecondsSince1970 == 1_767_323_045_500_000)
        for micros: Int64 in [0, 1, -1, 1_767_323_045_000_006, -62_167_219_200_000_000, 4_102_444_800_123_456] {
            let t = Timestamp(microsecondsSince1970: micros)
            #expect(Timestamp(t.date) == t, "\(micros)")
        }
        #expect(Timestamp(Date.distantFuture).microsecondsSince1970 > 0)
        #expect(Timestamp(microsecondsSince1970: 1) > Timestamp(microsecondsSince1970: 0))
    }
}
