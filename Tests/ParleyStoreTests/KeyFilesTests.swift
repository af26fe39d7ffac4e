import Foundation
import ParleyCore
import XCTest

@testable import ParleyStore

#if canImport(Glibc)
    import Glibc
#endif

final class KeyFilesTests: XCTestCase {
    var base = ""
    /// A state directory that does not exist yet, two levels below a fresh temp dir.
    var stateDir: String { base + "/state/parley" }
    var identityPath: String { stateDir + "/identity.key" }
    var noisePath: String { stateDir + "/noise.key" }

    override func setUpWithError() throws {
        var template = Array((NSTemporaryDirectory() + "/parley-keyfiles-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        base = String(cString: try XCTUnwrap(made))
    }

    override func tearDownWithError() throws {
        // Restore permissions that tests removed, so the tree can be deleted.
        _ = chmod(stateDir, 0o700)
        try? FileManager.default.removeItem(atPath: base)
    }

    // MARK: - Helpers

    func mode(_ path: String) throws -> UInt32 {
        var st = stat()
        guard stat(path, &st) == 0 else { throw XCTSkip("stat \(path) failed: errno \(errno)") }
        return st.st_mode & 0o7777
    }

    func contents(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    func overwrite(_ path: String, with data: Data) throws {
        try data.write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(chmod(path, 0o600), 0)
    }

    func assertLoadFails(_ check: (KeyFileError) -> Void, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try KeyFiles.loadOrCreate(stateDirectory: stateDir), file: file, line: line) { error in
            guard let e = error as? KeyFileError else { return XCTFail("unexpected \(error)", file: file, line: line) }
            check(e)
        }
    }

    func directoryEntries() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: stateDir).sorted()
    }

    // MARK: - Creation and reuse

    func testFirstLoadCreatesKeysWithPrivateModes() throws {
        let (keys, created) = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        XCTAssertTrue(created)
        XCTAssertEqual(try mode(stateDir), 0o700)
        XCTAssertEqual(try mode(identityPath), 0o600)
        XCTAssertEqual(try mode(noisePath), 0o600)
        XCTAssertEqual(try directoryEntries(), ["identity.key", "noise.key"], "no temporary files left behind")

        // The documented format: header line, 64 hex digits, newline; the seed reproduces the key.
        let text = String(decoding: try contents(identityPath), as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("parley-identity-v1\n"))
        XCTAssertEqual(text.utf8.count, 84)
        let hex = String(text.dropFirst("parley-identity-v1\n".count).dropLast())
        var seed = try XCTUnwrap(Sodium.fromHex(hex))
        XCTAssertEqual(try IdentityKeyPair(seed: SecretBytes(consuming: &seed)).publicKey, keys.identity.publicKey)
        let noiseText = String(decoding: try contents(noisePath), as: UTF8.self)
        XCTAssertTrue(noiseText.hasPrefix("parley-noise-static-v1\n"))
        XCTAssertEqual(noiseText.utf8.count, 88)
    }

    func testModesAreExactEvenWithRestrictiveUmask() throws {
        // 0277 would give a 0500 directory and 0400 files; the daemon sets exact modes.
        let old = umask(0o277)
        defer { umask(old) }
        _ = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        XCTAssertEqual(try mode(stateDir), 0o700)
        XCTAssertEqual(try mode(identityPath), 0o600)
        XCTAssertEqual(try mode(noisePath), 0o600)
    }

    func testSecondLoadReusesKeys() throws {
        let first = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        let identityBytes = try contents(identityPath)
        let second = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        XCTAssertFalse(second.created)
        XCTAssertEqual(second.keys.identity.publicKey, first.keys.identity.publicKey)
        XCTAssertEqual(second.keys.noiseStatic.publicKey, first.keys.noiseStatic.publicKey)
        XCTAssertEqual(try contents(identityPath), identityBytes)
    }

    func testMissingNoiseKeyIsCreatedIdentityKept() throws {
        let first = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        XCTAssertEqual(unlink(noisePath), 0)
        let second = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        XCTAssertFalse(second.created)
        XCTAssertEqual(second.keys.identity.publicKey, first.keys.identity.publicKey)
        XCTAssertNotEqual(second.keys.noiseStatic.publicKey, first.keys.noiseStatic.publicKey)
        XCTAssertEqual(try mode(noisePath), 0o600)
    }

    func testWriteNoiseStaticRotatesKey() throws {
        let first = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        let rotated = NoiseStaticKeyPair.generate()
        try KeyFiles.writeNoiseStatic(rotated, stateDirectory: stateDir)
        let second = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        XCTAssertEqual(second.keys.noiseStatic.publicKey, rotated.publicKey)
        XCTAssertEqual(second.keys.identity.publicKey, first.keys.identity.publicKey)
        XCTAssertEqual(try mode(noisePath), 0o600)
        XCTAssertEqual(try directoryEntries(), ["identity.key", "noise.key"])
    }

    // MARK: - Permissions

    func testWorldReadableIdentityRefusedWithPathInMessage() throws {
        _ = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        let before = try contents(identityPath)
        XCTAssertEqual(chmod(identityPath, 0o644), 0)
        assertLoadFails { error in
            XCTAssertEqual(error, .insecurePermissions(path: self.identityPath, mode: 0o644))
            XCTAssertTrue(error.description.contains("'\(self.identityPath)'"), error.description)
            XCTAssertTrue(error.description.contains("0644"), error.description)
            XCTAssertTrue(error.description.contains("chmod 600"), error.description)
        }
        XCTAssertEqual(try mode(identityPath), 0o644, "the daemon must not fix permissions silently")
        XCTAssertEqual(try contents(identityPath), before)
    }

