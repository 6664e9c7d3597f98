import ArgumentParser
import Foundation
import ModelCore
import ModelRemote

extension StoreCommand {
    /// Who a grant is for: `--user NAME` or `--group NAME`.
    struct PrincipalOptions: ParsableArguments {
        @Option(help: ArgumentHelp("A user of the daemon's host, by name or number.", valueName: "user")) var user:
            String?
        @Option(help: ArgumentHelp("A group of the daemon's host, by name or number.", valueName: "group"))
        var group: String?

        func validate() throws {
            guard (user == nil) != (group == nil) else { throw ValidationError("give either --user or --group") }
        }

        var principal: StoreInfo.AccessGrant.Principal { user.map { .user($0) } ?? .group(group ?? "") }
    }

    /// `modelctl store grant NAME --user alice --read|--write`.
    struct Grant: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Let a user or group read, or read and write, a store.",
            discussion: """
                The store's owner (the user who created it) or an administrator (root, the daemon's \
                user, a member of modeld --admin-group) may grant. A grant replaces what the user or \
                group had. Callers are told apart by their Unix user, as the kernel vouches for it.
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The store.") var name: String
        @OptionGroup var who: PrincipalOptions
        @Flag(help: "Read only.") var read = false
        @Flag(help: "Read and write.") var write = false

        func validate() throws {
            guard read != write else { throw ValidationError("give either --read or --write") }
        }

        func run() async throws {
            let store = try await global.withClient {
                try await $0.grantAccess(to: who.principal, on: name, write: write)
            }
            let writer = RecordWriter(format: global.outputFormat, single: true)
            writer.write([StoreCommand.accessRecord(store)])
            writer.finish()
        }
    }

    /// `modelctl store revoke NAME --user alice`.
    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take back what a user or group was granted on a store.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The store.") var name: String
        @OptionGroup var who: PrincipalOptions

        func run() async throws {
            let store = try await global.withClient { try await $0.revokeAccess(from: who.principal, on: name) }
            let writer = RecordWriter(format: global.outputFormat, single: true)
            writer.write([StoreCommand.accessRecord(store)])
            writer.finish()
        }
    }

    static func grantsText(_ store: StoreInfo) -> [String] {
        store.grants.map { grant in
            let who =
                switch grant.principal {
                case .user(let name): "user:\(name)"
                case .group(let name): "group:\(name)"
                }
            return "\(who)=\(grant.mayWrite ? "write" : "read")"
        }
    }

    static func accessRecord(_ store: StoreInfo) -> Record {
        [("store", .text(store.name)), ("owner", .text(store.owner)), ("grants", .uris(grantsText(store)))]
    }
}
