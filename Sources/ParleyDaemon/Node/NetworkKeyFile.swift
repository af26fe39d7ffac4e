import Foundation
import ParleyCore

#if canImport(Glibc)
    import Glibc
#endif

/// The optional office network key: 32 random bytes shared by every node allowed
/// on the network, written as 64 hex digits (`head -c32 /dev/urandom | xxd -p -c64`).
/// With it the handshake is Noise XXpsk0: a node without the key cannot finish a
/// handshake and learns nobody's identity.
///
/// File format (docs/PROTOCOL.md "Optional network key"): exactly 64 hex digits, upper or
/// lower case; ASCII spaces, CR and LF anywhere are ignored, so `xxd` output, a trailing
/// newline and CRLF files all work. Anything else (a tab, a comment, a BOM, fewer or more
/// digits) is refused rather than guessed at: a key that silently parsed differently on
/// two nodes would only show as handshakes that fail.
enum NetworkKeyFile {
    enum Error: Swift.Error, CustomStringConvertible, Equatable {
        case unreadable(String)
        case insecure(path: String, mode: UInt32)
        case malformed
        var description: String {
            switch self {
            case .unreadable(let why): return "cannot read: \(why)"
            case let .insecure(path, mode):
                // The same wording as the key files (KeyFileError.insecurePermissions), like ssh.
                return
                    "permissions \(Self.octal(mode)) for '\(path)' are too open; the network key must not be accessible by others. Run: chmod 600 '\(path)'"
            case .malformed:
                return
                    "must contain exactly 64 hex digits (32 bytes); spaces and line breaks are ignored, nothing else is allowed"
            }
        }

        /// `0644`: four octal digits, as `ls` and `chmod` users read them.
        static func octal(_ mode: UInt32) -> String {
            let digits = String(mode & 0o7777, radix: 8)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }
    }

    static func load(path: String) throws -> SecretBytes {
        var st = stat()
        guard stat(path, &st) == 0 else { throw Error.unreadable(String(cString: strerror(errno))) }
        guard st.st_mode & 0o077 == 0 else { throw Error.insecure(path: path, mode: st.st_mode) }
        guard var data = FileManager.default.contents(atPath: path).map({ [UInt8]($0) }) else {
            throw Error.unreadable("no data")
        }
        defer { Sodium.wipe(&data) }
        return try parse(&data)
    }

    /// The key in a file's bytes (see the format above).
    static func parse(_ data: inout [UInt8]) throws -> SecretBytes {
        var text = data.filter { !($0 == 0x0a || $0 == 0x0d || $0 == 0x20) }
        defer { Sodium.wipe(&text) }
        guard text.count == 64, var bytes = Sodium.fromHex(String(decoding: text, as: UTF8.self)) else {
            throw Error.malformed
        }
        return SecretBytes(consuming: &bytes)
    }
}
