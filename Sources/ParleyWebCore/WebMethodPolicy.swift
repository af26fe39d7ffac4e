import ParleyControlProtocol

/// Which control methods the page may call. An allow-list: a method added to the daemon
/// later (e.g. the files issue's `files.*`) reaches the browser only once someone has
/// thought about it and added it here (docs/WEB.md, "Methods").
///
/// Left out, and why: the page shows text from remote peers, so it is the part of Parley
/// most exposed to injection; if a script ever ran in it, what it could do should be
/// what a person does while chatting, nothing that cannot be undone or that reaches past
/// the conversation:
/// - `node.rotate_key`: replaces this node's key; a terminal action.
/// - `trust.forget`, `messages.forget`: erase trust or a whole history at once.
/// - `trust.verify`, `trust.accept`, `trust.unblock`: vouch for a key (a verified key's
///   files are accepted without asking and it gets a larger quota); done in the
///   confirmation window (`confirmWindowAllowed`) with a click no script of the page can make.
/// - `trust.replace`: moves a contact to another key; and `peers.connect`: makes the daemon
///   dial any address a script chooses (scanning the LAN from a browser tab). Both are done
///   in the confirmation window instead (`confirmWindowAllowed`), where the person types
///   the address or the other device's safety number themselves.
/// - `files.send`: takes any path the daemon can read; a script could send the person's
///   `~/.ssh/id_ed25519` to a peer. The page sends files by uploading them
///   (`POST /upload`), and the server calls `files.send` with the staged copy's path only.
///   The other `files.*` methods act on transfers that exist (accept, reject, cancel, list,
///   a thumbnail's bytes); accepting saves into the daemon's download directory under a
///   sanitized name, never where a script says.
public enum WebMethodPolicy {
    public static let allowed: Set<String> = [
        ControlMethod.nodeStatus, ControlMethod.nodeWhoami, ControlMethod.nodeSetStatus,
        ControlMethod.peersList, ControlMethod.peersNickname,
        ControlMethod.messagesSend, ControlMethod.messagesList, ControlMethod.messagesSubscribe,
        ControlMethod.messagesMarkRead, ControlMethod.messagesSearch,
        ControlMethod.messagesReply, ControlMethod.messagesEdit, ControlMethod.messagesDelete,
        ControlMethod.messagesReact,
        ControlMethod.trustShow, ControlMethod.trustBlock,
        ControlMethod.roomsList, ControlMethod.roomsCreate, ControlMethod.roomsAdd, ControlMethod.roomsRemove,
        ControlMethod.roomsLeave, ControlMethod.roomsAccept, ControlMethod.roomsDecline,
        ControlMethod.roomsSetRole, ControlMethod.roomsRename, ControlMethod.roomsSetPolicy,
        ControlMethod.filesList, ControlMethod.filesAccept, ControlMethod.filesReject, ControlMethod.filesCancel,
        ControlMethod.filesThumbnail
    ]

    public static func isAllowed(_ method: String) -> Bool { allowed.contains(method) }

    /// The confirmation window (`WebWindow.confirm`, another origin than the page): what a
    /// person does there, clicking and typing where no script in the page can do it for
    /// them. Everything that gives a key trust or reach is here and not in the page:
    /// `trust.verify` (which also raises its quota and auto-accepts its files),
    /// `trust.accept` (a held key), `trust.unblock`; `trust.block` too (also in the page:
    /// taking trust away is safe from anywhere). It names the keys (`node.whoami`,
    /// `trust.show`) and this node's addresses (`node.status`), adds a contact by an address the person
    /// types (`peers.connect`), and moves a contact to its new key (`trust.replace`) only
    /// with the safety number the person read from the other device, which the daemon
    /// checks (`confirmWindowRefusal`).
    public static let confirmWindowAllowed: Set<String> = [
        ControlMethod.nodeWhoami, ControlMethod.nodeStatus, ControlMethod.trustShow, ControlMethod.trustVerify,
        ControlMethod.trustAccept, ControlMethod.trustUnblock, ControlMethod.trustBlock, ControlMethod.trustReplace,
        ControlMethod.peersConnect
    ]

    public static func isAllowed(_ method: String, in window: WebWindow) -> Bool {
        switch window {
        case .page: return allowed.contains(method)
        case .confirm: return confirmWindowAllowed.contains(method)
        }
    }

    /// What the confirmation window may not send even among its methods: a key
    /// replacement without the safety number the person typed.
    public static func confirmWindowRefusal(_ request: JSONRPCRequest) -> JSONRPCError? {
        guard request.method == ControlMethod.trustReplace else { return nil }
        guard case .string(let typed)? = request.params?["safetyNumber"], typed.contains(where: \.isNumber) else {
            return JSONRPCError.invalidParams(
                "type the safety number shown on the other device: a key is replaced from the browser only with it")
        }
        return nil
    }

    public static func refusal(_ method: String, in window: WebWindow) -> JSONRPCError {
        switch window {
        case .page:
            if confirmWindowAllowed.contains(method) {
                return JSONRPCError(
                    .notPermitted,
                    "\(method) is done in Parley's confirmation window, where you type what the other device shows, "
                        + "or with `parley` in a terminal (docs/WEB.md, \"Changing who you talk to\")")
            }
            return refusal(method)
        case .confirm:
            return JSONRPCError(.notPermitted, "\(method) is not available in the confirmation window")
        }
    }

    public static func refusal(_ method: String) -> JSONRPCError {
        JSONRPCError(
            .notPermitted,
            "\(method) is not available from the browser; use `parley` in a terminal (docs/WEB.md, \"Methods\")")
    }
}
