import ParleyCore

#if canImport(Glibc)
    import Glibc
#endif

/// Loads or creates the node's key files in the state directory:
/// `identity.key` (Ed25519 seed) and `noise.key` (X25519 private key), mode 0600,
/// in a directory of mode 0700. Format and rules: docs/PROTOCOL.md, "Key files".
///
/// Uses Glibc directly, not FileManager, so every security-relevant step is explicit:
/// O_NOFOLLOW opens, fstat on the opened descriptor (no check-then-open race),
/// O_EXCL temp files, fsync of file and directory, no-replace creation of identity.key.
public enum KeyFiles {
    /// Permission bits that must be clear on the directory and on key files (like ssh).
    static let groupOtherBits: UInt32 = 0o077
    static let fileMode: mode_t = 0o600
    static let directoryMode: mode_t = 0o700

    /// Loads both keys, creating what is missing. `created` is true iff a new identity
    /// was generated (first run).
    ///
    /// - Neither file: both are created (identity first, so a crash in between leaves the
    ///   recoverable state below).
    /// - Only identity.key: noise.key is created.
    /// - Only noise.key: refused (`identityMissing`): a lost identity is never replaced silently.
    /// - A file that exists but cannot be read, is too open or is corrupt: refused, never replaced.
    public static func loadOrCreate(stateDirectory: String) throws(KeyFileError) -> (keys: NodeKeys, created: Bool) {
        try prepareDirectory(stateDirectory)
        let identityPath = path(stateDirectory, .identity)
        let noisePath = path(stateDirectory, .noiseStatic)

        let identitySecret = try readKeyFile(identityPath, kind: .identity)
        let noiseSecret = try readKeyFile(noisePath, kind: .noiseStatic)

        let identity: IdentityKeyPair
        let created: Bool
        if let identitySecret {
            identity = try makeKey(identityPath) { () throws(KeyError) in try IdentityKeyPair(seed: identitySecret) }
            created = false
        } else {
            guard noiseSecret == nil else { throw .identityMissing(identityPath: identityPath, noisePath: noisePath) }
            identity = IdentityKeyPair.generate()
            try writeAtomically(identity.seed, kind: .identity, directory: stateDirectory, replace: false)
            created = true
        }

        let noise: NoiseStaticKeyPair
        if let noiseSecret {
            noise = try makeKey(noisePath) { () throws(KeyError) in try NoiseStaticKeyPair(privateKey: noiseSecret) }
        } else {
            noise = NoiseStaticKeyPair.generate()
            try writeAtomically(noise.privateKey, kind: .noiseStatic, directory: stateDirectory, replace: false)
        }
        return (NodeKeys(identity: identity, noiseStatic: noise), created)
    }

    /// Replaces noise.key atomically (Noise key rotation). Readers see the old or the new
    /// file, never a partial one. The caller must issue a new card for the new key.
    public static func writeNoiseStatic(_ key: NoiseStaticKeyPair, stateDirectory: String) throws(KeyFileError) {
        try prepareDirectory(stateDirectory)
        try writeAtomically(key.privateKey, kind: .noiseStatic, directory: stateDirectory, replace: true)
    }

    // MARK: - Directory

    static func path(_ directory: String, _ kind: KeyFileKind) -> String {
        directory.hasSuffix("/") ? directory + kind.fileName : directory + "/" + kind.fileName
    }

