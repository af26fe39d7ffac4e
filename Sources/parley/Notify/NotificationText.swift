/// What a desktop notification says, made safe (pure). Everything in it comes from peers
/// (names, message bodies, room and file names), so:
/// - the **body** is escaped for the notification spec's body markup (`<b>`, `<i>`, `<a>`,
///   `<img>`: a server with "body-markup" would render them, so a peer could make a link or
///   fetch an image): `&`, `<`, `>` become entities, and nothing else is interpreted (a
///   server without markup gets the text as it is: it shows it as text);
/// - both title and body lose control characters and direction overrides (a name that
///   reorders the text around it), and are cut to a length a notification shows;
/// - a sender the person has not verified is shown with the start of their fingerprint, as
///   everywhere else in Parley, so a peer who takes a colleague's name is not taken for them.
enum NotificationText {
    /// A notification shows a line or two; longer text only grows the bubble.
    static let maxTitleCharacters = 80
    static let maxBodyCharacters = 240

    /// `name`, or `name (abcd-efgh)` unless the peer is verified.
    static func sender(name: String, fingerprint: String, verified: Bool) -> String {
        let clean = plain(name, limit: maxTitleCharacters / 2)
        return verified ? clean : "\(clean) (\(shortFingerprint(fingerprint)))"
    }

    /// The first two groups of a fingerprint (`abcd-efgh`): what Parley shows beside a name.
    static func shortFingerprint(_ fingerprint: String) -> String {
        fingerprint.split(separator: "-").prefix(2).joined(separator: "-")
    }

    /// Plain text for the title (the spec's summary is never markup): control characters
    /// and direction marks removed, line breaks made spaces, cut to `limit`.
    static func plain(_ text: String, limit: Int = maxTitleCharacters) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < limit else {
                out.append("…")
                break
            }
            if scalar == "\n" || scalar == "\t" || scalar == "\r" {
                out.append(" ")
            } else if isInvisibleControl(scalar) {
                continue
            } else {
                out.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return out
    }

    /// The body for the server: escaped when it renders markup (it says "body-markup" in
    /// its capabilities), else plain (escaping would show `&lt;` to the person).
    static func body(_ text: String, serverRendersMarkup: Bool) -> String {
        serverRendersMarkup ? escapedBody(text) : plainBody(text)
    }

    /// The body for a server that may render markup: plain text (line breaks kept), then
    /// `&`, `<`, `>` escaped.
    static func escapedBody(_ text: String) -> String {
        plainBody(text).reduce(into: "") { out, c in
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.append(c)
            }
        }
    }

    /// Plain text with its line breaks, controls removed, cut to the body's length.
    static func plainBody(_ text: String) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            plain(String($0), limit: maxBodyCharacters)
        }
        // Cut the whole to the body's length too.
        var total = 0
        var kept: [String] = []
        for line in lines {
            guard total < maxBodyCharacters else {
                kept.append("…")
                break
            }
            kept.append(line)
            total += line.count + 1
        }
        lines = kept
        return lines.joined(separator: "\n")
    }

    /// C0 and C1 controls, and the marks that change text direction or hide characters.
    static func isInvisibleControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x200B...0x200F, 0x202A...0x202E, 0x2060...0x2069, 0x061C, 0xFEFF: return true
        default: return false
        }
    }
}
