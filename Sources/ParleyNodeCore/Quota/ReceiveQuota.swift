import ParleyCore

/// How much incoming data this node keeps from one peer and from all peers together, and
/// the free disk space it never goes below (issue 15: a freshly generated identity could
/// stream 64 KiB chats until the disk was full, each stored and acknowledged).
///
/// Pure: the driver passes what is stored (`ReceiveQuota.Usage`), who the sender is to us
/// (`Standing`: a stranger, or a correspondent the user verified or wrote to), and the free space it measured; the decision says, chat by chat, whether to
/// store it or refuse it with a `RefusalReason` the sender records (its message stays queued
/// there). Tested in `ReceiveQuotaTests`.
public struct ReceiveQuota: Sendable, Equatable {
    /// Messages and body bytes stored from a peer (or from all peers).
    public struct Usage: Sendable, Equatable {
        public var messages: Int
        public var bytes: Int
        public init(messages: Int = 0, bytes: Int = 0) {
            self.messages = messages
            self.bytes = bytes
        }

        public static func + (a: Usage, b: Usage) -> Usage {
            Usage(messages: a.messages + b.messages, bytes: a.bytes + b.bytes)
        }
    }

    /// The allowance of one peer: kept messages and body bytes.
    public struct Allowance: Sendable, Equatable {
        public var messages: Int
        public var bytes: Int
        public init(messages: Int, bytes: Int) {
            self.messages = messages
            self.bytes = bytes
        }
    }

    /// Who a sender is to this node, for its allowance.
    public enum Standing: Sendable, Equatable {
        /// Not verified, and the user never wrote to it: all a freshly generated key is.
        case stranger
        /// Verified by the user, or written to by the user (a direct message): someone the
        /// user talks with. An attacker can mint keys, not make the user verify or answer
        /// them; and a real conversation must not be cut off after a few weeks.
        case correspondent
    }

    /// A stranger: what a freshly generated key can make us keep. 10,000 messages / 64 MiB
    /// is far more than an unanswered peer needs, and a fraction of any disk.
    public var stranger: Allowance
    /// A correspondent: 1,000,000 messages / 4 GiB, decades of a busy conversation
    /// (100 messages a day is 36,500 a year); what bounds it in practice is the total and
    /// the disk floor.
    public var correspondent: Allowance
    /// All peers together: many fresh identities each within their own allowance must
    /// still not fill the disk, and a whole history stays within a known size
    /// (2,000,000 messages / 16 GiB: years of 1,000 messages a day).
    public var total: Allowance
    /// Free bytes on the store's file system below which nothing more is taken in (the
    /// node keeps serving what it has: reading, sending, acknowledging what it already has).
    /// 256 MiB leaves room for SQLite's journal and the rest of the system.
    public var diskFloorBytes: Int

    /// Strangers together keep at most 1/16 of the total (1 GiB and 125,000 messages by
    /// default: hundreds of new colleagues' first messages, or 16 strangers at their full
    /// allowance). Each stranger's allowance alone does not bound the class: keys are free
    /// to mint, and six of them filled 397 MiB in 15 s (issue 29, M2). 15/16 of the total
    /// stays for correspondents whatever strangers send.
    public static let strangersShareDivisor = 16

    /// Strangers' messages are refused once free disk space would fall below the floor plus
    /// this (512 MiB free by default), so what strangers send can never bring the disk down
    /// to the floor, where messages from correspondents are refused too.
    public static let strangersDiskReserve = 256 << 20

    /// What strangers together may keep: `total` / `strangersShareDivisor`.
    public var strangers: Allowance {
        Allowance(
            messages: total.messages / Self.strangersShareDivisor, bytes: total.bytes / Self.strangersShareDivisor)
    }
    /// Free bytes below which strangers' messages are refused (`diskFloorBytes` +
    /// `strangersDiskReserve`).
    public var strangersDiskFloorBytes: Int { diskFloorBytes + Self.strangersDiskReserve }

    public static let standard = ReceiveQuota(
        stranger: Allowance(messages: 10_000, bytes: 64 << 20),
        correspondent: Allowance(messages: 1_000_000, bytes: 4 << 30),
        total: Allowance(messages: 2_000_000, bytes: 16 << 30),
        diskFloorBytes: 256 << 20)

    public init(stranger: Allowance, correspondent: Allowance, total: Allowance, diskFloorBytes: Int) {
        self.stranger = stranger
        self.correspondent = correspondent
        self.total = total
        self.diskFloorBytes = diskFloorBytes
    }

    /// `decide` for a sender, with the class limits on strangers: `strangers` is what all
    /// strangers together have stored, `intake` their shared rate (`StrangerIntake`, taken
    /// from only for a stranger's accepted messages). A stranger's message over the share,
    /// the rate, or the strangers' disk floor is refused with `strangersShare`.
    public func decide(
        bodySizes: [Int], peer: Usage, total: Usage, strangers: Usage, sender: Standing, freeDiskBytes: Int?,
        intake: inout StrangerIntake, now: MonotonicInstant
    ) -> [RefusalReason?] {
        let allowance = sender == .correspondent ? correspondent : stranger
        var peerUsed = peer
        var totalUsed = total
        var strangersUsed = strangers
        var free = freeDiskBytes
        let share = self.strangers
        return bodySizes.map { size in
            if let f = free, f - size < diskFloorBytes { return .diskFull }
            if peerUsed.messages + 1 > allowance.messages || peerUsed.bytes + size > allowance.bytes {
                return .peerQuota
            }
            if totalUsed.messages + 1 > self.total.messages || totalUsed.bytes + size > self.total.bytes {
                return .nodeQuota
            }
            if sender == .stranger {
                if let f = free, f - size < strangersDiskFloorBytes { return .strangersShare }
                if strangersUsed.messages + 1 > share.messages || strangersUsed.bytes + size > share.bytes {
                    return .strangersShare
                }
                if !intake.take(size: size, now: now) { return .strangersShare }
                strangersUsed = strangersUsed + Usage(messages: 1, bytes: size)
            }
            peerUsed = peerUsed + Usage(messages: 1, bytes: size)
            totalUsed = totalUsed + Usage(messages: 1, bytes: size)
            free = free.map { $0 - size }
            return nil
        }
    }

    /// For each incoming body (its size in bytes, in arrival order): nil to store it, or
    /// why it is refused. Accepted ones count against the allowance of the ones after them;
    /// a refused one does not, so a smaller message after a refused large one may still fit.
    /// `freeDiskBytes` nil means the driver could not measure it (the floor is not applied).
    public func decide(
        bodySizes: [Int], peer: Usage, total: Usage, sender: Standing, freeDiskBytes: Int?
    ) -> [RefusalReason?] {
        let allowance = sender == .correspondent ? correspondent : stranger
        var peerUsed = peer
        var totalUsed = total
        var free = freeDiskBytes
        return bodySizes.map { size in
            if let f = free, f - size < diskFloorBytes { return .diskFull }
            if peerUsed.messages + 1 > allowance.messages || peerUsed.bytes + size > allowance.bytes {
                return .peerQuota
            }
            if totalUsed.messages + 1 > self.total.messages || totalUsed.bytes + size > self.total.bytes {
                return .nodeQuota
            }
            peerUsed = peerUsed + Usage(messages: 1, bytes: size)
            totalUsed = totalUsed + Usage(messages: 1, bytes: size)
            free = free.map { $0 - size }
            return nil
        }
    }
}
