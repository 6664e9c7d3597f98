import CEditLine
import Foundation
import Synchronization

/// Line editing for `modelctl shell` on a terminal, on libedit's readline interface: arrows and
/// Emacs keys to edit, up and down through earlier lines, Ctrl-R to search them, Tab to complete
/// commands and entity names, and a history file kept between sessions (`~/.modelctl_history`,
/// or `MODELCTL_HISTFILE`; the last 1,000 lines).
final class LineEditor {
    /// The history file, or nil for none.
    let historyFile: String?
    static let historySize: Int32 = 1_000

    init(environment: [String: String] = ProcessInfo.processInfo.environment, words: [String]) {
        if let file = environment["MODELCTL_HISTFILE"] {
            historyFile = file.isEmpty ? nil : file
        } else {
            historyFile = environment["HOME"].map { $0 + "/.modelctl_history" }
        }
        Completion.words.withLock { $0 = words }
        modelctl_rl_setup(Completion.next)
        stifle_history(Self.historySize)
        if let historyFile { _ = read_history(historyFile) }
    }

    /// The next line, without its newline; nil at the end of input (Ctrl-D).
    func readLine(prompt: String) -> String? {
        guard let line = readline(prompt) else { return nil }
        defer { free(line) }
        let text = String(cString: line)
        if !text.trimmingCharacters(in: .whitespaces).isEmpty { add_history(line) }
        return text
    }

    /// Writes the history file.
    func save() {
        guard let historyFile else { return }
        // stifle_history keeps the list to its size, so the file stays within it too.
        _ = write_history(historyFile)
    }
}

/// What Tab completes: the word under the cursor among the shell's commands (first word) or the
/// store's entity names (later words). readline calls the C function with the word and 0, then 1,
/// 2… until it returns NULL, each answer a malloc'd string it frees.
private enum Completion {
    static let commands = [
        "insert", "update", "delete", "get", "fetch", "count", "pending", "save", "rollback", "help", "quit",
    ]
    /// The entity names; set once before the first line is read.
    static let words = Mutex<[String]>([])
    /// The matches of the word being completed, computed when readline asks for the first.
    static let matches = Mutex<[String]>([])

    static let next: @convention(c) (UnsafePointer<CChar>?, Int32) -> UnsafeMutablePointer<CChar>? = { text, state in
        if state == 0 {
            let word = text.map { String(cString: $0) } ?? ""
            let line = modelctl_rl_line().map { String(cString: $0) } ?? ""
            let first =
                line.trimmingCharacters(in: .whitespaces).split(separator: " ").count <= 1
                && !line.hasSuffix(" ")
            let candidates = first ? commands : words.withLock { $0 }
            matches.withLock { $0 = candidates.filter { $0.hasPrefix(word) } }
        }
        let all = matches.withLock { $0 }
        guard state >= 0, Int(state) < all.count else { return nil }
        return strdup(all[Int(state)])
    }
}
