import Foundation
import ModelCore
import ModelStorage

/// The stores that live at URLs of their own, by name: a JSON object in a file of the stores
/// directory, rewritten whole on every change as the settings files are (``SettingsFile``: synced,
/// its directory too, so a power loss leaves the old list or the new one; readable by the
/// daemon's user only, since a URL may hold a password).
struct AttachedStores: Sendable {
    let file: URL

    /// Every attached store's name and URL, by name.
    func all() throws -> [(name: String, url: String)] {
        try urls().sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    func add(_ name: String, _ location: StoreLocation) throws {
        var urls = try urls()
        urls[name] = location.url
        try SettingsFile.write(urls, to: file)
    }

    func remove(_ name: String) throws {
        var urls = try urls()
        guard urls.removeValue(forKey: name) != nil else { return }
        try SettingsFile.write(urls, to: file)
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
}
