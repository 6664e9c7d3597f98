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
            writes) are ignored. Each batch is saved atomically: if one fails, the batches before it \
            stay saved and the command says which rows failed. The file is read as it goes, so a file \
            of any size needs a batch of memory. On a terminal a progress line shows rows, rate and \
            time left.
            """)

    enum FileFormat: String, ExpressibleByArgument { case jsonl, csv }

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The entity.") var entity: String
    @Argument(help: "The file ('-' for standard input).") var file: String
    @Option(name: .customLong("input-format"), help: "jsonl or csv (default: by the file's extension, .csv for CSV).")
    var inputFormat: FileFormat?
    @Option(help: "Objects per save.") var batchSize: Int = 1_000
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
            let entity = try await resolvedEntity(self.entity, client: client, store: global.storeName)
            let reader = try ChunkReader(path: file)
            let format = inputFormat ?? (file.lowercased().hasSuffix(".csv") ? .csv : .jsonl)
            let progress = Progress(label: "import")
            var batch: [ObjectEdit] = [], firstLine = 1, imported = 0
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
                batch = []
                progress.update(rows: imported, bytes: reader.bytesRead, totalBytes: reader.totalBytes)
            }
            func add(_ object: (attributes: [String: Value], relationships: [String: RelationshipValue]), line: Int)
                async throws
            {
                if batch.isEmpty { firstLine = line }
                batch.append(
                    .insert(
                        entity: entity.name, attributes: object.attributes,
                        relationships: skipRelationships ? [:] : object.relationships, id: nil))
                if batch.count >= batchSize { try await flush(lastLine: line) }
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
                            try await add(try ObjectInput.json(try JSONValue.parse(text), entity: entity), line: line)
                        } catch let error as InputError {
                            throw InputError("line \(line): \(error.message)")
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
                            header = fields.map(\.text)
                            try CSVInput.check(header!, entity: entity, skipRelationships: skipRelationships)
                            continue
                        }
                        if fields.count == 1, fields[0].text.isEmpty, !fields[0].quoted { continue }
                        do {
                            try await add(try CSVInput.object(fields, columns: columns, entity: entity), line: line)
                        } catch let error as InputError {
                            throw InputError("line \(line): \(error.message)")
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

    static func check(_ columns: [String], entity: ResolvedEntity, skipRelationships: Bool) throws {
        for column in columns
        where !ignored.contains(column) && entity.attribute(column) == nil && entity.relationship(column) == nil {
            throw InputError("the CSV header names '\(column)', which entity '\(entity.name)' does not have")
        }
    }

    static func object(_ fields: [CSVField], columns: [String], entity: ResolvedEntity) throws -> (
        attributes: [String: Value], relationships: [String: RelationshipValue]
    ) {
        guard fields.count == columns.count else {
            throw InputError("\(fields.count) fields, but the header has \(columns.count) columns")
        }
        var attributes: [String: Value] = [:], relationships: [String: RelationshipValue] = [:]
        for (column, field) in zip(columns, fields) where !ignored.contains(column) {
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
        discussion: "The output reads back with 'modelctl import'.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var query: QueryOptions
    @Option(help: ArgumentHelp("Only these properties: name,startDate.", valueName: "names")) var fields: String?
    @Option(
        name: .shortAndLong, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
    var output: String?

    func run() async throws {
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: nil),
                let handle = FileHandle(forWritingAtPath: output)
            else {
                Terminal.error("modelctl: cannot write \(output)\n")
                throw ExitCode(CLI.failure)
            }
            dup2(handle.fileDescriptor, STDOUT_FILENO)
        }
        let format = global.format ?? .jsonl
        let count = try await global.withClient { client in
            let entity = try await resolvedEntity(query.entity, client: client, store: global.storeName)
            // CSV needs the same columns in every row; JSON takes each object's own properties.
            let fields =
                self.fields.map { $0.split(separator: ",").map(String.init) }
                ?? (format == .csv ? entity.propertyOrder : nil)
            let order = entity.propertyOrder
            let writer = RecordWriter(format: format)
            let count = try await client.fetch(
                FetchDescriptor(
                    entityName: entity.name, predicate: try query.parsedPredicate(),
                    includesSubentities: !query.excludeSubentities),
                in: global.storeName
            ) { batch in
                writer.write(batch.map { $0.record(fields: fields, order: order) })
            }
            writer.finish()
            return count
        }
        if output != nil || !Terminal.outputIsTerminal { Terminal.error("exported \(count.formatted()) objects\n") }
    }
}
