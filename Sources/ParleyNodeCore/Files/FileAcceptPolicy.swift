import ParleyCore

/// Whether an incoming offer is taken at once, waits for the local user, or is refused
/// (docs/PROTOCOL.md "Files", "Policy"). Pure: the driver passes the sender's trust, what
/// it already keeps from the sender and from everyone (the receive quota counts file bytes
/// like message bodies), and the free space of the download directory.
public struct FileAcceptPolicy: Sendable, Equatable {
    public enum Verdict: Equatable, Sendable {
        case accept
        case ask
        case refuse(String)
    }

    /// Largest file taken without asking, from a verified sender only.
    public var autoAcceptBytes: UInt64
    public var quota: ReceiveQuota

    /// 64 MiB: pictures, documents and small archives arrive without a question; a larger
    /// file (or any from a key nobody verified) waits for the user.
    public static let defaultAutoAcceptBytes: UInt64 = 64 << 20

    public init(autoAcceptBytes: UInt64 = defaultAutoAcceptBytes, quota: ReceiveQuota = .standard) {
        self.autoAcceptBytes = autoAcceptBytes
        self.quota = quota
    }

    /// `userAccepted`: the local user said yes (then only the hard limits apply). `standing`
    /// chooses the receive quota's allowance (a correspondent's or a stranger's);
    /// `senderVerified` alone allows taking a file without asking.
    public func decide(
        size: UInt64, senderVerified: Bool, standing: ReceiveQuota.Standing, userAccepted: Bool,
        peerUsage: ReceiveQuota.Usage, totalUsage: ReceiveQuota.Usage, freeDiskBytes: Int?
    ) -> Verdict {
        guard size <= FileLimits.maxFileBytes else {
            return .refuse("the file is larger than \(FileLimits.maxFileBytes >> 30) GiB")
        }
        let bytes = Int(size)
        if let free = freeDiskBytes, free - bytes < quota.diskFloorBytes {
            return .refuse("not enough disk space at the recipient")
        }
        let allowance = standing == .correspondent ? quota.correspondent : quota.stranger
        if peerUsage.bytes + bytes > allowance.bytes {
            return .refuse(
                standing == .correspondent
                    ? "over the recipient's quota for you"
                    : "over the recipient's quota for a sender it does not know (ask them to verify you or write to you)"
            )
        }
        if totalUsage.bytes + bytes > quota.total.bytes { return .refuse("over the recipient's storage quota") }
        if userAccepted { return .accept }
        return senderVerified && size <= autoAcceptBytes ? .accept : .ask
    }
}
