import ParleyControlProtocol
import ParleyCore
import ParleyStore

/// The store's trust states as the control protocol names them.
enum ControlViews {
    static func trust(_ t: TrustState) -> PeerTrust {
        switch t {
        case .pinned: return .pinned
        case .verified: return .verified
        case .pending: return .pending
        case .blocked: return .blocked
        }
    }

    /// A stored message's state as the control protocol names it (the same words). A
    /// switch, not `init(rawValue:)` of the other's raw value: that compared strings, ~450
    /// instructions in every message line (docs/BENCHMARKS.md "issue 32 part 8"), and a
    /// state added to the store must now be named here.
    static func state(_ s: ParleyStore.MessageState) -> ParleyControlProtocol.MessageState {
        switch s {
        case .queued: return .queued
        case .delivered: return .delivered
        case .received: return .received
        }
    }
}

/// Turns the node's records into the control protocol's wire types.
extension Node {
    /// A message's other party as named in its view: a peer's name, or (an outgoing room
    /// message's recipient) the room id's start until `withRoom` names the room.
    func displayName(of party: MessageParty) -> String {
        switch party {
        case .peer(let key): displayName(of: key)
        case .room(let id): String(id.hex.prefix(9))
        }
    }

    /// How a message, a notification or an export names a peer: the person's nickname or
    /// the peer's own name, and, when that name looks like another peer's (or ours), a
    /// marker with the fingerprint's start, so a look-alike can never pass for the other.
    func displayName(of key: IdentityPublicKey) -> String {
        if key == myIdentityKey { return ownIdentity.card.displayName }
        guard let rec = peerRecord(key) else { return String(Node.fingerprint(of: key).prefix(9)) }
        if nameClash(of: key) != nil {
            return "\(rec.label) (⚠ \(Node.fingerprint(of: key).prefix(9)))"
        }
        return rec.label
    }

    /// `justStored`: the message was stored a moment ago and no reaction can be on it yet
    /// (a reaction to a message the receiver does not have is refused, and a room's
    /// changes are sent only after the member acknowledged their target: PROTOCOL.md,
    /// "Conversation records"), so the store is not asked. Every received message's
    /// live event is built this way; the lookup was a tenth of the receiver's work.
    func messageInfo(_ m: StoredMessage, justStored: Bool = false) -> MessageInfo {
        messageInfo(m, knownReactions: justStored ? [] : nil)
    }

    /// A page of messages: their reactions come from one query, not one per message.
    func messageInfos(_ ms: [StoredMessage]) -> [MessageInfo] {
        let reactions = (try? store.reactions(onRows: ms.map(\.rowID))) ?? [:]
        let holders = (try? store.roomHolders(ofRows: ms.filter(Self.isOutgoingRoomMessage).map(\.rowID))) ?? [:]
        return ms.map {
            messageInfo($0, knownReactions: reactions[$0.rowID] ?? [], knownHolders: holders[$0.rowID])
        }
    }

    static func isOutgoingRoomMessage(_ m: StoredMessage) -> Bool { m.direction == .outgoing && m.room != nil }

    /// `knownReactions`: the message's reactions as already read, or nil to read them;
    /// `knownHolders` likewise for an outgoing room message (from a page's one query).
    private func messageInfo(
        _ m: StoredMessage, knownReactions: [StoredReaction]?, knownHolders: RoomMessageHolders? = nil
    ) -> MessageInfo {
        let holders =
            Self.isOutgoingRoomMessage(m)
            ? knownHolders ?? (try? store.roomHolders(ofRows: [m.rowID]))?[m.rowID] : nil
        var info = MessageInfo(
            id: m.id.hex,
            from: Node.fingerprint(of: m.sender), fromName: displayName(of: m.sender),
            to: Node.fingerprint(of: m.recipient), toName: displayName(of: m.recipient),
            direction: m.direction == .incoming ? .incoming : .outgoing,
            sequence: Int(m.sequence), createdAt: Int(m.createdAt), body: m.body,
            state: ControlViews.state(m.state),
            deliveredAt: m.deliveredAt.map { Int($0) }, cursor: Int(m.rowID),
            readAt: m.readAt.map { Int($0) }, replyTo: quote(of: m),
            editedAt: m.editedAt.map { Int($0) }, deletedAt: m.deletedAt.map { Int($0) },
            reactions: reactionViews(
                shownReactions(knownReactions ?? (try? store.reactions(onRows: [m.rowID]))?[m.rowID] ?? [], on: m)))
        // Only a room message has more to add: a direct one is not copied through
        // `withRoom` and `roomDelivery` (~900 instructions a message, issue 32 part 11).
        if m.room != nil { info = withRoom(info, m) }
        if holders != nil { info = roomDelivery(holders, info) }
        return info
    }

    /// An outgoing room message's holders (`MessageInfo.roomDelivery`), and its state as the
    /// person should read it: `queued` only while no member is known to hold it.
    private func roomDelivery(_ holders: RoomMessageHolders?, _ info: MessageInfo) -> MessageInfo {
        guard let holders else { return info }
        var out = info
        out.roomDelivery = RoomDelivery(
            members: holders.members,
            heldBy: holders.held.map {
                MessageHolder(
                    fingerprint: Node.fingerprint(of: $0.member), name: displayName(of: $0.member), at: Int($0.at))
            })
        if out.state == .queued && !holders.held.isEmpty { out.state = .partial }
        return out
    }

