/// How fast strangers together (senders the user neither verified nor wrote to) may make
/// this node store messages: one bucket of bytes and one of messages, shared by every
/// stranger (issue 29, M2: six fresh identities wrote 397 MiB in 15 s). Minting keys is
/// free, so a per-key rate would not bound the class; contacts (correspondents) are not
/// counted here at all, so a flood of strangers never slows them.
///
/// Pure: the driver passes the monotonic time. Tested in `ReceiveQuotaTests`.
public struct StrangerIntake: Sendable, Equatable {
    /// Bytes strangers may bring in at once: one stranger's whole allowance (64 MiB), so a
    /// new colleague's first burst (say a pasted log) is never cut by the rate alone.
    public static let burstBytes = 64 << 20
    /// Then 1 MiB a second: the strangers' share of the default quota (1 GiB) takes at
    /// least a quarter of an hour to fill, time to notice the log and block.
    public static let bytesPerSecond = 1 << 20
    /// Messages at once: one stranger's whole message allowance.
    public static let burstMessages = 10_000
    /// Then 50 messages a second: far above what people type, bounds the work of storing.
    public static let messagesPerSecond = 50

    public let burstBytes: Int
    public let bytesPerSecond: Int
    public let burstMessages: Int
    public let messagesPerSecond: Int
    private var bytes: Double
    private var messages: Double
    private var last: MonotonicInstant

    /// A full bucket at `now`.
    public init(
        now: MonotonicInstant, burstBytes: Int = Self.burstBytes, bytesPerSecond: Int = Self.bytesPerSecond,
        burstMessages: Int = Self.burstMessages, messagesPerSecond: Int = Self.messagesPerSecond
    ) {
        self.burstBytes = burstBytes
        self.bytesPerSecond = bytesPerSecond
        self.burstMessages = burstMessages
        self.messagesPerSecond = messagesPerSecond
        bytes = Double(burstBytes)
        messages = Double(burstMessages)
        last = now
    }

    /// Refills for the time since the last call, then takes one message of `size` bytes:
    /// true if it fits in both buckets (and is taken from both), false if not (nothing taken).
    public mutating func take(size: Int, now: MonotonicInstant) -> Bool {
        let seconds = Double(max(0, (now - last).wholeNanoseconds)) / 1e9
        bytes = min(Double(burstBytes), bytes + seconds * Double(bytesPerSecond))
        messages = min(Double(burstMessages), messages + seconds * Double(messagesPerSecond))
        last = max(last, now)
        guard bytes >= Double(size), messages >= 1 else { return false }
        bytes -= Double(size)
        messages -= 1
        return true
    }
}
