import ArgumentParser
import Foundation
import ModelRemote
import ModelCore

/// `modelctl import ENTITY FILE`.
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Insert objects from JSON Lines or CSV, in batches, each batch one save.",
        discussion: """
            A JSON Lines file holds one object per line ({"name": "Kyoto", "startDate": "2026-04-01"}); \
            a CSV file has a header row of property names. 'uri' and 'version' columns (what export \
            writes) are ignored, but for this: an object whose uri names a subentity of ENTITY is \
            inserted as one of that subentity, so an export of an entity with subentities reads back \
            whole. Each batch is saved atomically: if one fails, the batches before it stay saved and \
            the command says which rows failed. The file is read as it goes, so a file \
            of any size needs a batch of memory. On a terminal a progress line shows rows, rate and \
            time left.
            """)

    enum FileFormat: String, ExpressibleByArgument { case jsonl, csv }

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The entity.") var entity: String
    @Argument(help: "The file ('-' for standard input).") var file: String
    @Option(name: .customLong("input-format"), help: "jsonl or csv (default: by the file's extension, .csv for CSV).")
    var inputFormat: FileFormat?
    @Option(parsing: .unconditional, help: "Objects per save.") var batchSize: Int = 1_000
    @Option(help: "Stamped on every save's history.") var author: String?
    @Flag(help: "Update existing objects that collide with a unique constraint instead of failing.") var upsert = false
    @Flag(help: "Ignore relationship columns (URIs of another store cannot be imported).") var skipRelationships = false

    func validate() throws {
        guard batchSize >= 1, batchSize <= 100_000 else {
            throw ValidationError("--batch-size must be between 1 and 100000")
        }
    }

    func run() async throws {
        let total = try await global.withClient { client in
            let kinds = try EntityKinds(
                self.entity, schema: ResolvedSchema(try await client.schema(of: global.storeName)))
            let entity = kinds.entity
            let reader = try ChunkReader(path: file)
            let format = inputFormat ?? (file.lowercased().hasSuffix(".csv") ? .csv : .jsonl)
            let progress = Progress(label: "import")
            // The last line of the last batch saved: where an import refused later may resume after.
            var batch: [ObjectEdit] = [], firstLine = 1, imported = 0, savedThrough = 0
            func flush(lastLine: Int) async throws {
                guard !batch.isEmpty else { return }
                do {
                    try await client.apply(
                        batch, in: global.storeName, author: author, uniquenessPolicy: upsert ? .upsert : .error)
                } catch let error as ModelError {
                    progress.finish(rows: imported)
                    throw ModelError(
                        error.code,
                        "lines \(firstLine)-\(lastLine) were not imported: \(error.message) (the \(imported.formatted()) objects before them were)",
                        context: error.context)
                }
                imported += batch.count
                savedThrough = lastLine
                batch = []
                progress.update(rows: imported, bytes: reader.bytesRead, totalBytes: reader.totalBytes)
            }
            func add(
                _ object: (attributes: [String: Value], relationships: [String: RelationshipValue]),
                as kind: ResolvedEntity, line: Int
            ) async throws {
                if batch.isEmpty { firstLine = line }
                batch.append(
                    .insert(
                        entity: kind.name, attributes: object.attributes,
                        relationships: skipRelationships ? [:] : object.relationships, id: nil))
                if batch.count >= batchSize { try await flush(lastLine: line) }
            }
            // A line refused on this side ends the import as the daemon's refusals do: saying
            // what was saved before it.
            func refuse(_ error: InputError, line: Int) -> InputError {
                let saved =
                    imported == 0
                    ? ""
                    : " (the \(imported.formatted()) objects up to line \(savedThrough) were imported, none after it)"
                return InputError("line \(line): \(error.message)\(saved)")
            }
            switch format {
            case .jsonl:
                var splitter = LineSplitter(), line = 0
                while true {
                    let chunk = try reader.next()
                    for text in splitter.lines(chunk ?? [], final: chunk == nil) {
                        line += 1
                        guard !text.allSatisfy(\.isWhitespace) else { continue }
                        do {
                            let json = try JSONValue.parse(text)
                            let kind = kinds.entity(ofObjectAt: json.member("uri")?.stringValue)
                            try await add(try ObjectInput.json(json, entity: kind), as: kind, line: line)
                        } catch let error as InputError {
                            throw refuse(error, line: line)
                        }
                    }
                    if chunk == nil { break }
                }
                try await flush(lastLine: line)
            case .csv:
                var parser = CSVParser(), header: [String]?, lastLine = 0
                while true {
                    let chunk = try reader.next()
                    for (fields, line) in try parser.records(chunk ?? [], final: chunk == nil) {
                        lastLine = line
                        guard let columns = header else {
                            header = try CSVInput.header(fields.map(\.text), of: kinds)
                            continue
                        }
                        if fields.count == 1, fields[0].text.isEmpty, !fields[0].quoted { continue }
                        do {
                            let uri = columns.firstIndex(of: "uri").map { fields[$0].text }
                            let kind = kinds.entity(ofObjectAt: uri)
                            try await add(
                                try CSVInput.object(fields, columns: columns, entity: kind), as: kind, line: line)
                        } catch let error as InputError {
                            throw refuse(error, line: line)
                        }
                    }
                    if chunk == nil { break }
                }
                try await flush(lastLine: lastLine)
            }
            progress.finish(rows: imported)
            return imported
        }
        Terminal.error("imported \(total.formatted()) objects into \(entity) of store '\(global.storeName)'\n")
    }
}

