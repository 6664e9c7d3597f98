/// A schema's words (an attribute's type, a delete rule) read from JSON with an error that
/// names the word given and the words there are, where the synthesized decoding said only that
/// it "cannot initialize" the type from it.
protocol NamedCaseDecoding: RawRepresentable, CaseIterable, Decodable where RawValue == String {
    /// What the word names, for the error: "an attribute type".
    static var described: String { get }
}

extension NamedCaseDecoding {
    init(decodingNamed decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let word = try container.decode(String.self)
        guard let value = Self(rawValue: word) else {
            let words = Self.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(word)' is not \(Self.described); use one of \(words)")
        }
        self = value
    }
}

extension AttributeType: NamedCaseDecoding {
    static var described: String { "an attribute type" }

    public init(from decoder: any Decoder) throws {
        try self.init(decodingNamed: decoder)
    }
}

extension DeleteRule: NamedCaseDecoding {
    static var described: String { "a delete rule" }

    public init(from decoder: any Decoder) throws {
        try self.init(decodingNamed: decoder)
    }
}
