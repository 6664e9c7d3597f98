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
                    ".TP\n.B MODELD_SOCKET\nThe daemon's socket, when --socket is not given.\n.TP\n.B MODELD_STORE\nThe store, when --store is not given."
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
