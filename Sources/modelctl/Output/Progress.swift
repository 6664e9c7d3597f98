import Foundation

/// A progress line on standard error, when it is a terminal: rows, rate, and (when the total
/// size is known) percentage and time left. Redrawn at most five times a second.
final class Progress {
    private let enabled: Bool
    private let start = ContinuousClock.now
    private var lastDraw = ContinuousClock.now
    private let label: String

    init(label: String, enabled: Bool = Terminal.errorIsTerminal) {
        self.label = label
        self.enabled = enabled
    }

    func update(rows: Int, bytes: Int64, totalBytes: Int64?, force: Bool = false) {
        guard enabled else { return }
        let now = ContinuousClock.now
        guard force || now - lastDraw >= .milliseconds(200) else { return }
        lastDraw = now
        Terminal.error(
            "\r\u{1B}[K"
                + Self.line(label: label, rows: rows, elapsed: now - start, bytes: bytes, totalBytes: totalBytes))
    }

    func finish(rows: Int) {
        guard enabled else { return }
        Terminal.error("\r\u{1B}[K")
    }

    /// `import  45,000 rows  9,800 rows/s  [#########-----------]  45%  ETA 0:06`.
    static func line(label: String, rows: Int, elapsed: Duration, bytes: Int64, totalBytes: Int64?) -> String {
        let seconds = max(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, 0.001)
        var text = "\(label)  \(rows.formatted()) rows  \(Int(Double(rows) / seconds).formatted()) rows/s"
        if let totalBytes, totalBytes > 0 {
            let fraction = min(Double(bytes) / Double(totalBytes), 1)
            let filled = Int(fraction * 20)
            let left = fraction > 0 ? Int(seconds / fraction - seconds) : 0
            text += "  [" + String(repeating: "#", count: filled) + String(repeating: "-", count: 20 - filled) + "]"
            text += String(format: "  %3d%%  ETA %d:%02d", Int(fraction * 100), left / 60, left % 60)
        }
        return text
    }
}
