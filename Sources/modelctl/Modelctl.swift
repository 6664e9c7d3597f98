import ArgumentParser
import ModelWire

/// `modelctl`: the command-line client of modeld. It speaks only the socket protocol, so
/// everything it does any client can do.
@main
struct Modelctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modelctl",
        abstract: "Work with the object stores of a running modeld.",
        discussion: """
            Every command talks to modeld over its socket (--socket, or MODELD_SOCKET, or \
            modeld's default) and works on one store (--store, or MODELD_STORE, or 'default'). \
            Output is a table on a terminal and JSON otherwise; --format json, jsonl, csv or \
            table chooses.

            Values are given as name=value, in the attribute's text form (2026-01-31 for a \
            date, true for a bool, a URI for a to-one relationship, URIs separated by commas \
            for a to-many), or as name:=json for a JSON value (note:=null, tags:='["modeld://…"]').

            \(CLI.exitCodes)
            """,
        version: ModeldVersion.current,
        subcommands: [
            Status.self, Metrics.self, StoreCommand.self, SchemaCommand.self,
            Insert.self, Get.self, Update.self, Delete.self,
            Fetch.self, Count.self, Aggregate.self, History.self,
            Import.self, Export.self, Shell.self, Manual.self,
        ]
    )

    /// Lets the global options come before the subcommand too (`modelctl --store trips fetch Trip`).
    @OptionGroup var global: GlobalOptions

    /// ArgumentParser's `main`, but a mistake a command did not report itself (an input error
    /// thrown outside a call to the daemon) is reported as every other: `modelctl: …` and its
    /// exit code, not a dump of the error.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            if let code = CLI.report(error, socket: nil) { Self.exit(withError: ExitCode(code)) }
            Self.exit(withError: error)
        }
    }
}
