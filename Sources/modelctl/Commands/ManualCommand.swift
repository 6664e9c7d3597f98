import ArgumentParser
import Foundation
import ModelServer

/// `modelctl manual`: the man page, written from the commands' own definitions (the same text
/// `--help` prints), so it never falls behind them.
struct Manual: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print modelctl's man page (roff), made from its command definitions.",
        discussion: "Install it with: modelctl manual > /usr/local/share/man/man1/modelctl.1")

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file")) var output: String?

    func run() async throws {
        let page = ManualPage.render(root: Modelctl.self, date: Date())
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

/// A man(7) page from a command tree.
enum ManualPage {
    static func render(root: any ParsableCommand.Type, date: Date) -> String {
        let configuration = root.configuration
        let name = configuration.commandName ?? "modelctl"
        let day = ISO8601DateFormatter.string(from: date, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
        var page = """
            .TH \(name.uppercased()) 1 "\(day)" "\(name) \(configuration.version)" "User Commands"
            .SH NAME
            \(name) \\- \(escape(configuration.abstract))
            .SH SYNOPSIS
            .B \(name)
            .I command
            [\\fIoptions\\fR]
            .SH DESCRIPTION
            \(paragraphs(configuration.discussion))

            """
        page += ".SH COMMANDS\n"
        for (path, command) in commands(root, path: [name]) where path.count > 1 {
            page += ".SS \"\(path.joined(separator: " "))\"\n"
            let help = root.helpMessage(for: command, columns: 100)
            page += ".nf\n" + help.split(separator: "\n", omittingEmptySubsequences: false).map { escapeLine(String($0)) }.joined(separator: "\n") + "\n.fi\n"
        }
        page += """
            .SH ENVIRONMENT
            .TP
            .B MODELD_SOCKET
            The daemon's socket, when --socket is not given.
            .TP
            .B MODELD_STORE
            The store, when --store is not given.
            .SH "EXIT STATUS"
            \(paragraphs(CLI.exitCodes))
            .SH "SEE ALSO"
            .BR modeld (8)

            """
        return page
    }

    /// Every command and its path of names, depth first.
    static func commands(_ command: any ParsableCommand.Type, path: [String]) -> [([String], any ParsableCommand.Type)] {
        var all: [([String], any ParsableCommand.Type)] = [(path, command)]
        for sub in command.configuration.subcommands {
            let name = sub.configuration.commandName ?? String(describing: sub).lowercased()
            all += commands(sub, path: path + [name])
        }
        return all
    }

    private static func paragraphs(_ text: String) -> String {
        text.components(separatedBy: "\n\n").map { escape($0) }.joined(separator: "\n.PP\n")
    }

    private static func escape(_ text: String) -> String {
        escapeLine(text.replacingOccurrences(of: "\n", with: " "))
    }

    /// Backslashes escaped, characters beyond ASCII written as roff escapes (`\[u2026]`), and a
    /// leading dot or quote kept from being read as a request.
    private static func escapeLine(_ line: String) -> String {
        var escaped = ""
        for scalar in line.replacingOccurrences(of: "\\", with: "\\e").unicodeScalars {
            if scalar.isASCII { escaped.unicodeScalars.append(scalar) } else { escaped += String(format: "\\[u%04X]", scalar.value) }
        }
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }
}
