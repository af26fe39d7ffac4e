/// `messages.forget`: delete the direct conversation with a peer (every message to and
/// from it, queued ones included), to make room under the receive quota or on the disk
/// (issue 15). The peer itself stays as it is (see `trust.forget` for its key).
public struct MessagesForgetParams: ControlCallParams {
    public typealias ResultType = MessagesForgetResult
    public static let method = ControlMethod.messagesForget
    public static let fieldNames = ["peer"]
    public var peer: String
    public init(peer: String) { self.peer = peer }
    public func validate() throws(JSONRPCError) { try ParamCheck.peerSelector(peer, field: "peer") }
}

public struct MessagesForgetResult: Codable, Sendable, Hashable {
    /// The peer's fingerprint.
    public var fingerprint: String
    /// How many messages were deleted.
    public var deleted: Int
    public init(fingerprint: String, deleted: Int) {
        self.fingerprint = fingerprint
        self.deleted = deleted
    }
}
