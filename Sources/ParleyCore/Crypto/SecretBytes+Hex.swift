import CSodium

/// Hex conversion for secrets, through libsodium's constant-time codec, into buffers
/// the caller can wipe (a Swift `String` could not be wiped). Used by key files.
extension SecretBytes {
    /// Parses exactly `count` bytes from `hex` (ASCII, either case, no separators).
    /// Returns nil for a wrong length or any non-hex character.
    public convenience init?(hex: ArraySlice<UInt8>, count: Int) {
        guard hex.count == count * 2 else { return nil }
        var ok = false
        self.init(count: count) { out in
            hex.withUnsafeBufferPointer { h in
                h.withMemoryRebound(to: CChar.self) { hc in
                    var written = 0
                    var end: UnsafePointer<CChar>? = nil
                    let rc = sodium_hex2bin(out, count, hc.baseAddress, hc.count, nil, &written, &end)
                    ok = rc == 0 && written == count && end == hc.baseAddress.map { $0 + hc.count }
                }
            }
        }
        if !ok { return nil }
    }

    /// Lower-case hex of the secret. The caller must wipe the result (`Sodium.wipe`).
    public func hexBytes() -> [UInt8] {
        // bin2hex writes a terminating NUL, hence the extra byte, dropped below.
        var out = [UInt8](repeating: 0, count: count * 2 + 1)
        out.withUnsafeMutableBufferPointer { o in
            o.withMemoryRebound(to: CChar.self) { oc in
                withPointer { p in _ = sodium_bin2hex(oc.baseAddress!, oc.count, p, count) }
            }
        }
        out.removeLast()
        return out
    }
}
