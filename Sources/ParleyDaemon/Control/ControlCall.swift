import ParleyControlProtocol

/// A request whose params have been decoded into their typed form: the one place a
/// control request's params are decoded. The connection decodes each line's request once
/// (`ControlCall.decode`), looks at the result to batch pipelined sends, and hands the
/// same value to `ControlDispatcher`, so a `messages.send` is never decoded twice.
enum ControlCall: Sendable {
    case nodeStatus(NodeStatusParams)
    case nodeWhoami(NodeWhoamiParams)
    case nodeRotateKey(NodeRotateKeyParams)
    case peersList(PeersListParams)
    case peersConnect(PeersConnectParams)
    case messagesSend(MessagesSendParams)
    case messagesList(MessagesListParams)
    case messagesSubscribe(MessagesSubscribeParams)
    case messagesMarkRead(MessagesMarkReadParams)
    case messagesForget(MessagesForgetParams)
    case messagesSearch(MessagesSearchParams)
    case trustVerify(TrustVerifyParams)
    case trustShow(TrustShowParams)
    case trustReplace(TrustReplaceParams)
    case trustAccept(TrustAcceptParams)
    case trustBlock(TrustBlockParams)
    case trustUnblock(TrustUnblockParams)
    case trustForget(TrustForgetParams)
    case peersNickname(PeersNicknameParams)
    case roomsList(RoomsListParams)
    case roomsCreate(RoomsCreateParams)
    case roomsAdd(RoomsAddParams)
    case roomsRemove(RoomsRemoveParams)
    case roomsLeave(RoomsLeaveParams)
    case roomsAccept(RoomsAcceptParams)
    case roomsDecline(RoomsDeclineParams)
    case roomsSetRole(RoomsSetRoleParams)
    case roomsRename(RoomsRenameParams)
    case roomsSetPolicy(RoomsSetPolicyParams)
    case messagesReply(MessagesReplyParams)
    case messagesEdit(MessagesEditParams)
    case messagesDelete(MessagesDeleteParams)
    case messagesReact(MessagesReactParams)
    case nodeSetStatus(NodeSetStatusParams)
    case filesSend(FilesSendParams)
    case filesList(FilesListParams)
    case filesAccept(FilesAcceptParams)
    case filesReject(FilesRejectParams)
    case filesCancel(FilesCancelParams)
    case doctorReport(DoctorReportParams)
    case doctorPeer(DoctorPeerParams)
    case filesThumbnail(FilesThumbnailParams)
    case filesOpen(FilesOpenParams)