    /// Creates the directory (and missing parents) with mode 0700, or checks that an
    /// existing one is a directory owned by us with no group/other access. An existing
    /// directory is never chmod-ed: too-open permissions are the user's to fix.
    static func prepareDirectory(_ directory: String) throws(KeyFileError) {
        var prefix = directory.hasPrefix("/") ? "/" : ""
        let components = directory.split(separator: "/", omittingEmptySubsequences: true)
        var createdLast = false
        for component in components {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
            if mkdir(prefix, directoryMode) == 0 {
                createdLast = true
            } else if errno == EEXIST {
                createdLast = false
            } else {
                throw .io(operation: "create directory", path: prefix, errno: errno)
            }
        }
        // A directory we just made got 0700 & ~umask; make it exactly 0700.
        if createdLast, chmod(directory, directoryMode) != 0 {
            throw .io(operation: "chmod", path: directory, errno: errno)
        }
        var st = stat()
        guard stat(directory, &st) == 0 else { throw .io(operation: "stat", path: directory, errno: errno) }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw .wrongFileType(path: directory, expected: "directory") }
        guard st.st_uid == geteuid() else { throw .wrongOwner(path: directory, owner: st.st_uid, expected: geteuid()) }
        guard st.st_mode & groupOtherBits == 0 else {
            throw .insecureDirectoryPermissions(path: directory, mode: st.st_mode & 0o7777)
        }
    }

    // MARK: - Reading

    /// The file's secret, or nil if the file does not exist. Any other failure throws.
    static func readKeyFile(_ path: String, kind: KeyFileKind) throws(KeyFileError) -> SecretBytes? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .io(operation: "open", path: path, errno: errno)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .io(operation: "stat", path: path, errno: errno) }
        guard st.st_mode & S_IFMT == S_IFREG else { throw .wrongFileType(path: path, expected: "regular file") }
        guard st.st_uid == geteuid() else { throw .wrongOwner(path: path, owner: st.st_uid, expected: geteuid()) }
        guard st.st_mode & groupOtherBits == 0 else {
            throw .insecurePermissions(path: path, mode: st.st_mode & 0o7777)
        }
        guard Int(st.st_size) == kind.fileLength else {
            throw .corrupt(path: path, reason: "\(st.st_size) bytes, expected \(kind.fileLength)")
        }

        // One byte more than expected, so a file that grew since fstat is noticed.
        var buffer = [UInt8](repeating: 0, count: kind.fileLength + 1)
        defer { Sodium.wipe(&buffer) }
        var filled = 0
        while filled < buffer.count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(operation: "read", path: path, errno: errno)
            }
            if n == 0 { break }
            filled += n
        }
        var content = Array(buffer[..<filled])
        defer { Sodium.wipe(&content) }
        switch kind.decode(content) {
        case let .success(secret): return secret
        case let .failure(failure): throw .corrupt(path: path, reason: failure.reason)
        }
    }

    /// Builds a key object from a secret read from `path`, mapping a (theoretically
    /// impossible, the length was checked) key error to `corrupt`.
    private static func makeKey<K>(_ path: String, _ build: () throws(KeyError) -> K) throws(KeyFileError) -> K {
        do { return try build() } catch { throw .corrupt(path: path, reason: error.description) }
    }

    // MARK: - Writing

    /// Writes `secret` to the kind's file: a fresh 0600 temp file in the same directory
    /// (O_CREAT|O_EXCL|O_NOFOLLOW), fsync, then into place, then fsync of the directory.
    /// `replace: false` uses link(2), which fails if the file appeared meanwhile, so an
    /// existing key is never overwritten; `replace: true` uses rename(2).
    static func writeAtomically(
        _ secret: SecretBytes, kind: KeyFileKind, directory: String,
        replace: Bool
    ) throws(KeyFileError) {
        let finalPath = path(directory, kind)
        let tempPath = finalPath + ".tmp-" + Sodium.hex(Sodium.randomBytes(8))
        let fd = open(tempPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, fileMode)
        guard fd >= 0 else { throw .io(operation: "create", path: tempPath, errno: errno) }
        var tempExists = true
        defer { if tempExists { unlink(tempPath) } }
        do {
            defer { close(fd) }
            // Wiped here, by its only owner, so the wipe cannot hit a copy-on-write copy.
            var content = kind.encode(secret)
            defer { Sodium.wipe(&content) }
            try writeAndSync(fd: fd, content: content, path: tempPath)
        }
        if replace {
            guard rename(tempPath, finalPath) == 0 else {
                throw .io(operation: "rename into place", path: finalPath, errno: errno)
            }
        } else {
            guard link(tempPath, finalPath) == 0 else { throw .io(operation: "create", path: finalPath, errno: errno) }
            unlink(tempPath)
        }
        tempExists = false
        try syncDirectory(directory)
    }

    /// Sets mode 0600 exactly (the umask may have cleared bits), writes all of `content`,
    /// and fsyncs.
    private static func writeAndSync(fd: Int32, content: [UInt8], path: String) throws(KeyFileError) {
        guard fchmod(fd, fileMode) == 0 else { throw .io(operation: "chmod", path: path, errno: errno) }
        var written = 0
        while written < content.count {
            let n = content.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(operation: "write", path: path, errno: errno)
            }
            written += n
        }
        guard fsync(fd) == 0 else { throw .io(operation: "fsync", path: path, errno: errno) }
    }

    /// fsync on the directory makes the new directory entry itself durable.
    static func syncDirectory(_ directory: String) throws(KeyFileError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(operation: "open directory", path: directory, errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw .io(operation: "fsync directory", path: directory, errno: errno) }
    }
}
