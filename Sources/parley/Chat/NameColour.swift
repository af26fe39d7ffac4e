/// The colour of a sender's name in `parley chat`: chosen from the identity key's
/// fingerprint, so it stays the same across names and restarts, and a peer who takes
/// someone's name does not take their colour. The palette leaves out black, white and the
/// status bar's reverse video, which some terminal themes make unreadable.
enum NameColour {
    /// SGR foreground codes: red, green, yellow, blue, magenta, cyan and their bright forms.
    static let palette = [31, 32, 33, 34, 35, 36, 91, 92, 93, 94, 95, 96]
    static let reset = "\u{1B}[39m"

    /// Index into `palette` for a fingerprint (FNV-1a over its bytes: stable, not Hasher,
    /// which is seeded per process).
    static func index(forKey key: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int(hash % UInt64(palette.count))
    }

    static func start(forKey key: String) -> String { "\u{1B}[\(palette[index(forKey: key)])m" }
}