    /// The route table: method name → how its params are decoded. Each entry is keyed by
    /// its params type's own `method`, so a name and its params cannot drift apart; what
    /// each call does is `ControlDispatcher.handle(_:id:deliveryWaiter:)`, an exhaustive
    /// switch over this enum.
    static let routes: [String: ControlRoute] = Dictionary(
        uniqueKeysWithValues: [
            ControlRoute.route(NodeStatusParams.self, ControlCall.nodeStatus),
            ControlRoute.route(NodeWhoamiParams.self, ControlCall.nodeWhoami),
            ControlRoute.route(NodeRotateKeyParams.self, ControlCall.nodeRotateKey),
            ControlRoute.route(PeersListParams.self, ControlCall.peersList),
            ControlRoute.route(PeersConnectParams.self, ControlCall.peersConnect),
            ControlRoute.route(MessagesSendParams.self, ControlCall.messagesSend),
            ControlRoute.route(MessagesListParams.self, ControlCall.messagesList),
            ControlRoute.route(MessagesSubscribeParams.self, ControlCall.messagesSubscribe),
            ControlRoute.route(MessagesMarkReadParams.self, ControlCall.messagesMarkRead),
            ControlRoute.route(MessagesForgetParams.self, ControlCall.messagesForget),
            ControlRoute.route(MessagesSearchParams.self, ControlCall.messagesSearch),
            ControlRoute.route(TrustVerifyParams.self, ControlCall.trustVerify),
            ControlRoute.route(TrustShowParams.self, ControlCall.trustShow),
            ControlRoute.route(TrustReplaceParams.self, ControlCall.trustReplace),
            ControlRoute.route(TrustAcceptParams.self, ControlCall.trustAccept),
            ControlRoute.route(TrustBlockParams.self, ControlCall.trustBlock),
            ControlRoute.route(TrustUnblockParams.self, ControlCall.trustUnblock),
            ControlRoute.route(TrustForgetParams.self, ControlCall.trustForget),
            ControlRoute.route(PeersNicknameParams.self, ControlCall.peersNickname),
            ControlRoute.route(RoomsListParams.self, ControlCall.roomsList),
            ControlRoute.route(RoomsCreateParams.self, ControlCall.roomsCreate),
            ControlRoute.route(RoomsAddParams.self, ControlCall.roomsAdd),
            ControlRoute.route(RoomsRemoveParams.self, ControlCall.roomsRemove),
            ControlRoute.route(RoomsLeaveParams.self, ControlCall.roomsLeave),
            ControlRoute.route(RoomsAcceptParams.self, ControlCall.roomsAccept),
            ControlRoute.route(RoomsDeclineParams.self, ControlCall.roomsDecline),
            ControlRoute.route(RoomsSetRoleParams.self, ControlCall.roomsSetRole),
            ControlRoute.route(RoomsRenameParams.self, ControlCall.roomsRename),
            ControlRoute.route(RoomsSetPolicyParams.self, ControlCall.roomsSetPolicy),
            ControlRoute.route(MessagesReplyParams.self, ControlCall.messagesReply),
            ControlRoute.route(MessagesEditParams.self, ControlCall.messagesEdit),
            ControlRoute.route(MessagesDeleteParams.self, ControlCall.messagesDelete),
            ControlRoute.route(MessagesReactParams.self, ControlCall.messagesReact),
            ControlRoute.route(NodeSetStatusParams.self, ControlCall.nodeSetStatus),
            ControlRoute.route(FilesSendParams.self, ControlCall.filesSend),
            ControlRoute.route(FilesListParams.self, ControlCall.filesList),
            ControlRoute.route(FilesAcceptParams.self, ControlCall.filesAccept),
            ControlRoute.route(FilesRejectParams.self, ControlCall.filesReject),
            ControlRoute.route(FilesCancelParams.self, ControlCall.filesCancel),
            ControlRoute.route(DoctorReportParams.self, ControlCall.doctorReport),
            ControlRoute.route(FilesThumbnailParams.self, ControlCall.filesThumbnail),
            ControlRoute.route(DoctorPeerParams.self, ControlCall.doctorPeer),
            ControlRoute.route(FilesOpenParams.self, ControlCall.filesOpen)
        ].map { ($0.method, $0) })

    /// Looks the method up and decodes its params: `methodNotFound` for an unknown method,
    /// `invalidParams` (from `decodeParams`) for params that do not fit.
    static func decode(_ request: JSONRPCRequest) -> Result<ControlCall, JSONRPCError> {
        if request.method == ControlMethod.removedTrustAcceptChange {
            // It accepted "whatever change is pending", which a second new key could race.
            return .failure(
                JSONRPCError(
                    .methodNotFound,
                    "trust.accept_change was removed: a new key is its own peer now; compare the safety number of "
                        + "`parley trust show NEW-FINGERPRINT` with the person, then `parley trust replace OLD "
                        + "--new-fingerprint NEW-FINGERPRINT` (trust.replace)"))
        }
        guard let route = routes[request.method] else { return .failure(.methodNotFound(request.method)) }
        return route.decode(request)
    }

    /// The params of a `messages.send` that is answered at once (no `wait`): the calls a
    /// pipelining client's consecutive requests are batched from.
    var immediateSend: MessagesSendParams? {
        if case .messagesSend(let p) = self, !p.effectiveWait { return p }
        return nil
    }
}

/// One entry of the route table: a method name and the decoding of its params.
struct ControlRoute: Sendable {
    let method: String
    let decode: @Sendable (JSONRPCRequest) -> Result<ControlCall, JSONRPCError>

    static func route<P: ControlCallParams>(_ type: P.Type, _ make: @escaping @Sendable (P) -> ControlCall)
        -> ControlRoute
    {
        ControlRoute(method: P.method) { request in
            let params: P
            do { params = try request.decodeParams(P.self) } catch let error as JSONRPCError {
                return .failure(error)
            } catch { return .failure(.internalError("\(error)")) }
            return .success(make(params))
        }
    }
}
