/// modeld's version: the daemon reports it, and `modelctl --version` prints it.
public enum ModeldVersion {
    public static let current = "0.1.0"
}
