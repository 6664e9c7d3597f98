import ArgumentParser
import Foundation
import ModelCore
import ModelRemote

extension StoreCommand {
    /// `modelctl store retention NAME [--age 7d|none|default] [--transactions N|none|default]`.
    struct Retention: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show or set how much history a store keeps.",
            discussion: """
                Without options, shows the store's retention. Each option sets the store's own limit, \
                which replaces the daemon's (--history-retention-age, --history-retention-transactions) \
                for this store: a value, 'none' to keep everything of that kind, or 'default' to follow \
                the daemon's again. The daemon prunes in the background, at each prune interval.
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The store (default: --store).") var name: String?
        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "Delete transactions older than this: 30d, 12h, 90m, 45s; none; default.", valueName: "age"))
        var age: String?
        @Option(
            parsing: .unconditional,
            help: ArgumentHelp("Keep at most this many transactions; none; default.", valueName: "count"))
        var transactions: String?

        func validate() throws {
            _ = try limits()
        }

        func run() async throws {
            let (ageLimit, countLimit) = try limits()
            let store = try await global.withClient { client in
                let store = name ?? global.storeName
                if ageLimit == nil, countLimit == nil { return try await client.store(store) }
                return try await client.setHistoryRetention(of: store, age: ageLimit, transactions: countLimit)
            }
            let writer = RecordWriter(format: global.outputFormat, single: true)
            writer.write([StoreCommand.retentionRecord(store)])
            writer.finish()
        }

        /// The limits asked for: `--age` and `--transactions`, each nil when not given.
        private func limits() throws -> (age: StoreInfo.RetentionLimit?, transactions: StoreInfo.RetentionLimit?) {
            let ageLimit = try limit(self.age, parse: Self.seconds, what: "--age", form: Self.ageForm)
            let countLimit = try limit(
                self.transactions, parse: { Int64($0).flatMap { $0 > 0 ? $0 : nil } }, what: "--transactions",
                form: "a positive whole number")
            return (ageLimit, countLimit)
        }

        private func limit(_ text: String?, parse: (String) -> Int64?, what: String, form: String) throws
            -> StoreInfo.RetentionLimit?
        {
            guard let text else { return nil }
            switch text.lowercased() {
            case "none": return .unlimited
            case "default": return .daemons
            default:
                guard let value = parse(text) else {
                    throw ValidationError("\(what) '\(text)' is not \(form), 'none' or 'default'")
                }
                return .limit(value)
            }
        }

        /// What `--age` takes, besides `none` and `default`.
        static let ageForm = "an age (\(HistoryRetentionAge.form), in whole seconds)"

        /// An age (``HistoryRetentionAge``) in whole seconds, as `SetHistoryRetention` takes it.
        static func seconds(_ text: String) -> Int64? {
            guard let age = HistoryRetentionAge.parse(text) else { return nil }
            let (seconds, attoseconds) = age.components
            return seconds >= 1 && attoseconds == 0 ? seconds : nil
        }
    }

    static func retentionRecord(_ store: StoreInfo) -> Record {
        let retention = store.historyRetention
        func source(_ own: Bool) -> String { own ? "store" : "daemon" }
        return [
            ("store", .text(store.name)),
            ("history_retention_age_seconds", .number(retention.age?.components.seconds)),
            ("history_retention_age_from", .text(source(retention.ageIsTheStores))),
            ("history_retention_transactions", .number(retention.transactions.map(Int64.init))),
            ("history_retention_transactions_from", .text(source(retention.transactionsIsTheStores))),
        ]
    }
}
