import CDNSSD

/// dns_sd error codes we act on, typed (the header declares them in an untyped enum).
enum DNSSDStatus {
    static let noError = DNSServiceErrorType(kDNSServiceErr_NoError)
    static let unknown = DNSServiceErrorType(kDNSServiceErr_Unknown)
    static let nameConflict = DNSServiceErrorType(kDNSServiceErr_NameConflict)
    /// mDNSResponder's "daemon not running". avahi's older dns_sd.h lacks it: avahi's
    /// compat library reports a missing avahi-daemon (or D-Bus) as kDNSServiceErr_Unknown,
    /// which we treat the same way. Kept so another libdns_sd behaves too.
    static let serviceNotRunning: DNSServiceErrorType = -65563

    /// "kDNSServiceErr_Unknown (-65537)", for log lines.
    static func describe(_ code: DNSServiceErrorType) -> String {
        let names: [Int: String] = [
            kDNSServiceErr_NoError: "NoError", kDNSServiceErr_Unknown: "Unknown",
            kDNSServiceErr_NoSuchName: "NoSuchName", kDNSServiceErr_NoMemory: "NoMemory",
            kDNSServiceErr_BadParam: "BadParam", kDNSServiceErr_BadReference: "BadReference",
            kDNSServiceErr_BadState: "BadState", kDNSServiceErr_BadFlags: "BadFlags",
            kDNSServiceErr_Unsupported: "Unsupported", kDNSServiceErr_NotInitialized: "NotInitialized",
            kDNSServiceErr_AlreadyRegistered: "AlreadyRegistered", kDNSServiceErr_NameConflict: "NameConflict",
            kDNSServiceErr_Invalid: "Invalid", kDNSServiceErr_Incompatible: "Incompatible",
            kDNSServiceErr_BadInterfaceIndex: "BadInterfaceIndex", kDNSServiceErr_Refused: "Refused",
            -65563: "ServiceNotRunning"
        ]
        return "kDNSServiceErr_\(names[Int(code)] ?? "?") (\(code))"
    }

    /// The reason sent with `.unavailable` when a call into avahi fails.
    static func unavailableReason(_ what: String, _ code: DNSServiceErrorType) -> String {
        "avahi-daemon is not reachable (\(what) failed: \(describe(code))); "
            + "mDNS discovery is off until it is: check that avahi-daemon and D-Bus are running"
    }
}
