import Foundation
import ModelTesting

/// The built modeld.
func modeldExecutable() throws -> URL {
    guard let url = ModeldProcess.locateExecutable() else { throw CocoaError(.fileNoSuchFile) }
    return url
}
