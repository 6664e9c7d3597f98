import ArgumentParser
import Foundation
import ModelRemote
import ModelCore

/// `modelctl history`: print the store's history (the default), or prune it.
struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The store's history: every save, with its author and changes.",
        discussion: "`modelctl history` lists it (`history list`); `history prune` deletes its oldest transactions.",
        subcommands: [HistoryList.self, HistoryPrune.self], defaultSubcommand: HistoryList.self)

    /// A transaction as records: one per change for tables and CSV; one with its changes nested
    /// for JSON.
    static func records(_ transaction: HistoryTransaction, format: OutputFormat) -> [Record] {
        let head: Record = [
            ("token", .number(transaction.token.rawValue)), ("timestamp", .text(transaction.timestamp.iso8601)),
            ("author", .text(transaction.author)), ("user", .text(transaction.user)),
        ]
        func details(_ change: HistoryChange) -> String {
            switch change.kind {
            case .insert: ""
            case .update: change.changedProperties.joined(separator: ",")
            case .delete:
                change.tombstone.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.textForm ?? "nil")" }.joined(
                    separator: " ")
            }
        }
        switch format {
        case .json, .jsonl:
            let changes = transaction.changes.map { change in
                JSONText.object(
                    [
                        ("kind", JSONText.string(change.kind.rawValue)),
                        ("uri", JSONText.string(change.id.uriRepresentation)),
                    ]
                        + (change.kind == .update
                            ? [("changed", JSONText.array(change.changedProperties.map(JSONText.string)))] : [])
                        + (change.kind == .delete
                            ? [
                                (
                                    "tombstone",
                                    JSONText.object(
                                        change.tombstone.sorted { $0.key < $1.key }.map {
                                            ($0.key, JSONText.value($0.value))
                                        })
                                )
                            ] : []))
            }
            let schema: Record =
                transaction.schemaChange.map { change in
                    [
                        (
                            "schemaChange",
                            .nested(
                                json: JSONText.object([
                                    ("from", JSONText.string(change.from)), ("to", JSONText.string(change.to)),
                                ]), text: "")
                        )
                    ]
                } ?? []
            return [head + [("changes", .nested(json: JSONText.array(changes), text: ""))] + schema]
        case .table, .csv:
            if let change = transaction.schemaChange {
                return [
                    head + [
                        ("kind", .text("schema")), ("uri", .text("")),
                        ("details", .text("\(change.from.prefix(12)) -> \(change.to.prefix(12))")),
                    ]
                ]
            }
            return transaction.changes.map { change in
                head + [
                    ("kind", .text(change.kind.rawValue)), ("uri", .text(change.id.uriRepresentation)),
                    ("details", .text(details(change))),
                ]
            }
        }
    }
}

/// `modelctl history list` (also `modelctl history`).
struct HistoryList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Print the store's history: every save, with its author and changes.",
        discussion: "With --follow, keep printing saves as they happen (Ctrl-C stops).")

    @OptionGroup var global: GlobalOptions
    @Option(parsing: .unconditional, help: "Only transactions after this token.") var after: Int64?
    @Option(help: "Only transactions by this author.") var author: String?
    @Option(help: "At most this many transactions (default: every one; 0 too).") var limit: Int?
    @Flag(help: "Keep the stream open, printing new transactions as they are saved.") var follow = false

    func run() async throws {
        let format = global.outputFormat == .json && follow ? OutputFormat.jsonl : global.outputFormat
        let writer = RecordWriter(format: format)
        try await global.withClient { client in
            try await client.followHistory(
                after: after.map(HistoryToken.init), in: global.storeName, author: author, limit: limit ?? 0,
                follow: follow
            ) { transaction in
                writer.write(History.records(transaction, format: format))
            }
        }
        writer.finish()
    }
}

/// `modelctl history prune`.
struct HistoryPrune: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Delete the store's oldest history transactions, so that history does not grow without end.",
        discussion: """
            Give --through TOKEN (that transaction and every earlier one) or --before DATE (those saved \
            before it: 2026-11-01 or 2026-11-01T12:00:00Z). Reading history after a deleted token then \
            fails with historyTokenExpired, never a silent gap.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "Delete the transactions up to and including this token.") var through: Int64?
    @Option(help: "Delete the transactions saved before this date (ISO 8601, UTC unless a zone is given).")
    var before: String?

    func validate() throws {
        guard (through == nil) != (before == nil) else {
            throw ValidationError("give either --through TOKEN or --before DATE")
        }
        if let before, Self.date(before) == nil {
            throw ValidationError("'\(before)' is not a date: write 2026-11-01 or 2026-11-01T12:00:00Z")
        }
        if let through, through < 1 {
            throw ValidationError("--through takes a history token, 1 or more (the first transaction's is 1)")
        }
    }

    func run() async throws {
        try await global.withClient { client in
            if let through {
                if try await client.deleteHistory(through: HistoryToken(through), in: global.storeName) != nil {
                    Terminal.error("deleted history through token \(through)\n")
                } else {
                    Terminal.error("no history through token \(through) was left to delete\n")
                }
            } else if let before, let date = Self.date(before) {
                // Nothing is saved before 1970: the daemon would read the epoch as no date.
                if date.timeIntervalSince1970 > 0,
                    let newest = try await client.deleteHistory(savedBefore: date, in: global.storeName)
                {
                    Terminal.error("deleted history through token \(newest.rawValue)\n")
                } else {
                    Terminal.error("no history was saved before \(before)\n")
                }
            }
        }
    }

    /// `2026-11-01` (midnight UTC) or an ISO 8601 date and time, with or without fractions of a
    /// second, in UTC unless it names a zone. Nothing of a date and time is dropped: one that
    /// reads only as far as its date is not a date.
    static func date(_ text: String) -> Date? {
        let whole = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for candidate in [text, text + "Z"] {
            if let date = whole.date(from: candidate) ?? fractional.date(from: candidate) { return date }
        }
        guard text.utf8.count == 10 else { return nil }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        return day.date(from: text)
    }
}
