import Foundation
import XCTest

/// The base of the store tests: each test gets its own private (0700) temporary directory,
/// where it opens a real SQLite file, removed after the test.
class StoreDirectoryTestCase: XCTestCase {
    var directory: String!

    override func setUpWithError() throws {
        directory =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