    func testGroupReadableNoiseKeyRefused() throws {
        _ = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        XCTAssertEqual(chmod(noisePath, 0o640), 0)
        assertLoadFails { XCTAssertEqual($0, .insecurePermissions(path: self.noisePath, mode: 0o640)) }
    }

    func testOpenStateDirectoryRefusedAndNotChanged() throws {
        _ = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        XCTAssertEqual(chmod(stateDir, 0o755), 0)
        assertLoadFails { error in
            XCTAssertEqual(error, .insecureDirectoryPermissions(path: self.stateDir, mode: 0o755))
            XCTAssertTrue(error.description.contains("chmod 700"), error.description)
        }
        XCTAssertEqual(try mode(stateDir), 0o755)
        XCTAssertThrowsError(try KeyFiles.writeNoiseStatic(.generate(), stateDirectory: stateDir))
    }

    func testPreexistingOpenDirectoryRefusedBeforeAnyKeyIsWritten() throws {
        XCTAssertEqual(mkdir(base + "/state", 0o700), 0)
        XCTAssertEqual(mkdir(stateDir, 0o700), 0)
        XCTAssertEqual(chmod(stateDir, 0o750), 0)
        assertLoadFails { XCTAssertEqual($0, .insecureDirectoryPermissions(path: self.stateDir, mode: 0o750)) }
        XCTAssertEqual(try directoryEntries(), [])
    }

    func testStateDirectoryThatIsAFileRefused() throws {
        XCTAssertEqual(mkdir(base + "/state", 0o700), 0)
        try overwrite(stateDir, with: Data("x".utf8))
        assertLoadFails { XCTAssertEqual($0, .wrongFileType(path: self.stateDir, expected: "directory")) }
    }

    // MARK: - Corruption and never regenerating the identity

    func testCorruptIdentityRefusedAndKept() throws {
        _ = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        let header = "parley-identity-v1\n"
        let corruptions: [(String, Data)] = [
            ("not hex", Data((header + String(repeating: "zz", count: 32) + "\n").utf8)),
            ("wrong header", Data(("parley-noise-v1\n" + String(repeating: "ab", count: 34) + "\n").utf8)),
            ("short", Data((header + "abcd\n").utf8)),
            ("empty", Data()),
            ("no final newline", Data((header + String(repeating: "ab", count: 32) + "x").utf8))
        ]
        for (label, bytes) in corruptions {
            try overwrite(identityPath, with: bytes)
            assertLoadFails { error in
                guard case let .corrupt(path, _) = error else { return XCTFail("\(label): \(error)") }
                XCTAssertEqual(path, self.identityPath, label)
                XCTAssertTrue(error.description.contains(self.identityPath), label)
            }
            XCTAssertEqual(try contents(identityPath), bytes, "\(label): corrupt identity must be left alone")
        }
    }

    func testSwappedFilesRefused() throws {
        _ = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        let identity = try contents(identityPath)
        let noise = try contents(noisePath)
        try overwrite(identityPath, with: noise)
        try overwrite(noisePath, with: identity)
        assertLoadFails { error in
            guard case let .corrupt(path, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path, self.identityPath)
        }
    }

    func testCorruptNoiseKeyRefusedNotReplaced() throws {
        _ = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        let garbage = Data(repeating: 0x41, count: 88)
        try overwrite(noisePath, with: garbage)
        assertLoadFails { error in
            guard case let .corrupt(path, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path, self.noisePath)
        }
        XCTAssertEqual(try contents(noisePath), garbage)
    }

    func testIdentityNotRecreatedWhenOnlyNoiseKeyExists() throws {
        _ = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        XCTAssertEqual(unlink(identityPath), 0)
        assertLoadFails {
            XCTAssertEqual($0, .identityMissing(identityPath: self.identityPath, noisePath: self.noisePath))
        }
        XCTAssertEqual(try directoryEntries(), ["noise.key"])
    }

    func testUnopenableIdentityIsNeverReplaced() throws {
        _ = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        // A symbolic link (not followed) and a directory in place of identity.key: both are
        // "exists but unusable", which must be an error, not a reason to make a new identity.
        XCTAssertEqual(unlink(identityPath), 0)
        XCTAssertEqual(symlink(noisePath, identityPath), 0)
        assertLoadFails { error in
            guard case let .io(_, path, code) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path, self.identityPath)
            XCTAssertEqual(code, ELOOP)
        }
        XCTAssertEqual(unlink(identityPath), 0)
        XCTAssertEqual(mkdir(identityPath, 0o700), 0)
        assertLoadFails { XCTAssertEqual($0, .wrongFileType(path: self.identityPath, expected: "regular file")) }
        XCTAssertEqual(try directoryEntries(), ["identity.key", "noise.key"])
    }

    func testNewIdentityNeverOverwritesAnExistingFile() throws {
        // The no-replace write used for identity.key fails if the file appeared meanwhile.
        _ = try KeyFiles.loadOrCreate(stateDirectory: stateDir)
        let before = try contents(identityPath)
        XCTAssertThrowsError(
            try KeyFiles.writeAtomically(
                IdentityKeyPair.generate().seed, kind: .identity,
                directory: stateDir, replace: false)
        ) { error in
            guard case let .io(_, path, code) = error as? KeyFileError ?? .io(operation: "", path: "", errno: 0) else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(path, self.identityPath)
            XCTAssertEqual(code, EEXIST)
        }
        XCTAssertEqual(try contents(identityPath), before)
        XCTAssertEqual(try directoryEntries(), ["identity.key", "noise.key"], "temporary file removed")
    }
}
