import Foundation

/// Reads a file (or standard input) in chunks, so that a file of any size needs a chunk of
/// memory; says how far it has got, for progress.
final class ChunkReader {
    private let handle: FileHandle
    /// The file's size, when it is a regular file.
    let totalBytes: Int64?
    private(set) var bytesRead: Int64 = 0
    static let chunkSize = 256 * 1024

    init(path: String) throws {
        if path == "-" {
            handle = FileHandle.standardInput
            totalBytes = nil
            return
        }
        guard !path.isEmpty, let handle = FileHandle(forReadingAtPath: path) else { throw FileError.cannotRead(path) }
        self.handle = handle
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        totalBytes = (attributes?[.size] as? NSNumber)?.int64Value
    }

    /// The next chunk, or nil at the end.
    func next() throws -> [UInt8]? {
        guard let data = try handle.read(upToCount: Self.chunkSize), !data.isEmpty else { return nil }
        bytesRead += Int64(data.count)
        return Array(data)
    }
}

/// Splits chunks into lines (`\n`, with an optional `\r` before it), keeping a partial line
/// for the next chunk.
struct LineSplitter {
    private var pending: [UInt8] = []

    /// The complete lines in `chunk` (and what was pending); with `final`, the rest too.
    mutating func lines(_ chunk: [UInt8], final: Bool = false) -> [String] {
        pending += chunk
        var lines: [String] = []
        var start = 0
        for (index, byte) in pending.enumerated() where byte == 0x0A {
            var end = index
            if end > start, pending[end - 1] == 0x0D { end -= 1 }
            lines.append(String(decoding: pending[start..<end], as: UTF8.self))
            start = index + 1
        }
        pending.removeFirst(start)
        if final, !pending.isEmpty {
            lines.append(String(decoding: pending, as: UTF8.self))
            pending = []
        }
        return lines
    }
}

/// A CSV field as read: its text, and whether it was quoted (an empty quoted field is the
/// empty string; an empty unquoted one is nil).
struct CSVField {
    var text: String
    var quoted: Bool
}

/// RFC 4180 CSV, read incrementally: quoted fields may hold commas, quotes (doubled) and line
/// breaks, and may span chunks.
struct CSVParser {
    private var field: [UInt8] = []
    private var record: [CSVField] = []
    private var inQuotes = false
    private var quoted = false
    private var afterQuote = false
    /// The line the current record started on (from 1), for messages.
    private(set) var line = 1
    private(set) var recordLine = 1

    /// The complete records in `chunk`; with `final`, the last one too. Each comes with its line.
    mutating func records(_ chunk: [UInt8], final: Bool = false) throws -> [(fields: [CSVField], line: Int)] {
        var done: [([CSVField], Int)] = []
        for byte in chunk {
            if inQuotes {
                if byte == 0x22 {
                    inQuotes = false
                    afterQuote = true
                } else {
                    if byte == 0x0A { line += 1 }
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case 0x22 where afterQuote:
                // "" inside quotes: a quote.
                field.append(0x22)
                inQuotes = true
                afterQuote = false
            case 0x22 where field.isEmpty && !quoted:
                inQuotes = true
                quoted = true
            case 0x2C:
                endField()
            case 0x0A:
                endField()
                done.append((record, recordLine))
                record = []
                line += 1
                recordLine = line
            case 0x0D:
                continue
            default:
                guard !afterQuote else { throw InputError("CSV line \(line): text after a closing quote") }
                field.append(byte)
            }
        }
        if final {
            guard !inQuotes else { throw InputError("CSV line \(recordLine): a quoted field is not closed") }
            if !field.isEmpty || quoted || !record.isEmpty {
                endField()
                done.append((record, recordLine))
                record = []
            }
        }
        return done
    }

    private mutating func endField() {
        record.append(CSVField(text: String(decoding: field, as: UTF8.self), quoted: quoted))
        field = []
        quoted = false
        afterQuote = false
    }
}
