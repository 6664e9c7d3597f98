import ArgumentParser
import Foundation
import ModelRemote
import ModelCore

/// `modelctl shell`: an interactive session.
struct Shell: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "An interactive session: stage changes, fetch with them, then save or roll back.",
        discussion: """
            Reads commands, one per line, from standard input (a terminal, or a pipe):
              insert ENTITY name=value…      update URI name=value…      delete URI…
              get URI…                       fetch ENTITY [--sort keys] [--limit N] [where PREDICATE]
              count ENTITY [where PREDICATE] pending      save      rollback      help      quit
            Nothing is visible to others until 'save'. Leaving with unsaved changes discards them.
            On a terminal, lines are edited as in psql (libedit): arrows and Emacs keys, up and down \
            through earlier lines, Ctrl-R to search them, Tab to complete commands and entity names; \
            the history is kept in ~/.modelctl_history (MODELCTL_HISTFILE, '' for none).
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "Stamped on the session's saves.") var author: String?

    func run() async throws {
        let format = global.format ?? (Terminal.outputIsTerminal ? .table : .jsonl)
        let failed = try await global.withClient { client in
            let session = try await client.openSession(on: global.storeName, author: author)
            let schema = try ResolvedSchema(try await client.schema(of: global.storeName))
            let interactive = Terminal.inputIsTerminal
            // On a terminal, lines are read with editing, history and completion (libedit).
            let editor = interactive ? LineEditor(words: schema.entityNames) : nil
            defer { editor?.save() }
            if interactive {
                Terminal.write("session on '\(global.storeName)'; 'help' lists commands, 'quit' leaves\n")
            }
            var lastFailure: Int32?
            while true {
                let next: String? = if let editor { editor.readLine(prompt: "modelctl> ") } else { readLine() }
                guard let line = next else { break }
                let command = line.trimmingCharacters(in: .whitespaces)
                if command.isEmpty || command.hasPrefix("#") { continue }
                if command == "quit" || command == "exit" { break }
                do {
                    try await ShellCommands(session: session, schema: schema, format: format).run(command)
                } catch let error as ModelError {
                    Terminal.error("error: \(error.message)\n")
                    lastFailure = CLI.exitCode(for: error)
                } catch let error as InputError {
                    Terminal.error("error: \(error.message)\n")
                    lastFailure = CLI.usage
                }
            }
            let discarded = try await session.close()
            if discarded > 0 { Terminal.error("discarded \(discarded) unsaved change(s)\n") }
            return interactive ? nil : lastFailure
        }
        if let failed { throw ExitCode(failed) }
    }
}

/// The shell's commands, on one session.
struct ShellCommands {
    let session: RemoteSession
    let schema: ResolvedSchema
    let format: OutputFormat

    static let help = """
        insert ENTITY name=value…        stage a new object (name:=json for JSON values)
        update URI name=value…           stage changes to an object
        delete URI…                      stage deletes (delete rules run at save)
        get URI…                         objects as this session sees them
        fetch ENTITY [--sort keys] [--limit N] [where PREDICATE]
        count ENTITY [where PREDICATE]   with this session's changes
        pending                          what is staged and not saved
        save                             save everything staged, as one transaction
        rollback                         discard everything staged
        quit                             leave (unsaved changes are discarded)

        """

    func run(_ line: String) async throws {
        let (head, predicate) = Self.splitWhere(line)
        let words = try Self.words(head)
        guard let verb = words.first else { return }
        let arguments = Array(words.dropFirst())
        switch verb {
        case "help":
            Terminal.write(Self.help)
        case "insert":
            guard let name = arguments.first else { throw InputError("insert ENTITY name=value…") }
            let (attributes, relationships) = try Assignments.parse(
                Array(arguments.dropFirst()), entity: try schema.entity(name))
            let id = try await session.insert(name, attributes: attributes, relationships: relationships)
            output([[("uri", .text(id.uriRepresentation))]])
        case "update":
            guard let uri = arguments.first else { throw InputError("update URI name=value…") }
            let id = try ValueInput.uri(uri)
            let (attributes, relationships) = try Assignments.parse(
                Array(arguments.dropFirst()), entity: try schema.entity(id.entityName))
            try await session.update(id, attributes: attributes, relationships: relationships)
        case "delete":
            try await session.stage(try arguments.map { .delete(try ValueInput.uri($0)) })
        case "get":
            let objects = try await session.objects(try arguments.map(ValueInput.uri))
            output(objects.map { $0.record(order: schema[$0.id.entityName]?.propertyOrder ?? []) })
        case "fetch", "count":
            var options = arguments
            guard !options.isEmpty else { throw InputError("\(verb) ENTITY [where PREDICATE]") }
            let entity = try schema.entity(options.removeFirst())
            var sort: String?, limit: Int?
            while let option = options.first {
                guard options.count >= 2, option == "--sort" || option == "--limit" else {
                    throw InputError("unknown option '\(option)'")
                }
                if option == "--sort" {
                    sort = options[1]
                } else {
                    guard let number = Int(options[1]) else { throw InputError("--limit takes a number") }
                    limit = number
                }
                options.removeFirst(2)
            }
            let descriptor = FetchDescriptor(
                entityName: entity.name,
                predicate: try predicate.map { text in
                    do { return try PredicateParser.parse(text) } catch let error as ModelError {
                        throw InputError("where: \(error.message)")
                    }
                }, sortBy: try sortKeys(sort), limit: limit)
            if verb == "count" {
                let count = try await session.count(descriptor)
                output([[("count", .number(Int64(count)))]])
            } else {
                output(try await session.fetch(descriptor).objects.map { $0.record(order: entity.propertyOrder) })
            }
        case "pending":
            let pending = try await session.describe()
            output(
                pending.inserted.map { [("change", .text("insert")), ("uri", .text($0.uriRepresentation))] }
                    + pending.updated.map { [("change", .text("update")), ("uri", .text($0.uriRepresentation))] }
                    + pending.deleted.map { [("change", .text("delete")), ("uri", .text($0.uriRepresentation))] })
        case "save":
            let saved = try await session.save()
            output(
                saved.remappedIdentifiers.sorted { $0.value.uriRepresentation < $1.value.uriRepresentation }.map {
                    [("temporary", .text($0.key.uriRepresentation)), ("uri", .text($0.value.uriRepresentation))]
                })
            Terminal.error("saved\(saved.token.map { " (history token \($0))" } ?? ": nothing to save")\n")
        case "rollback":
            let discarded = try await session.rollback()
            Terminal.error("discarded \(discarded) change(s)\n")
        default:
            throw InputError("unknown command '\(verb)'; 'help' lists them")
        }
    }

    private func output(_ records: [Record]) {
        let writer = RecordWriter(format: format)
        writer.write(records)
        writer.finish()
    }

    /// The line before a ` where ` outside quotes, and the predicate text after it.
    static func splitWhere(_ line: String) -> (String, String?) {
        var quote: Character?
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if line[index...].hasPrefix(" where ") {
                return (String(line[..<index]), String(line[line.index(index, offsetBy: 7)...]))
            }
            index = line.index(after: index)
        }
        return (line, nil)
    }

    /// Words separated by spaces; quotes (single or double) group words and are removed.
    static func words(_ text: String) throws -> [String] {
        var words: [String] = [], current = "", quote: Character?, inWord = false
        for character in text {
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
            } else if character == " " || character == "\t" {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        guard quote == nil else { throw InputError("a quote is not closed") }
        if inWord { words.append(current) }
        return words
    }
}
