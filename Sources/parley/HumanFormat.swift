import Foundation
import ParleyControlProtocol

/// Small formatting helpers for the human-readable output.
enum HumanFormat {
    /// Local date and time of a Unix-milliseconds timestamp, e.g. `2025-03-01 14:05`.
    static func time(_ unixMilliseconds: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: Date(timeIntervalSince1970: Double(unixMilliseconds) / 1000))
    }

    /// The current local time in the same format as `time(_:)`.
    static func now() -> String { time(Int(Date().timeIntervalSince1970 * 1000)) }

    /// `3d 4h`, `2h 5m`, `5m 10s`, `42s`.
    static func duration(seconds: Int) -> String {
        let s = max(0, seconds)
        let (d, h, m, sec) = (s / 86_400, s % 86_400 / 3_600, s % 3_600 / 60, s % 60)
        if d > 0 { return "\(d)d \(h)h" }
        if h > 0 { return "\(h)h \(m)m" }
        if m > 0 { return "\(m)m \(sec)s" }
        return "\(sec)s"
    }

    /// Singular or plural noun with its count: `1 message`, `3 messages`.
    static func count(_ n: Int, _ noun: String) -> String { n == 1 ? "1 \(noun)" : "\(n) \(noun)s" }

    /// A message body for a one-entry display: continuation lines indented under the first.
    static func body(_ text: String, indent: Int) -> String {
        Terminal.multiline(text).split(separator: "\n", omittingEmptySubsequences: false)
            .joined(separator: "\n" + String(repeating: " ", count: indent))
    }

    /// `[time] bob: hello`, or for outgoing `[time] you → bob: hello ✓` (… while queued,
    /// ✓✓ once read). A reply starts with the line it quotes, an edited message ends with
    /// "(edited)", a deleted one shows "(deleted)" instead of its text, and reactions
    /// follow on a line of their own. `showID` puts the message's id (first 8 digits, what
    /// `parley reply/edit/delete/react` take) before it.
    static func message(_ m: MessageInfo, showID: Bool = false) -> String {
        let stamp = (showID ? "\(m.id.prefix(8)) " : "") + "[\(time(m.createdAt))] "
        let text = conversationBody(m)
        switch m.direction {
        case .incoming:
            let room = m.room.map { "#" + Terminal.line($0.name) + " " } ?? ""
            let head = stamp + room + Terminal.line(m.fromName) + ": "
            return head + body(text, indent: head.count) + reactionsLine(m, indent: head.count)
        case .outgoing:
            let head = stamp + "you → " + Terminal.line(m.toName) + ": "
            let mark =
                m.readAt != nil
                ? " ✓✓" : m.state == .delivered ? " ✓" : m.state == .partial ? " ✓ " + holders(m) : " …"
            return head + body(text, indent: head.count) + mark + reactionsLine(m, indent: head.count)
        }
    }

    /// Names shown before "and N others" in `holders`.
    static let maxHolderNames = 3

    /// Who holds a room message some members hold and others not yet: `carol has it (1 of
    /// 2)`, `carol, bob have it (2 of 5)`, `carol, bob, dan and 2 others have it (5 of 9)`.
    static func holders(_ m: MessageInfo) -> String {
        guard let d = m.roomDelivery, !d.heldBy.isEmpty else { return "" }
        let names = d.heldBy.prefix(maxHolderNames).map { Terminal.line($0.name) }
        let others = d.heldBy.count - names.count
        let who = names.joined(separator: ", ") + (others > 0 ? " and \(count(others, "other"))" : "")
        return "\(who) \(d.heldBy.count == 1 ? "has" : "have") it (\(d.heldBy.count) of \(d.members))"
    }

    /// The text a person sees for a message: the quote of a reply, the placeholder of a
    /// deleted message, the edited marker, and above a room message written after its
    /// author's removal (`MessageRoom.afterRemoval`), a line that says so.
    static func conversationBody(_ m: MessageInfo) -> String {
        if m.deletedAt != nil { return "(deleted)" }
        var text = m.body
        if let q = m.replyTo { text = quoteLine(q) + "\n" + text }
        if m.editedAt != nil { text += " (edited)" }
        if m.room?.afterRemoval == true { text = afterRemovalLine(m) + "\n" + text }
        return text
    }

    /// `⚠ sent after eve was removed: not part of the room's history`.
    static func afterRemovalLine(_ m: MessageInfo) -> String {
        "⚠ sent after \(Terminal.line(m.fromName)) was removed: not part of the room's history"
    }

    /// `↳ alice: the start of what she wrote`, one line.
    static func quoteLine(_ q: MessageQuote) -> String {
        guard let from = q.fromName, let excerpt = q.excerpt else { return "↳ (a message \(q.id.prefix(8)) not here)" }
        if q.deleted { return "↳ \(Terminal.line(from)): (deleted)" }
        return "↳ \(Terminal.line(from)): " + truncated(Terminal.line(excerpt), to: 60)
    }

    /// `👍 2  ❤️ 1` after a message with reactions; "" without.
    static func reactionsLine(_ m: MessageInfo, indent: Int) -> String {
        guard !m.reactions.isEmpty else { return "" }
        let items = m.reactions.map { "\(Terminal.line($0.reaction)) \($0.fromNames.count)" }
        return "\n" + String(repeating: " ", count: indent) + items.joined(separator: "  ")
    }

    /// A trust state as the table shows it.
    static func trust(_ t: PeerTrust) -> String {
        switch t {
        case .pending: return "AWAITING APPROVAL"
        case .blocked: return "BLOCKED"
        default: return t.rawValue
        }
    }

    /// "bob u2y2-nmfw-… looks like: bob 5uao-podx-… (pinned)".
    static func clashLine(_ peer: PeerInfo) -> String {
        let others = (peer.nameClash?.with ?? []).map {
            "\(Terminal.line($0.name)) \(Terminal.line($0.fingerprint))" + ($0.trust.map { " (\($0.rawValue))" } ?? "")
        }
        let what = peer.nameClash?.kind == .sameName ? "has the same name as" : "looks like"
        return "\(Terminal.line(peer.label)) \(Terminal.line(peer.fingerprint)) \(what) "
            + (others.isEmpty ? "your own name" : others.joined(separator: ", "))
    }

    /// The notice for a key never seen before (`peer.new`).
    static func newPeerNotice(_ e: PeerNewEvent) -> [String] {
        let who = Terminal.line(e.name)
        let fp = Terminal.line(e.fingerprint)
        var lines = [e.trust == .pending ? "New key awaiting your approval: \(who) \(fp)" : "New peer: \(who) \(fp)"]
        if let clash = e.nameClash {
            let others = clash.with.map { "\(Terminal.line($0.name)) \(Terminal.line($0.fingerprint))" }
            lines.append(
                "  ⚠ its name " + (clash.kind == .sameName ? "is the same as " : "looks like ")
                    + (others.isEmpty ? "yours" : others.joined(separator: ", "))
                    + ": it is a DIFFERENT key. Send by fingerprint, and compare `parley trust show \(fp)` with its owner."
            )
        }
        if e.trust == .pending {
            lines.append(
                "  Compare `parley trust show \(fp)` with its owner, then `parley trust accept \(fp)` or `parley trust block \(fp)`."
            )
        }
        return lines
    }

    /// `parley trust show`.
    static func trustShow(_ r: TrustShowResult) -> [String] {
        let p = r.peer
        var lines = [
            "\(Terminal.line(p.label))" + (p.nickname != nil ? " (calls itself \(Terminal.line(p.name)))" : "")
                + "  trust: \(trust(p.trust))",
            "  fingerprint:    \(Terminal.line(p.fingerprint))",
            "  your fingerprint: \(Terminal.line(r.yourFingerprint))",
            "  safety number (computed with THIS key; the other person sees the same):",
            "    \(Terminal.line(p.safetyNumber))",
            "  for a QR code:  \(Terminal.line(r.qrText))"
        ]
        if p.nameClash != nil { lines.append("  ⚠ " + clashLine(p)) }
        for k in r.previousKeys {
            lines.append(
                "  earlier key: \(Terminal.line(k.fingerprint)) (\(Terminal.line(k.name)), last seen \(time(k.lastSeen)))"
            )
        }
        lines.append(contentsOf: verifyAdvice(peerFingerprint: p.fingerprint))
        return lines
    }

    /// A short fingerprint (two groups, 40 bits: one group alone is cheap to grind for a
    /// look-alike key) for showing beside a name.
    static func shortFingerprint(_ fingerprint: String) -> String {
        fingerprint.split(separator: "-").prefix(2).joined(separator: "-")
    }

    /// A peer's name as a label where two names could be confused (issue 29: "bob " and
    /// "bob" look the same): with a short fingerprint unless the person verified the key.
    static func label(_ name: String, fingerprint: String, verified: Bool) -> String {
        verified ? Terminal.line(name) : "\(Terminal.line(name)) (\(Terminal.line(shortFingerprint(fingerprint))))"
    }

    static func label(_ peer: PeerInfo) -> String {
        label(peer.label, fingerprint: peer.fingerprint, verified: peer.trust == .verified)
    }

    /// How to verify a key, safe to follow (issue 29, L1): the fingerprint must be typed as
    /// read from the other device's own screen, so the command shows a placeholder, never
    /// this key's fingerprint (copying it from here would verify whatever key we were shown).
    /// The peer is named by a short prefix, not the whole fingerprint.
    static func verifyAdvice(peerFingerprint: String) -> [String] {
        let prefix = Terminal.line(String(peerFingerprint.prefix(9)))
        return [
            "To verify: on the other device, run `parley whoami` (or open Verify in its `parley web`: \"your fingerprint\")",
            "  and read its fingerprint from THAT screen (in person, or over a call you trust); then type what you read:",
            "    parley trust verify \(prefix) --fingerprint <THE FINGERPRINT SHOWN ON THEIR SCREEN>",
            "  Do not copy it from this screen: it shows the key this node was given, which is what you are checking."
        ]
    }

    /// Left-aligned columns separated by two spaces (the last column is not padded).
    static func table(_ rows: [[String]]) -> [String] {
        guard let columns = rows.map(\.count).max() else { return [] }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows {
            for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: "  ")
        }
    }

    /// Shortens a one-line field for a table cell.
    static func truncated(_ text: String, to maxCharacters: Int) -> String {
        text.count <= maxCharacters ? text : String(text.prefix(maxCharacters - 1)) + "…"
    }
}
