import Foundation
import ModelCore
import ModelRemote

/// Prints a watch's results (`fetch`/`count`/`aggregate --watch`): on a terminal with table
/// output, the table redrawn in place under a line naming the token; otherwise one JSON object
/// per line — the first result whole, then each change: for a fetch `{"token", "inserted",
/// "deleted", "updated", "moved"}`, for a count `{"token", "count"}`, for aggregates
/// `{"token", "groups"}` — so that a script can follow it with `while read`.
struct WatchOutput: Sendable {
    let format: OutputFormat
    /// Rows of the result as a table.
    let rows: @Sendable (WatchResult) -> [Record]
    /// A fetched object as a record.
    let object: @Sendable (ObjectSnapshot) -> Record

    var redraws: Bool { format == .table && Terminal.outputIsTerminal }

    /// Follows `query` on `store` until interrupted or the daemon ends the watch.
    func follow(_ query: WatchedQuery, store: String, client: DaemonClient) async throws {
        try await client.watch(query, in: store) { update in
            if redraws { redraw(update) } else { Terminal.write(line(update) + "\n") }
        }
    }

    private func redraw(_ update: WatchUpdate) {
        let writer = RecordWriter(format: .table)
        // Home the cursor and clear the screen, then draw the table afresh.
        Terminal.write("\u{1B}[H\u{1B}[2J")
        let time = ISO8601DateFormatter().string(from: Date())
        Terminal.write("token \(update.token.map { String($0.rawValue) } ?? "-") at \(time) (Ctrl-C stops)\n\n")
        writer.write(rows(update.result))
        writer.finish()
    }

    /// One JSON line for an update.
    func line(_ update: WatchUpdate) -> String {
        var members: [(String, String)] = [("token", update.token.map { String($0.rawValue) } ?? "null")]
        switch update.result {
        case .count(let count):
            members.append(("count", String(count)))
        case .groups:
            members.append(("groups", JSONText.array(rows(update.result).map(json))))
        case .objects(let objects):
            guard let difference = update.difference else {
                members.append(("objects", JSONText.array(objects.map { json(object($0)) })))
                break
            }
            members += [
                (
                    "inserted",
                    JSONText.array(
                        difference.inserted.map {
                            JSONText.object([("offset", String($0.offset)), ("object", json(object($0.object)))])
                        })
                ),
                (
                    "deleted",
                    JSONText.array(
                        difference.deleted.map {
                            JSONText.object([
                                ("offset", String($0.offset)), ("uri", JSONText.string($0.id.uriRepresentation)),
                            ])
                        })
                ),
                (
                    "updated",
                    JSONText.array(
                        difference.updated.map {
                            JSONText.object([
                                ("offset", String($0.offset)), ("object", json(object($0.object))),
                                ("changed", JSONText.array($0.changedProperties.map(JSONText.string))),
                            ])
                        })
                ),
                (
                    "moved",
                    JSONText.array(
                        difference.moved.map {
                            JSONText.object([
                                ("uri", JSONText.string($0.id.uriRepresentation)), ("from", String($0.from)),
                                ("to", String($0.to)),
                            ])
                        })
                ),
            ]
        }
        return JSONText.object(members)
    }

    private func json(_ record: Record) -> String {
        JSONText.object(record.map { ($0.0, $0.1.json) })
    }
}
