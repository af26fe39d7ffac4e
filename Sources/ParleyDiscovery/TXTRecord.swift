/// DNS-SD TXT record data (RFC 6763 §6): a sequence of strings, each one length byte
/// followed by that many bytes, each string "key=value" (or a bare "key").
///
/// Pure: no I/O. `decode` takes bytes from the network and never traps on them.
public enum TXTRecord {
    /// RFC 6763 §6.1: one string is a length byte, so at most 255 bytes of "key=value".
    public static let maxEntryBytes = 255
    /// RFC 6763 §6.2 recommends keeping the whole record under 1300 bytes so a response
    /// fits one Ethernet packet; Parley's record is about 50 bytes.
    public static let maxEncodedBytes = 1300
    /// dns_sd passes TXT lengths as UInt16: nothing larger can be a valid record, so
    /// `decode` looks at no more than this many bytes.
    public static let maxDecodedInputBytes = 65_535
    /// `decode` keeps at most this many keys: Parley needs three, and a hostile record
    /// must not make us build a large dictionary.
    public static let maxDecodedKeys = 32

    /// Why `encodeStrict` refused a dictionary.
    public enum EncodingError: Error, Equatable, Sendable, CustomStringConvertible {
        /// Keys must be 1+ printable ASCII characters (0x20-0x7E) other than "=".
        case invalidKey(String)
        /// Two keys differ only in case; DNS-SD keys are case-insensitive.
        case duplicateKey(String)
        /// "key=value" is longer than ``TXTRecord/maxEntryBytes``.
        case entryTooLong(key: String, bytes: Int)
        /// The whole record is longer than ``TXTRecord/maxEncodedBytes``.
        case recordTooLong(bytes: Int)

        public var description: String {
            switch self {
            case let .invalidKey(k):
                return
                    "TXT key \(String(reflecting: k)) is invalid: use 1 or more printable ASCII characters other than '='"
            case let .duplicateKey(k):
                return "TXT key \(String(reflecting: k)) appears twice (keys are case-insensitive)"
            case let .entryTooLong(k, n):
                return
                    "TXT entry for key \(String(reflecting: k)) is \(n) bytes; at most \(TXTRecord.maxEntryBytes) fit"
            case let .recordTooLong(n):
                return "TXT record would be \(n) bytes; keep it under \(TXTRecord.maxEncodedBytes)"
            }
        }
    }

    /// Encodes `dict` in key order (so the same dictionary always gives the same bytes),
    /// leaving out entries that cannot be encoded (see ``EncodingError``) and entries
    /// that would make the record longer than ``maxEncodedBytes``. An empty dictionary
    /// gives `[0]`, the RFC 6763 §6.1 form of an empty TXT record.
    public static func encode(_ dict: [String: String]) -> [UInt8] {
        var out: [UInt8] = []
        var seen = Set<String>()
        for key in dict.keys.sorted() {
            guard let entry = try? entryBytes(key: key, value: dict[key] ?? ""),
                seen.insert(key.lowercased()).inserted,
                out.count + entry.count <= maxEncodedBytes
            else { continue }
            out += entry
        }
        return out.isEmpty ? [0] : out
    }

    /// Like ``encode(_:)`` but refuses a dictionary it cannot encode whole.
    public static func encodeStrict(_ dict: [String: String]) throws(EncodingError) -> [UInt8] {
        var out: [UInt8] = []
        var seen = Set<String>()
        for key in dict.keys.sorted() {
            out += try entryBytes(key: key, value: dict[key] ?? "")
            guard seen.insert(key.lowercased()).inserted else { throw .duplicateKey(key) }
        }
        guard out.count <= maxEncodedBytes else { throw .recordTooLong(bytes: out.count) }
        return out.isEmpty ? [0] : out
    }

    /// Decodes TXT record bytes. Keys are returned lower-case; the first occurrence of a
    /// key wins (RFC 6763 §6.4); a bare "key" gives an empty value. Skipped, never
    /// trapped on: empty strings, invalid keys, values that are not UTF-8, a final
    /// string whose length byte runs past the end, bytes past ``maxDecodedInputBytes``,
    /// and keys past ``maxDecodedKeys``.
    public static func decode(_ bytes: [UInt8]) -> [String: String] {
        var result: [String: String] = [:]
        let end = min(bytes.count, maxDecodedInputBytes)
        var i = 0
        while i < end, result.count < maxDecodedKeys {
            let length = Int(bytes[i])
            let start = i + 1
            i = start + length
            guard i <= end else { break }  // truncated final string
            guard length > 0 else { continue }
            let string = bytes[start..<i]
            let equals = string.firstIndex(of: UInt8(ascii: "="))
            let keyBytes = string[start..<(equals ?? i)]
            guard isValidKey(keyBytes) else { continue }
            let key = String(decoding: keyBytes, as: UTF8.self).lowercased()
            guard result[key] == nil else { continue }
            if let equals {
                guard let value = String(validating: string[(equals + 1)...], as: UTF8.self) else { continue }
                result[key] = value
            } else {
                result[key] = ""
            }
        }
        return result
    }

    private static func entryBytes(key: String, value: String) throws(EncodingError) -> [UInt8] {
        let keyBytes = Array(key.utf8)
        guard isValidKey(keyBytes[...]) else { throw .invalidKey(key) }
        let body = keyBytes + [UInt8(ascii: "=")] + Array(value.utf8)
        guard body.count <= maxEntryBytes else { throw .entryTooLong(key: key, bytes: body.count) }
        return [UInt8(body.count)] + body
    }

    /// RFC 6763 §6.4: a key is at least one printable US-ASCII character, not "=".
    private static func isValidKey(_ bytes: ArraySlice<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy { $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: "=") }
    }
}