/// CSV rows as objects.
enum CSVInput {
    static let ignored: Set<String> = ["uri", "version"]

    /// The header's column names, checked: each a property of the entity or of one of its
    /// subentities (or ignored), each once. A byte order mark before the first is dropped.
    static func header(_ names: [String], of kinds: EntityKinds) throws -> [String] {
        var columns = names
        if let first = columns.first, first.hasPrefix("\u{FEFF}") { columns[0] = String(first.dropFirst()) }
        var seen: Set<String> = []
        for column in columns {
            guard seen.insert(column).inserted else {
                throw InputError("the CSV header names '\(column)' twice")
            }
            guard ignored.contains(column) || kinds.all.contains(where: { $0.has(column) }) else {
                throw InputError(
                    "the CSV header names '\(column)', which entity '\(kinds.entity.name)' (and its subentities) does not have"
                )
            }
        }
        return columns
    }

    static func object(_ fields: [CSVField], columns: [String], entity: ResolvedEntity) throws -> (
        attributes: [String: Value], relationships: [String: RelationshipValue]
    ) {
        guard fields.count == columns.count else {
            throw InputError("\(fields.count) fields, but the header has \(columns.count) columns")
        }
        var attributes: [String: Value] = [:], relationships: [String: RelationshipValue] = [:]
        for (column, field) in zip(columns, fields) where !ignored.contains(column) {
            // A column of another subentity, empty in this row.
            guard entity.has(column) || (field.text.isEmpty && !field.quoted) else {
                throw InputError("'\(column)' has a value, but entity '\(entity.name)' has no such property")
            }
            if let attribute = entity.attribute(column) {
                if field.text.isEmpty, !field.quoted || attribute.type != .string {
                    attributes[column] = .null
                } else {
                    attributes[column] = try ValueInput.text(field.text, as: attribute.type, name: column)
                }
            } else if let relationship = entity.relationship(column) {
                relationships[column] = try ValueInput.relationship(field.text, relationship)
            }
        }
        return (attributes, relationships)
    }
}

