/// CSV as RFC 4180 writes it: fields with commas, quotes, line breaks or edge spaces are quoted.
/// nil is an empty, unquoted field; the empty string is `""`, so the two read back apart.
enum CSVText {
    static func field(_ text: String?) -> String {
        guard let text else { return "" }
        if text.isEmpty { return "\"\"" }
        let needsQuotes =
            text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
            || text.first == " " || text.last == " "
        return needsQuotes ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
    }

    static func record(_ fields: [String?]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }
}
