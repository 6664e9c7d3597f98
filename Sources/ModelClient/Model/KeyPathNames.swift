extension AnyKeyPath {
    /// The key path as a person can read it in an error. Linux prints a key path to a computed
    /// property without the property's name, so that one is described by its types.
    var readableName: String {
        let text = "\(self)"
        guard text.contains("<computed") else { return text }
        return "a property of \(Self.rootType) (of type \(Self.valueType))"
    }
}
