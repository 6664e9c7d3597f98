import ArgumentParser
import Foundation
import Glibc

/// How results are printed.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    /// Aligned columns, for people (the default on a terminal).
    case table
    /// One JSON document: an object, or an array of them (the default otherwise).
    case json
    /// One JSON object per line.
    case jsonl
    /// RFC 4180 CSV with a header row.
    case csv
}

/// Writes records to standard output in a format, batch by batch, so that a stream of any size
/// needs only a batch of memory.
final class RecordWriter: @unchecked Sendable { // Used by one task at a time: batches arrive one after another.
    let format: OutputFormat
    private var columns: [String]?
    private var table: TableText?
    private var count = 0
    private let single: Bool
    /// Whether the records go to standard error (standard output carries something else).
    private let toStandardError: Bool

    /// With `single`, the output is one record (JSON: an object, not an array). With
    /// `toStandardError`, it is written there: for a command whose standard output is its data
    /// (`store backup NAME -`).
    init(format: OutputFormat, single: Bool = false, toStandardError: Bool = false) {
        self.format = format
        self.single = single
        self.toStandardError = toStandardError
    }

    private func emit(_ text: String) {
        if toStandardError { Terminal.error(text) } else { Terminal.write(text) }
    }

    func write(_ records: [Record]) {
        guard !records.isEmpty else { return }
        var out = ""
        switch format {
        case .json:
            for record in records {
                let object = JSONText.object(record.map { ($0.0, $0.1.json) })
                if single { out += object + "\n" } else { out += (count == 0 ? "[\n" : ",\n") + object }
                count += 1
            }
        case .jsonl:
            for record in records { out += JSONText.object(record.map { ($0.0, $0.1.json) }) + "\n" }
            count += records.count
        case .csv:
            let columns = columnsFor(records)
            if count == 0 { out += CSVText.record(columns) }
            for record in records { out += CSVText.record(cells(record, columns).map { $0?.text }) }
            count += records.count
        case .table:
            let columns = columnsFor(records)
            let rows = records.map { cells($0, columns).map { $0?.text ?? "" } }
            let rendered = TableText(columns: columns).render(rows)
            // The header once; later batches only their rows.
            out +=
                count == 0
                ? rendered
                : rendered.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(2).joined(separator: "\n")
            count += records.count
        }
        emit(out)
    }

    /// Ends the output: closes a JSON array, or says there was nothing.
    func finish() {
        switch format {
        case .json where !single: emit(count == 0 ? "[]\n" : "\n]\n")
        case .table where count == 0: emit("(none)\n")
        default: break
        }
    }

    private func columnsFor(_ records: [Record]) -> [String] {
        if let columns { return columns }
        var names: [String] = []
        for record in records { for (name, _) in record where !names.contains(name) { names.append(name) } }
        columns = names
        return names
    }

    private func cells(_ record: Record, _ columns: [String]) -> [Cell?] {
        let byName = Dictionary(record, uniquingKeysWith: { first, _ in first })
        return columns.map { byName[$0] }
    }
}

/// Standard output and error, unbuffered, and whether they are terminals.
enum Terminal {
    static func write(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            guard let start = buffer.baseAddress else { return } // nil only for no text
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(STDOUT_FILENO, start + offset, buffer.count - offset)
                if written >= 0 {
                    offset += written
                } else if errno != EINTR {
                    outputFailed(errno)
                }
            }
        }
    }

    /// Ends modelctl when its output cannot be written. When what reads it stopped (`| head`),
    /// as other tools end then: by SIGPIPE, quietly (141 in a shell); otherwise saying why, 1.
    private static func outputFailed(_ code: Int32) -> Never {
        if code == EPIPE {
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
        }
        error("modelctl: cannot write its output: \(String(cString: strerror(code)))\n")
        exit(1)
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static var outputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    static var errorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
    static var inputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
}
