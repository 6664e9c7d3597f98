import Foundation
import ModelCore
import ModelStorage

/// The stores that live at URLs of their own, by name: a JSON object in a file of the stores
/// directory, rewritten whole (to a temporary file, then renamed) on every change.
struct AttachedStores: Sendable {
    let file: URL

    /// Every attached store's name and URL, by name.
    func all() throws -> [(name: String, url: String)] {
        try urls().sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    func add(_ name: String, _ location: StoreLocation) throws {
        var urls = try urls()
        urls[name] = location.url
        try write(urls)
    }

    func remove(_ name: String) throws {
        var urls = try urls()
        guard urls.removeValue(forKey: name) != nil else { return }
        try write(urls)
    }

    private func urls() throws -> [String: String] {
        guard let data = try? Data(contentsOf: file) else { return [:] }
        guard let urls = try? JSONDecoder().decode([String: String].self, from: data) else {
            throw ModelError(
                .storageFailure,
                "\(file.path) is not the list of attached stores it should be; move it away to start without them")
        }
        return urls
    }

    private func write(_ urls: [String: String]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let temporary = file.appendingPathExtension("new")
        // Readable by the daemon's user only: a URL may hold a password.
        guard
            FileManager.default.createFile(
                atPath: temporary.path, contents: try encoder.encode(urls), attributes: [.posixPermissions: 0o600])
        else {
            throw ModelError(.storageFailure, "cannot write \(temporary.path): \(String(cString: strerror(errno)))")
        }
        guard rename(temporary.path, file.path) == 0 else {
            throw ModelError(.storageFailure, "cannot write \(file.path): \(String(cString: strerror(errno)))")
        }
    }
}
