import Foundation
import ParleyCore
#if canImport(Glibc)
import Glibc
#endif

/// The optional office network key: 32 random bytes shared by every node allowed
/// on the network, written as 64 hex digits (`head -c32 /dev/urandom | xxd -p -c64`).
/// With it the handshake is Noise XXpsk0: a node without the key cannot finish a
/// handshake and learns nobody's identity.
enum NetworkKeyFile {
    enum Error: Swift.Error, CustomStringConvertible {
        case unreadable(String)
        case insecure(mode: UInt32)
        case malformed
        var description: String {
            switch self {
            case .unreadable(let why): return "cannot read: \(why)"
            case .insecure(let mode):
                return "permissions \(String(mode & 0o777, radix: 8)) are too open; run chmod 600 on it"
            case .malformed: return "must contain exactly 64 hex digits (32 bytes)"
            }
        }
    }

    static func load(path: String) throws -> SecretBytes {
        var st = stat()
        guard stat(path, &st) == 0 else { throw Error.unreadable(String(cString: strerror(errno))) }
        guard st.st_mode & 0o077 == 0 else { throw Error.insecure(mode: st.st_mode) }
        guard var data = FileManager.default.contents(atPath: path).map({ [UInt8]($0) }) else {
            throw Error.unreadable("no data")
        }
        defer { Sodium.wipe(&data) }
        var text = data.filter { !($0 == 0x0a || $0 == 0x0d || $0 == 0x20) }
        defer { Sodium.wipe(&text) }
        guard text.count == 64, var bytes = Sodium.fromHex(String(decoding: text, as: UTF8.self)) else { throw Error.malformed }
        return SecretBytes(consuming: &bytes)
    }
}
