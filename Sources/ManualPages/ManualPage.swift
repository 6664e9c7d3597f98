import ArgumentParser
import Foundation

/// A man(7) page written from a command's own definitions (the text `--help` prints), so that
/// it never falls behind them. Characters beyond ASCII become roff escapes.
public enum ManualPage {
    /// A page for `root` in manual `section`: NAME, SYNOPSIS, DESCRIPTION, then, for a command
    /// with subcommands, COMMANDS (each one's help), otherwise OPTIONS; then `sections`.
    public static func render(
        root: any ParsableCommand.Type, section: Int, date: Date,
        sections: [(title: String, body: String)] = []
    ) -> String {
        let configuration = root.configuration
        let name = configuration.commandName ?? "command"
        let day = ISO8601DateFormatter.string(
            from: date, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
        var page = """
            .TH \(name.uppercased()) \(section) "\(day)" "\(name) \(configuration.version)" "\(section == 8 ? "System Administration" : "User Commands")"
            .SH NAME
            \(name) \\- \(escape(configuration.abstract))
            .SH SYNOPSIS
            .B \(name)
            \(configuration.subcommands.isEmpty ? "" : ".I command\n")[\\fIoptions\\fR]
            .SH DESCRIPTION
            \(paragraphs(configuration.discussion))

            """
        let all = commands(root, path: [name])
        if all.count > 1 {
            page += ".SH COMMANDS\n"
            for (path, command) in all where path.count > 1 {
                page +=
                    ".SS \"\(path.joined(separator: " "))\"\n" + literal(root.helpMessage(for: command, columns: 100))
            }
        } else {
            page += ".SH OPTIONS\n" + literal(optionsPart(of: root.helpMessage(columns: 100)))
        }
        for (title, body) in sections {
            page += ".SH \"\(title)\"\n\(body)\n"
        }
        return page
    }

    /// Every command and its path of names, depth first.
    public static func commands(_ command: any ParsableCommand.Type, path: [String]) -> [(
        [String], any ParsableCommand.Type
    )] {
        var all: [([String], any ParsableCommand.Type)] = [(path, command)]
        for sub in command.configuration.subcommands {
            let name = sub.configuration.commandName ?? String(describing: sub).lowercased()
            all += commands(sub, path: path + [name])
        }
        return all
    }

    /// The options of a command's help text, after its `OPTIONS:` heading: what comes before
    /// (the overview and the usage line) is the page's DESCRIPTION and SYNOPSIS already. The
    /// whole text when it has no such heading.
    public static func optionsPart(of help: String) -> String {
        guard let heading = help.range(of: "\nOPTIONS:\n") else { return help }
        return String(help[heading.upperBound...])
    }

    /// Text as roff paragraphs (blank lines separate them).
    public static func paragraphs(_ text: String) -> String {
        text.components(separatedBy: "\n\n").map { escape($0) }.joined(separator: "\n.PP\n")
    }

    private static func literal(_ text: String) -> String {
        ".nf\n"
            + text.split(separator: "\n", omittingEmptySubsequences: false).map { escapeLine(String($0)) }.joined(
                separator: "\n") + "\n.fi\n"
    }

    private static func escape(_ text: String) -> String {
        escapeLine(text.replacingOccurrences(of: "\n", with: " "))
    }

    /// Backslashes escaped, characters beyond ASCII as `\[u2026]`, and a leading dot or quote
    /// kept from being read as a request.
    private static func escapeLine(_ line: String) -> String {
        var escaped = ""
        for scalar in line.replacingOccurrences(of: "\\", with: "\\e").unicodeScalars {
            if scalar.isASCII {
                escaped.unicodeScalars.append(scalar)
            } else {
                escaped += String(format: "\\[u%04X]", scalar.value)
            }
        }
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }
}