    /// What a reply shows of the message it answers (looked up by id in the same
    /// conversation; unknown here: only the id).
    private func quote(of m: StoredMessage) -> MessageQuote? {
        guard let id = m.replyTo else { return nil }
        // Same conversation: the same room, or the same direct peer.
        let quoted = ((try? store.messages(id: id, limit: 4)) ?? []).first {
            $0.id == id && $0.room == m.room && (m.room != nil || $0.peer == m.peer)
        }
        guard let quoted else { return MessageQuote(id: id.hex, fromName: nil, excerpt: nil, deleted: false) }
        let excerpt = String(quoted.body.prefix(ControlLimits.maxQuoteExcerptCharacters))
        return MessageQuote(
            id: id.hex, fromName: displayName(of: quoted.sender), excerpt: excerpt,
            deleted: quoted.deletedAt != nil)
    }

    /// The reactions of a room message without those written after their reactor's
    /// removal (`AfterRemovalMarks`): kept, not shown, while the removal stands.
    private func shownReactions(_ rows: [StoredReaction], on m: StoredMessage) -> [StoredReaction] {
        guard let room = m.room, !rows.isEmpty else { return rows }
        let marks = afterRemovalMarks
        return rows.filter { !marks.isReactionAfterRemoval(room: room, reactor: $0.reactor, sequence: $0.sequence) }
    }

    /// Reactions as shown: one entry per reaction text, in the order first given, with
    /// who gave it.
    private func reactionViews(_ rows: [StoredReaction]) -> [MessageReaction] {
        guard !rows.isEmpty else { return [] }
        var order: [String] = []
        var by: [String: [IdentityPublicKey]] = [:]
        for r in rows {
            if by[r.reaction] == nil { order.append(r.reaction) }
            by[r.reaction, default: []].append(r.reactor)
        }
        return order.map { text in
            let who = by[text] ?? []
            return MessageReaction(
                reaction: text, fromNames: who.map(displayName(of:)), mine: who.contains(myIdentityKey))
        }
    }

    /// The safety number of this node's key and `identity`'s (the same on both sides).
    func safetyNumber(with identity: IdentityPublicKey) -> String {
        SafetyNumber.compute(ownIdentity.keys.identity.publicKey, identity)
    }

    func nameClashInfo(_ key: IdentityPublicKey) -> NameClashInfo? {
        guard let clash = nameClash(of: key) else { return nil }
        return NameClashInfo(
            kind: clash.kind == .sameName ? .sameName : .confusable,
            with: clash.with.map { other in
                let rec = peerRecord(other)
                return PeerCandidate(
                    name: rec?.label ?? "", fingerprint: other.fingerprintText,
                    trust: rec.map { ControlViews.trust($0.trust) })
            })
    }

    func peerInfo(_ rec: PeerRecord, queued: [IdentityPublicKey: Int]? = nil, unread: [IdentityPublicKey: Int]? = nil)
        -> PeerInfo
    {
        let q = queued ?? ((try? store.pendingRecipients()) ?? [:])
        let u = unread ?? ((try? store.unreadCounts()) ?? [:])
        return PeerInfo(
            name: rec.displayName, host: rec.hostName,
            fingerprint: Node.fingerprint(of: rec.identity), identityKey: rec.identity.hex,
            online: isOnline(rec.identity), addresses: addresses(of: rec.identity),
            trust: ControlViews.trust(rec.trust), safetyNumber: safetyNumber(with: rec.identity),
            lastSeen: Int(rec.lastSeen), queued: q[rec.identity] ?? 0,
            unread: u[rec.identity] ?? 0, nickname: rec.nickname, nameClash: nameClashInfo(rec.identity),
            status: sessionDriver.statuses[rec.identity].flatMap {
                $0.isEmpty ? nil : $0.text
            })
    }

    /// `trust.show`: everything a person needs to decide about this key.
    func trustShow(_ rec: PeerRecord) throws(NodeError) -> TrustShowResult {
        let info = peerInfo(rec)
        let digits = info.safetyNumber.filter(\.isNumber)
        let peerFP = Fingerprint(rec.identity).compact
        let previous = try previousKeys(of: rec).map {
            PreviousKeyInfo(
                fingerprint: Node.fingerprint(of: $0.identity), name: $0.displayName,
                firstSeen: Int($0.firstSeen), lastSeen: Int($0.lastSeen))
        }
        return TrustShowResult(
            peer: info, yourFingerprint: fingerprint.description,
            qrText: "parley:\(fingerprint.compact):\(peerFP):\(digits)", previousKeys: previous)
    }

    func peerInfos() throws(ControlFailure) -> [PeerInfo] {
        do {
            let q = try store.pendingRecipients()
            let unread = try store.unreadCounts()
            return try allPeers().filter { $0.replacedBy == nil }.map {
                peerInfo($0, queued: q, unread: unread)
            }
        } catch { throw .storeRead(what: "the peers", error) }
    }
}
