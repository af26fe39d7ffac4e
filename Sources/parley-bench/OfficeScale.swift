/// Sizes of the rows an office feels (11–13, issue 21 part 2). Kept apart from
/// `BenchScale` so these rows can change without touching the others'.
struct OfficeScale: Sendable {
    let smoke: Bool
    /// Room sizes of row 11, members including the sender. The protocol caps a room at
    /// `RoomLimits.maxMembers` (64); a size above that is reported as SKIP with the reason.
    let roomSizes: [Int]
    /// Timed fan-outs per room size (and as many rounds of direct sends); medians reported.
    let fanOutRounds: Int
    /// Row 12: messages in the built history, over `historyPeers` peers and `historyRooms` rooms.
    let historyMessages: Int
    let historyPeers: Int
    let historyRooms: Int
    /// Timed calls per measure of row 12 (median reported).
    let historyCalls: Int
    /// Row 13: peers that reconnect at once, each with `stormQueuedPerPeer` messages queued.
    let stormPeers: Int
    let stormQueuedPerPeer: Int
    /// Threads dialling at once in row 13 (each connection its own source address).
    let stormDialers: Int
    /// Upper bound on any one measurement loop.
    let rowSeconds: Double

    static let full = OfficeScale(
        smoke: false, roomSizes: [50, 64, 200], fanOutRounds: 20, historyMessages: 1_000_000, historyPeers: 200,
        historyRooms: 20, historyCalls: 50, stormPeers: 200, stormQueuedPerPeer: 5, stormDialers: 8, rowSeconds: 60)

    static let smokeTest = OfficeScale(
        smoke: true, roomSizes: [8], fanOutRounds: 3, historyMessages: 20_000, historyPeers: 20, historyRooms: 4,
        historyCalls: 5, stormPeers: 20, stormQueuedPerPeer: 2, stormDialers: 4, rowSeconds: 20)
}
