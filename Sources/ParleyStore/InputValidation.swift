/// Checks on values before they reach SQL. The daemon validates what it received from the
/// network, but the store is the last line: it must never record something it cannot give
/// back unchanged, and must answer with a typed error instead of trapping.
enum InputValidation {
    /// Ed25519 and X25519 public keys are 32 bytes: 64 hex characters.
    static let keyHexLength = 64
    /// Message ids are 16 random bytes: 32 hex characters.
    static let messageIDHexLength = 32

    static func requireIdentity(_ value: String, _ what: String) throws(StoreError) {
        try requireLowercaseHex(value, length: keyHexLength, what)
    }

    static func requireMessageID(_ value: String) throws(StoreError) {
        try requireLowercaseHex(value, length: messageIDHexLength, "message id")
    }

    static func requireLowercaseHex(_ value: String, length: Int, _ what: String) throws(StoreError) {
        var count = 0
        for byte in value.utf8 {
            let isHex =
                (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
            guard isHex else {
                throw .invalidArgument("\(what) must be lowercase hex")
            }
            count += 1
        }
        guard count == length else {
            throw .invalidArgument("\(what) must be \(length) hex characters, got \(count)")
        }
    }

    /// GRDB binds TEXT as a NUL-terminated C string, so an embedded NUL would silently cut
    /// the value short. Names, addresses and settings never legitimately contain one.
    static func requireNoNUL(_ value: String, _ what: String) throws(StoreError) {
        guard !value.utf8.contains(0) else {
            throw .invalidArgument("\(what) contains a NUL character")
        }
    }

    /// Clamps a caller's page size into 0...maximumPageSize.
    static func pageSize(_ limit: Int) -> Int {
        min(max(limit, 0), StoreLimits.maximumPageSize)
    }
}

/// Bounds on what one call may return.
public enum StoreLimits {
    /// Most rows one listing call returns, whatever limit is asked for: bounds the memory a
    /// single control request can make the daemon allocate. Callers page with cursors.
    public static let maximumPageSize = 10_000
}
