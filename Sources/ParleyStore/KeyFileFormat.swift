import ParleyCore

/// Which key a file holds, and its on-disk text format:
/// a header line naming the kind and version, then 64 lower-case hex digits and `\n`.
/// The header catches swapped or foreign files; hex keeps the file printable.
/// Details: docs/PROTOCOL.md, "Key files".
enum KeyFileKind: Sendable {
    case identity
    case noiseStatic

    /// Both kinds store a 32-byte secret (Ed25519 seed / X25519 private key).
    static let secretLength = 32

    var fileName: String {
        switch self {
        case .identity: return "identity.key"
        case .noiseStatic: return "noise.key"
        }
    }

    var header: [UInt8] {
        switch self {
        case .identity: return Array("parley-identity-v1\n".utf8)
        case .noiseStatic: return Array("parley-noise-static-v1\n".utf8)
        }
    }

    /// The exact size of a valid file: header, hex, newline.
    var fileLength: Int { header.count + 2 * Self.secretLength + 1 }

    /// The file's bytes. The caller must wipe the result.
    func encode(_ secret: SecretBytes) -> [UInt8] {
        var hex = secret.hexBytes()
        defer { Sodium.wipe(&hex) }
        var out = [UInt8]()
        out.reserveCapacity(fileLength)
        out += header
        out += hex
        out.append(UInt8(ascii: "\n"))
        return out
    }

    /// Parses a file's bytes; the reason string says what is wrong (never the content).
    func decode(_ bytes: [UInt8]) -> Result<SecretBytes, DecodeFailure> {
        guard bytes.count == fileLength else {
            return .failure(DecodeFailure(reason: "\(bytes.count) bytes, expected \(fileLength)"))
        }
        guard bytes.starts(with: header) else {
            return .failure(
                DecodeFailure(reason: "missing header line '\(String(decoding: header.dropLast(), as: UTF8.self))'"))
        }
        guard bytes.last == UInt8(ascii: "\n") else {
            return .failure(DecodeFailure(reason: "no newline after the key"))
        }
        guard let secret = SecretBytes(hex: bytes[header.count..<(bytes.count - 1)], count: Self.secretLength) else {
            return .failure(DecodeFailure(reason: "key is not \(2 * Self.secretLength) hex digits"))
        }
        return .success(secret)
    }

    struct DecodeFailure: Error {
        let reason: String
    }
}
