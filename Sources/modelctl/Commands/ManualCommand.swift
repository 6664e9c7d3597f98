import ArgumentParser
import Foundation
import ManualPages

/// `modelctl manual`: the man page, written from the commands' own definitions (the same text
/// `--help` prints), so it never falls behind them.
struct Manual: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print modelctl's man page (roff), made from its command definitions.",
        discussion: "Install it with: modelctl manual > /usr/local/share/man/man1/modelctl.1")

    @Option(
        name: .shortAndLong, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
    var output: String?

    func run() async throws {
        let page = ManualPage.render(
            root: Modelctl.self, section: 1, date: Date(),
            sections: [
                (
                    "ENVIRONMENT",
                    """
                    .TP
                    .B MODELD_SOCKET
                    The daemon's socket, when --socket is not given.
                    .TP
                    .B MODELD_STORE
                    The store, when --store is not given.
                    .TP
                    .B MODELD_TRANSPORT
                    How to speak to the daemon: framed (its own socket beside --socket, the default when it is there) or http2 (standard gRPC).
                    .TP
                    .B MODELCTL_HISTFILE
                    Where the shell keeps its history (~/.modelctl_history by default; empty for none).
                    """
                ),
                ("EXIT STATUS", ManualPage.paragraphs(CLI.exitCodes)),
                ("SEE ALSO", ".BR modeld (8)"),
            ])
        if let output {
            do {
                try page.write(toFile: output, atomically: true, encoding: .utf8)
            } catch {
                Terminal.error("modelctl: cannot write \(output): \(error.localizedDescription)\n")
                throw ExitCode(CLI.failure)
            }
        } else {
            Terminal.write(page)
        }
    }
}
