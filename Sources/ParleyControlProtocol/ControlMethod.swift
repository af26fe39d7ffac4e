/// Names of the methods a client can call. docs/CONTROL.md describes each.
public enum ControlMethod {
    public static let nodeStatus = "node.status"
    public static let nodeWhoami = "node.whoami"
    public static let peersList = "peers.list"
    public static let peersConnect = "peers.connect"
    public static let messagesSend = "messages.send"
    public static let messagesList = "messages.list"
    public static let messagesSubscribe = "messages.subscribe"
    public static let trustVerify = "trust.verify"
    public static let trustShow = "trust.show"
    public static let trustReplace = "trust.replace"
    public static let trustAccept = "trust.accept"
    public static let trustBlock = "trust.block"
    public static let trustUnblock = "trust.unblock"
    public static let trustForget = "trust.forget"
    public static let peersNickname = "peers.nickname"
    /// Removed: it accepted "whatever change is pending". See `trust.replace`.
    public static let removedTrustAcceptChange = "trust.accept_change"
    public static let nodeRotateKey = "node.rotate_key"
    public static let messagesMarkRead = "messages.mark_read"
    public static let messagesForget = "messages.forget"
    public static let messagesSearch = "messages.search"
    public static let roomsList = "rooms.list"
    public static let roomsCreate = "rooms.create"
    public static let roomsAdd = "rooms.add"
    public static let roomsRemove = "rooms.remove"
    public static let roomsLeave = "rooms.leave"
    public static let roomsAccept = "rooms.accept"
    public static let roomsDecline = "rooms.decline"
    public static let roomsSetRole = "rooms.set_role"
    public static let roomsRename = "rooms.rename"
    public static let roomsSetPolicy = "rooms.set_policy"
    public static let filesSend = "files.send"
    public static let filesList = "files.list"
    public static let filesAccept = "files.accept"
    public static let filesReject = "files.reject"
    public static let filesCancel = "files.cancel"
    public static let filesThumbnail = "files.thumbnail"
    public static let filesOpen = "files.open"
    public static let doctorReport = "doctor.report"
    public static let doctorPeer = "doctor.peer"

    /// Every method, for dispatch tables and tests.
    public static let all: [String] = [
        nodeStatus, nodeWhoami, peersList, peersConnect, peersNickname, messagesSend, messagesList,
        messagesSubscribe, messagesMarkRead, messagesSearch, trustVerify, trustShow, trustReplace, trustAccept,
        trustBlock,
        trustUnblock, trustForget, nodeRotateKey, roomsList, roomsCreate, roomsAdd, roomsRemove, roomsLeave,
        roomsAccept, roomsDecline, roomsSetRole, roomsRename, roomsSetPolicy,
        messagesForget, messagesReply, messagesEdit, messagesDelete, messagesReact, nodeSetStatus,
        filesSend, filesList, filesAccept, filesReject, filesCancel, doctorReport, filesThumbnail, doctorPeer,
        filesOpen
    ]
}

/// The params of one method, tied to its name and its result type: the single place that
/// says what a method takes and returns.
public protocol ControlCallParams: Codable, Sendable, Hashable {
    associatedtype ResultType: Codable, Sendable, Hashable
    static var method: String { get }
    /// Every JSON member name the params may have; others are rejected as `invalidParams`.
    static var fieldNames: [String] { get }
    /// Checks what the types cannot (ranges, non-empty strings). Called by
    /// `JSONRPCRequest.decodeParams`; the CLI calls it too before sending.
    func validate() throws(JSONRPCError)
}

extension ControlCallParams {
    public func validate() throws(JSONRPCError) {}
}

/// Shared checks for params fields.
enum ParamCheck {
    static func peerSelector(_ value: String, field: String) throws(JSONRPCError) {
        guard !value.isEmpty else { throw .invalidParams("\"\(field)\" must not be empty") }
        guard value.utf8.count <= ControlLimits.maxPeerSelectorBytes else {
            throw .invalidParams("\"\(field)\" is longer than \(ControlLimits.maxPeerSelectorBytes) bytes")
        }
    }

    static func nonNegative(_ value: Int?, field: String) throws(JSONRPCError) {
        if let value, value < 0 { throw .invalidParams("\"\(field)\" must not be negative") }
    }
}