/// `modelctl export ENTITY`.
struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Write the objects of an entity as JSON Lines (or CSV, JSON), streamed: any number of objects needs a batch of memory.",
        discussion:
            "The output reads back with 'modelctl import'. Written to a file whose name ends in .csv, it is CSV unless --format says otherwise, as import reads such a file."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var query: QueryOptions
    @Option(help: ArgumentHelp("Only these properties: name,startDate.", valueName: "names")) var fields: String?
    @Option(
        name: .shortAndLong, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
    var output: String?

    func run() async throws {
        // A regular file is written beside its path and renamed onto it once whole, as a backup
        // is: a failed export leaves an older one at that path untouched.
        var partial: String?
        if let output {
            var info = stat()
            let isSpecial = stat(output, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG
            partial = isSpecial ? nil : output + ".partial-\(getpid())"
            let descriptor = open(partial ?? output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                Terminal.error("modelctl: cannot write \(output): \(String(cString: strerror(errno)))\n")
                throw ExitCode(CLI.failure)
            }
            dup2(descriptor, STDOUT_FILENO)
            close(descriptor)
        }
        let count: Int
        do {
            count = try await exported()
        } catch {
            if let partial { unlink(partial) }
            throw error
        }
        if let partial, let output {
            guard fsync(STDOUT_FILENO) == 0, rename(partial, output) == 0 else {
                Terminal.error("modelctl: cannot write \(output): \(String(cString: strerror(errno)))\n")
                unlink(partial)
                throw ExitCode(CLI.failure)
            }
        }
        if output != nil || !Terminal.outputIsTerminal { Terminal.error("exported \(count.formatted()) objects\n") }
    }

    /// Writes the objects to standard output; returns how many.
    private func exported() async throws -> Int {
        // A file named *.csv is CSV, as import takes it (by its extension), unless --format says.
        let format = global.format ?? (output?.lowercased().hasSuffix(".csv") == true ? .csv : .jsonl)
        return try await global.withClient { client in
            let kinds = try EntityKinds(
                query.entity, schema: ResolvedSchema(try await client.schema(of: global.storeName)))
            let entity = kinds.entity
            // CSV needs the same columns in every row (its subentities' too); JSON takes each
            // object's own properties. Properties named are checked by the daemon.
            let named = fieldList(self.fields)
            let fields =
                named
                ?? (format == .csv ? (query.excludeSubentities ? entity.propertyOrder : kinds.propertyOrder) : nil)
            let order = entity.propertyOrder
            let writer = RecordWriter(format: format)
            let count = try await client.fetch(
                FetchDescriptor(
                    entityName: entity.name, predicate: try query.parsedPredicate(),
                    includesSubentities: !query.excludeSubentities, propertiesToFetch: named),
                in: global.storeName
            ) { batch in
                writer.write(batch.map { $0.record(fields: fields, order: order) })
            }
            writer.finish()
            return count
        }
    }
}

/// An entity and its subentities, by name: what import and export of the entity take in.
struct EntityKinds {
    let entity: ResolvedEntity
    /// The entity, then its subentities.
    let all: [ResolvedEntity]

    init(_ name: String, schema: ResolvedSchema) throws {
        entity = try schema.entity(name)
        all = [entity] + entity.descendants.compactMap { try? schema.entity($0) }
    }

    /// The entity an object whose `uri` (export's) names is to be of: that subentity, when it is
    /// one of this entity's; the entity itself otherwise (an object of another store's entity
    /// of another name is imported as the one named).
    func entity(ofObjectAt uri: String?) -> ResolvedEntity {
        guard let uri, !uri.isEmpty, let id = try? PersistentIdentifier(uri: uri) else { return entity }
        return all.first { $0.name == id.entityName } ?? entity
    }

    /// The properties of the entity, then those its subentities add.
    var propertyOrder: [String] {
        var seen: Set<String> = [], order: [String] = []
        for kind in all { for name in kind.propertyOrder where seen.insert(name).inserted { order.append(name) } }
        return order
    }
}

extension ResolvedEntity {
    func has(_ property: String) -> Bool { attribute(property) != nil || relationship(property) != nil }
}

extension JSONValue {
    /// The member `name` of an object.
    func member(_ name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == name }?.1
    }

    var stringValue: String? {
        if case .string(let text) = self { text } else { nil }
    }
}

/// A `--fields` list: names separated by commas, spaces around them dropped.
func fieldList(_ text: String?) -> [String]? {
    text.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
}
