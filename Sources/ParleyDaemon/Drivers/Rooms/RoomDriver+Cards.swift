import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Room cards (issue 30; docs/PROTOCOL.md "Room cards"): each room operation a node sends
/// is followed by its actor's signed card, so a member that never had a session with
/// another sees its name and can write to it. The decisions are `RoomCardAdmission`'s;
/// the state is `RoomCardBook` (`book.cards`).
extension RoomDriver {
    /// Sends `actor`'s card on `link` after an operation of `room`, once per session: our
    /// own, or the card we pinned for it (not one of a key a person blocked, held or
    /// replaced: we pass on only what we would talk to).
    func sendCard(of actor: IdentityPublicKey, room: RoomID, on link: Link, peer: IdentityPublicKey) {
        guard let host, link.remoteFeatures.contains(.roomCards), actor != peer,
            !(book.cards.sent[peer]?.contains(actor) ?? false)
        else { return }
        let bytes: [UInt8]
        if actor == me {
            bytes = host.currentCard().encoded()
        } else {
            guard let rec = host.peerRecord(actor), rec.replacedBy == nil,
                rec.trust == .pinned || rec.trust == .verified, !rec.card.isEmpty
            else { return }
            bytes = rec.card
        }
        book.cards.sent[peer, default: []].insert(actor)
        link.send(.roomCard(RoomCardRecord(roomID: room, card: bytes)))
    }

    /// A card passed on by `sender`, a member of `record.roomID` (or so it says).
    func receivedCard(_ record: RoomCardRecord, from sender: IdentityPublicKey, on link: Link) {
        let count = (book.cards.read[sender] ?? 0) + 1
        book.cards.read[sender] = count
        guard count <= RoomCardLimits.maxPerSession else { return }
        let card: Card
        do { card = try Card.decode(record.card) } catch {
            // A forged or damaged card: refused; the session goes on unless it keeps coming.
            let bad = (book.cards.bad[sender] ?? 0) + 1
            book.cards.bad[sender] = bad
            host?.logAttack(
                key: sender.hex, "room card that does not verify refused",
                ["from": sender.fingerprintText, "room": record.roomID.hex, "error": "\(error)"])
            if bad > RoomCardLimits.maxBadPerSession {
                link.close(reason: .protocolError, text: "too many room cards that do not verify")
            }
            return
        }
        if card.isExpired(now: UInt64(max(0, nowMs / 1000))) {
            log.debug("expired room card ignored", ["from": sender.fingerprintText])
            return
        }
        judgeCard(card, room: record.roomID, from: sender, held: false)
    }

    /// The room changed: held cards whose subject is now a joined member are learnt.
    func reconsiderHeldCards() {
        guard !book.cards.held.isEmpty else { return }
        let held = book.cards.held
        book.cards.held = []
        for h in held { judgeCard(h.card, room: h.room, from: h.from, held: true) }
    }

    private func judgeCard(_ card: Card, room: RoomID, from sender: IdentityPublicKey, held: Bool) {
        let subject = card.identityKey
        let state = try? entry(room).state
        let verdict = RoomCardAdmission.judge(
            subject: subject, room: state, me: me, sender: sender, known: host?.peerRecord(subject) != nil)
        switch verdict {
        case .learn:
            learnCard(card, room: room, from: sender)
        case .hold:
            book.cards.hold(card, room: room, from: sender)
        case .refuse(let why):
            guard why != .alreadyKnown else { return }
            if !held {
                host?.logAttack(
                    key: sender.hex, "room card refused",
                    ["from": sender.fingerprintText, "about": subject.fingerprintText, "why": "\(why)"])
            }
        }
    }

    /// Pins a co-member's card as a new peer (or holds it for approval, as the policy for
    /// new identities says): its name is what it calls itself, not verified; the name
    /// checks (clashes, look-alikes) apply as to any peer.
    private func learnCard(_ card: Card, room: RoomID, from sender: IdentityPublicKey) {
        guard let host else { return }
        let pending = TrustDecision.newIdentity(card: card, policy: newIdentities) == .holdNewPeer
        let now = nowMs
        let rec = PeerRecord(
            identity: card.identityKey, displayName: card.displayName, hostName: card.hostName,
            card: card.encoded(), cardSequence: Int64(clamping: card.sequence), noiseKey: card.noiseKey,
            trust: pending ? .pending : .pinned, firstSeen: now, lastSeen: now)
        do { try host.upsertPeer(rec) } catch {
            log.error("could not keep a room member's card", ["error": "\(error)"])
            return
        }
        var fields = [
            "peer": card.displayName, "fingerprint": card.fingerprint.description, "room": room.hex,
            "from": sender.fingerprintText
        ]
        if let clash = host.nameClash(of: card.identityKey) {
            fields["name_also_used_by"] = clash.with.map(\.fingerprintText).joined(separator: ",")
            log.warning("room member's name learnt; it looks like another peer's: it is a different key", fields)
        } else {
            log.info("room member's name learnt through the room", fields)
        }
        host.emit(.newPeer(rec, address: nil))
    }
}
