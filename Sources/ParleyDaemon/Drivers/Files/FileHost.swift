import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// One session's connection as the file driver uses it: `PeerConnection` in the daemon,
/// a link that records what it was given in the driver's tests.
protocol FileLink: AnyObject {
    var isWritable: Bool { get }
    var remoteFeatures: ProtocolFeatures { get }
    var remoteIdentityKey: IdentityPublicKey? { get }
    func send(_ record: AppRecord)
    func close(reason: CloseReason, text: String)
    /// Puts chunk `index` of `transfer` on the link, `fill` writing its `length` bytes in
    /// place (`PeerConnection`: straight into the outgoing record stream).
    func sendFileChunk<E: Error>(
        _ transfer: TransferID, index: UInt64, length: Int, _ fill: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E)
}

extension PeerConnection: FileLink {}

/// What the file driver needs from the rest of the node: narrow questions about sessions,
/// rooms, the receive quota and the disk, and the way out to the control side. `Node` is
/// the host (Files/Node+Files.swift); a test stands in for it.
protocol FileHost: AnyObject {
    /// The node's event loop: the driver's state lives on it (the loop is its lock).
    var loop: EventLoop { get }
    var log: Logger { get }

    // Sessions (`SessionDriver`).
    /// The peer of `link` if `link` carries its session (records on any other are ignored).
    func filePeer(of link: any FileLink) -> IdentityPublicKey?
    func fileLink(for peer: IdentityPublicKey) -> (any FileLink)?

    // Rooms. Throws when the store cannot tell (then nothing is decided on a guess).
    /// Whether `peer` is (still) a member of `room` as this node resolved it.
    func roomMembership(of peer: IdentityPublicKey, in room: RoomID) throws(StoreError) -> Bool
    /// Whether this node is a joined member of `room` and `peer` one of its members (an
    /// incoming room offer is taken only then).
    func roomAdmitsOffer(from peer: IdentityPublicKey, in room: RoomID) throws(StoreError) -> Bool

    // The receive quota and the disk (`FileAcceptPolicy`'s inputs).
    var fileAcceptPolicy: FileAcceptPolicy { get }
    func senderVerified(_ peer: IdentityPublicKey) -> Bool
    func quotaStanding(of sender: IdentityPublicKey) -> ReceiveQuota.Standing
    /// What is stored from `peer` and from everyone, file bytes counted. Throws when the
    /// store cannot count (never read as "nothing stored").
    func receiveUsage(of peer: IdentityPublicKey) throws(StoreError)
        -> (peer: ReceiveQuota.Usage, total: ReceiveQuota.Usage)
    /// Free bytes at `directory` (or its nearest existing parent), nil if unknown.
    func freeBytes(at directory: String) -> Int?

    /// Where received files go.
    var downloadDirectory: String { get }
    /// The state directory (`OutgoingCopies`: the daemon's own copies of offered files).
    var fileStateDirectory: String? { get }
    /// Read small sources' hashes and received chunks' writes on the loop (tests).
    var fileSettings: FileDriver.Settings { get }
    /// A thumbnail for an offered picture (empty when none).
    func makeThumbnail(path: String, mediaType: String, size: UInt64) -> EventLoopFuture<[UInt8]>

    /// Tells the observers (the control side).
    func emit(_ e: NodeEvent)
}
