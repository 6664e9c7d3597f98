/// A plain-text table: a header, a rule, and rows, columns padded to their widest cell; long
/// cells are cut to `maximumWidth` on a terminal, with an ellipsis.
struct TableText {
    let columns: [String]
    var maximumWidth = 60

    func render(_ rows: [[String]]) -> String {
        let cells = rows.map { row in row.map(clip) }
        var widths = columns.map(\.count)
        for row in cells {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        func line(_ row: [String]) -> String {
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ") + "\n"
        }
        var out = line(columns)
        out += line(widths.map { String(repeating: "-", count: $0) })
        for row in cells { out += line(row) }
        return out
    }

    private func clip(_ cell: String) -> String {
        let flat = cell.replacingOccurrences(of: "\n", with: "⏎")
        return flat.count > maximumWidth ? String(flat.prefix(maximumWidth - 1)) + "…" : flat
    }
}
