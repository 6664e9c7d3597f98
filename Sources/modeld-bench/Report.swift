import Foundation

/// The figures of one run: a line per target, with the measurements behind it, printed as a
/// table and written as JSON.
struct Report {
    struct Line: Encodable {
        let workload: String
        let modeld: String
        let baseline: String
        /// modeld against the baseline, as the target states it (higher is better unless noted).
        let ratio: Double
        let target: String
        /// Nil for a figure without a target.
        let met: Bool?
    }

    var conditions: [String: String] = [:]
    var lines: [Line] = []
    var details: [String: [String: Double]] = [:]

    mutating func add(_ workload: String, modeld: String, baseline: String, ratio: Double, target: String, met: Bool?) {
        lines.append(
            Line(workload: workload, modeld: modeld, baseline: baseline, ratio: ratio, target: target, met: met))
        let verdict = met.map { "target \(target): \($0 ? "met" : "missed")" } ?? "no target"
        say("  -> \(workload): \(modeld) vs \(baseline): \(format(ratio))x (\(verdict))")
    }

    mutating func detail(_ name: String, _ figures: [String: Double]) {
        details[name] = figures
    }

    func table() -> String {
        let headers = ["workload", "modeld", "baseline", "ratio", "target", ""]
        let rows = lines.map {
            [
                $0.workload, $0.modeld, $0.baseline, format($0.ratio) + "x", $0.target,
                $0.met.map { $0 ? "met" : "MISSED" } ?? "",
            ]
        }
        let widths = headers.indices.map { column in ([headers] + rows).map { $0[column].count }.max() ?? 0 }
        func render(_ row: [String]) -> String {
            "| "
                + row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: " | ") + " |"
        }
        let rule = "|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|"
        return ([render(headers), rule] + rows.map(render)).joined(separator: "\n")
    }

    func json() throws -> Data {
        struct Document: Encodable {
            let conditions: [String: String]
            let targets: [Line]
            let details: [String: [String: Double]]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(
            Document(
                conditions: conditions, targets: lines,
                details: details.mapValues { $0.mapValues { $0.isFinite ? $0 : -1 } }))
    }
}

func format(_ value: Double) -> String {
    guard value.isFinite else { return "n/a" }
    if value >= 100 { return String(format: "%.0f", value) }
    if value >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.2f", value)
}

func perSecond(_ value: Double) -> String { format(value) + "/s" }
func micros(_ value: Double) -> String { format(value) + " µs" }
func millis(_ duration: Duration) -> String { format(duration.seconds * 1000) + " ms" }

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

/// Prints a progress line and flushes it, so a run piped into a file or `tee` shows where it is.
func say(_ line: String) {
    print(line)
    fflush(nil)
}
