/// Why the node's key files could not be loaded or written. Each description says what
/// to do about it; none ever contains key material.
public enum KeyFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A key file is readable or writable by group or others (`mode` = permission bits).
    case insecurePermissions(path: String, mode: UInt32)
    /// The state directory grants group or others any access.
    case insecureDirectoryPermissions(path: String, mode: UInt32)
    /// A key file or the state directory belongs to another user.
    case wrongOwner(path: String, owner: UInt32, expected: UInt32)
    /// The path exists but is not a regular file (key) or directory (state directory).
    case wrongFileType(path: String, expected: String)
    /// A key file has the wrong size, header or encoding.
    case corrupt(path: String, reason: String)
    /// `noise.key` exists but `identity.key` does not: a new identity would silently
    /// replace one that peers know, so Parley refuses.
    case identityMissing(identityPath: String, noisePath: String)
    /// A system call failed (`errno` from Glibc).
    case io(operation: String, path: String, errno: Int32)

    public var description: String {
        switch self {
        case let .insecurePermissions(path, mode):
            return
                "permissions \(Self.octal(mode)) for '\(path)' are too open; this private key must not be accessible by others. Run: chmod 600 '\(path)'"
        case let .insecureDirectoryPermissions(path, mode):
            return
                "permissions \(Self.octal(mode)) for state directory '\(path)' are too open; it holds private keys. Run: chmod 700 '\(path)'"
        case let .wrongOwner(path, owner, expected):
            return
                "'\(path)' is owned by uid \(owner), but parleyd runs as uid \(expected); fix the owner or run as that user"
        case let .wrongFileType(path, expected):
            return "'\(path)' is not a \(expected)"
        case let .corrupt(path, reason):
            return
                "key file '\(path)' is corrupt (\(reason)); restore it from a backup. Parley will not replace it on its own"
        case let .identityMissing(identityPath, noisePath):
            return
                "'\(noisePath)' exists but '\(identityPath)' does not; refusing to create a new identity. Restore identity.key, or delete noise.key to start as a new identity"
        case let .io(operation, path, code):
            return "could not \(operation) '\(path)': \(Self.message(errno: code))"
        }
    }

    static func octal(_ mode: UInt32) -> String {
        let s = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }
}

#if canImport(Glibc)
    import Glibc
    extension KeyFileError {
        static func message(errno code: Int32) -> String {
            guard let s = strerror(code) else { return "errno \(code)" }
            return String(cString: s)
        }
    }
#endif
