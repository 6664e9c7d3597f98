/// A history retention age as people write one, the same for modeld's `--history-retention-age`
/// and `modelctl store retention --age`: a positive number and its unit, `s`, `m`, `h` or `d`
/// (`30d`, `12h`, `90m`, `45s`, `1.5h`). A number without a unit is refused rather than read as
/// seconds: `30` meant as 30 days would delete all but half a minute of history.
public enum HistoryRetentionAge {
    /// What a refused text is told: the form an age takes.
    public static let form = "a positive number and its unit, s, m, h or d (30d, 12h, 90m, 45s)"

    /// The age `text` says, or nil when it is not one (no unit, not a positive number, or too
    /// long to count in milliseconds).
    public static func parse(_ text: String) -> Duration? {
        let seconds: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        guard let last = text.last, let unit = seconds[last] else { return nil }
        let number = text.dropLast()
        // Digits and at most one point: no sign, exponent, "inf" or "nan" that Double reads.
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            number.filter({ $0 == "." }).count <= 1, let value = Double(number), value > 0
        else { return nil }
        let milliseconds = value * unit * 1_000
        guard milliseconds >= 1, milliseconds < Double(Int64.max) else { return nil }
        return .milliseconds(Int64(milliseconds))
    }
}
