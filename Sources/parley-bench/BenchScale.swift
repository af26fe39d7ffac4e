/// How much of everything one run does. `--smoke` is the seconds-long version CI runs to
/// keep the benchmark from rotting; its numbers are not meant to be quoted.
struct BenchScale: Sendable {
    let smoke: Bool
    /// Calls per timing round of a public-key primitive (three rounds, best kept).
    let cryptoOps: Int
    /// Plaintext bytes per AEAD timing round, whatever the message size.
    let aeadBytes: Int
    /// In-process handshakes (row 2a/2b).
    let handshakes: Int
    /// Sequential connect + handshake + ping/pong against parleyd (row 2c/2d).
    let loopbackHandshakes: Int
    /// How long `openssl s_time` runs.
    let tlsSeconds: Int
    /// Messages with one in flight (row 3).
    let latencyMessages: Int
    /// Pipelined 64-byte messages (row 4), run once per window: how many sends may await
    /// their answer. Each side is reported at its best window, so neither is judged at a
    /// window that suits only the other.
    let throughputMessages: Int
    let throughputWindows: [Int]
    /// Messages each daemon runs under callgrind, one in flight (row 3i) and pipelined (4i).
    let callgrindLatencyMessages: Int
    let callgrindPipelinedMessages: Int
    /// Pipelined 64 KiB messages (row 5).
    let bulkMessages: Int
    let bulkWindow: Int
    /// Control socket round trips (row 6).
    let controlCalls: Int
    /// In-process peers held open against one daemon, and the idle window (row 7).
    let scaleClients: Int
    let idleSeconds: Int
    /// Idle window of the same daemon before any peer connected (row 7's reference).
    let baselineIdleSeconds: Int
    /// Upper bound on any one measurement loop: every loop stops by itself.
    var rowSeconds: Double

    // Rows 11–13, what an office feels (issue 21 part 2).
    /// Room sizes of row 11, members including the sender. The protocol caps a room at
    /// `RoomLimits.maxMembers` (1,000); a size above that is reported as SKIP with the reason.
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
    /// Upper bound on any one measurement loop of rows 11–13 (their daemons hold more, so
    /// the smoke run allows them longer than `rowSeconds`).
    let officeRowSeconds: Double

    static let full = BenchScale(
        smoke: false, cryptoOps: 2_000, aeadBytes: 64 << 20, handshakes: 2_000, loopbackHandshakes: 1_000,
        tlsSeconds: 10, latencyMessages: 1_000, throughputMessages: 10_000, throughputWindows: [32, 256, 1_000],
        callgrindLatencyMessages: 200, callgrindPipelinedMessages: 2_000,
        bulkMessages: 400, bulkWindow: 16, controlCalls: 5_000, scaleClients: 1_000, idleSeconds: 60,
        baselineIdleSeconds: 20, rowSeconds: 60,
        roomSizes: [50, 64, 200], fanOutRounds: 20, historyMessages: 1_000_000, historyPeers: 200,
        historyRooms: 20, historyCalls: 50, stormPeers: 200, stormQueuedPerPeer: 5, stormDialers: 8,
        officeRowSeconds: 60)

    static let smokeTest = BenchScale(
        smoke: true, cryptoOps: 100, aeadBytes: 2 << 20, handshakes: 50, loopbackHandshakes: 30,
        tlsSeconds: 1, latencyMessages: 30, throughputMessages: 500, throughputWindows: [16, 64],
        callgrindLatencyMessages: 5, callgrindPipelinedMessages: 50,
        bulkMessages: 10, bulkWindow: 4, controlCalls: 200, scaleClients: 20, idleSeconds: 3,
        baselineIdleSeconds: 1, rowSeconds: 8,
        roomSizes: [8], fanOutRounds: 3, historyMessages: 20_000, historyPeers: 20, historyRooms: 4,
        historyCalls: 5, stormPeers: 20, stormQueuedPerPeer: 2, stormDialers: 4, officeRowSeconds: 20)
}
