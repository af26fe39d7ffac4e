/// Pure helpers for DNS-SD instance names.
enum InstanceName {
    /// How many times we pick a new name ourselves after kDNSServiceErr_NameConflict
    /// before treating registration as failed (and retrying later from the requested
    /// name): avahi renames on network conflicts itself, so only local collisions
    /// (another program on this host with the same name) reach us, and a handful of
    /// those already means something is wrong.
    static let maxConflictRenames = 16

    /// `name` cut to at most `maxBytes` bytes of UTF-8 at a character boundary.
    static func truncated(_ name: String, maxBytes: Int = ServiceAdvertisement.maxInstanceNameBytes) -> String {
        var out = ""
        var used = 0
        for ch in name {
            let n = String(ch).utf8.count
            guard used + n <= maxBytes else { break }
            out.append(ch)
            used += n
        }
        return out
    }

    /// The next name to try after a conflict, in avahi's style: "alice" -> "alice #2",
    /// "alice #2" -> "alice #3"; the base is shortened so the result still fits.
    static func alternative(to name: String) -> String {
        var base = name
        var next = 2
        if let hash = name.lastIndex(of: "#"), hash > name.startIndex,
            name[name.index(before: hash)] == " "
        {
            let digits = name[name.index(after: hash)...]
            if let n = Int(digits), n >= 2, n < Int.max, String(n) == digits {
                base = String(name[..<name.index(before: hash)])
                next = n + 1
            }
        }
        let suffix = " #\(next)"
        return truncated(base, maxBytes: ServiceAdvertisement.maxInstanceNameBytes - suffix.utf8.count) + suffix
    }
}
