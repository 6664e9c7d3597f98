import Foundation

/// A point in time, kept as whole microseconds since 1970-01-01T00:00:00Z, so that it round-trips
/// exactly through every store and over the wire.
public struct Timestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Microseconds since the Unix epoch.
    public var microsecondsSince1970: Int64

    public init(microsecondsSince1970: Int64) {
        self.microsecondsSince1970 = microsecondsSince1970
    }

    /// The nearest whole microsecond to `date`.
    public init(_ date: Date) {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        self.microsecondsSince1970 = Int64(exactly: micros) ?? (micros < 0 ? Int64.min : Int64.max)
    }

    /// This timestamp as a Foundation date.
    public var date: Date {
        // Split into whole seconds and a remainder so that large values keep microsecond precision.
        let seconds = microsecondsSince1970 / 1_000_000
        let micros = microsecondsSince1970 % 1_000_000
        return Date(timeIntervalSince1970: Double(seconds) + Double(micros) / 1_000_000)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.microsecondsSince1970 < rhs.microsecondsSince1970
    }

    /// ISO 8601 in UTC with six fractional digits: `2026-01-02T03:04:05.000006Z`.
    public var iso8601: String {
        var seconds = microsecondsSince1970 / 1_000_000
        var micros = microsecondsSince1970 % 1_000_000
        if micros < 0 {
            micros += 1_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = Self.civilDate(daysSince1970: days)
        let hour = secondOfDay / 3600, minute = (secondOfDay % 3600) / 60, second = secondOfDay % 60
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(abs(value))
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let yearText = year < 0 ? "-" + pad(-year, 4) : pad(year, 4)
        return "\(yearText)-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2))"
            + ".\(pad(micros, 6))Z"
    }

    public var description: String { iso8601 }

    /// Parses ISO 8601: a date (`2026-01-02`, midnight UTC) or a date and time with optional
    /// fraction (up to microseconds) and zone (`Z`, `+02:00`, `-0530`; none means UTC). Years
    /// outside 0000...9999 carry a sign or more digits (`-0044-03-15`, `12026-01-01`), as
    /// ``iso8601`` writes them; nil for anything else or an instant outside the Int64 range.
    public init?(iso8601 text: String) {
        var scanner = DateScanner(Array(text.utf8))
        guard let parsed = scanner.parse() else { return nil }
        self = parsed
    }

    /// Howard Hinnant's days-from-civil algorithm.
    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The inverse of ``daysSince1970(year:month:day:)``.
    static func civilDate(daysSince1970 days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// A strict ISO 8601 reader over UTF-8 bytes.
private struct DateScanner {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func digits(_ count: Int) -> Int64? {
        guard index + count <= bytes.count else { return nil }
        var value: Int64 = 0
        for _ in 0..<count {
            let byte = bytes[index]
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int64(byte - 0x30)
            index += 1
        }
        return value
    }

    mutating func expect(_ character: Character) -> Bool {
        guard index < bytes.count, bytes[index] == character.asciiValue else { return false }
        index += 1
        return true
    }

    var atEnd: Bool { index == bytes.count }

    mutating func parse() -> Timestamp? {
        guard let year = year(), expect("-"), let month = digits(2), expect("-"), let day = digits(2),
            (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year)
        else { return nil }
        var micros: Int64 = 0
        var offsetSeconds: Int64 = 0
        if !atEnd {
            guard expect("T") || expect(" "), let hour = digits(2), expect(":"), let minute = digits(2),
                hour < 24, minute < 60
            else { return nil }
            var second: Int64 = 0
            if expect(":") {
                guard let s = digits(2), s < 60 else { return nil }
                second = s
                if expect(".") {
                    var fraction: Int64 = 0, places = 0
                    while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                        guard places < 6 else { return nil }
                        fraction = fraction * 10 + Int64(bytes[index] - 0x30)
                        places += 1
                        index += 1
                    }
                    guard places > 0 else { return nil }
                    for _ in places..<6 { fraction *= 10 }
                    micros = fraction
                }
            }
            micros += (hour * 3600 + minute * 60 + second) * 1_000_000
            if expect("Z") {
                offsetSeconds = 0
            } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                let sign: Int64 = bytes[index] == UInt8(ascii: "+") ? 1 : -1
                index += 1
                guard let offsetHours = digits(2), offsetHours < 24 else { return nil }
                _ = expect(":")
                guard let offsetMinutes = digits(2), offsetMinutes < 60 else { return nil }
                offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
            }
            guard atEnd else { return nil }
        }
        // Int128, because the day's start can lie outside Int64 while the instant itself does not.
        let days = Int128(Timestamp.daysSince1970(year: year, month: month, day: day))
        let total = days * 86_400_000_000 + Int128(micros) - Int128(offsetSeconds) * 1_000_000
        guard let result = Int64(exactly: total) else { return nil }
        return Timestamp(microsecondsSince1970: result)
    }

    /// A year of four digits (`2026`), or of up to nine with a sign or without (`-0001`, `+12026`,
    /// `12026`): what ``Timestamp/iso8601`` writes for years outside 0000...9999.
    mutating func year() -> Int64? {
        var sign: Int64 = 1
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
            sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
        }
        var count = 0
        while index + count < bytes.count, bytes[index + count] >= 0x30, bytes[index + count] <= 0x39 { count += 1 }
        guard (4...9).contains(count), let value = digits(count) else { return nil }
        return sign * value
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
