import Foundation

/// What full-text search indexes and how a query is written for it. Pure.
///
/// The index is SQLite FTS5 with the `unicode61 remove_diacritics 2` tokenizer: words are
/// split at spaces and punctuation, case is folded and accents removed (so `cafe` finds
/// `Café`, `resume` finds `résumé`). Chinese, Japanese and Korean are written without
/// spaces between words, so unicode61 would make a whole sentence one token that no query
/// matches; instead each CJK character is indexed as a token of its own and a CJK query
/// becomes a phrase of its characters, which finds them adjacent, in order: `東京` matches
/// `東京タワー`. One index serves every script, at the cost of matching CJK words by their
/// characters (as the trigram tokenizer would, without tripling the index or missing
/// one- and two-character words, which trigram cannot find).
public enum SearchText {
    /// The text the index gets for a message body.
    public static func indexText(_ body: String) -> String {
        // SQLite calls this for every message stored. Every CJK scalar (U+1100 and above)
        // is encoded with a UTF-8 lead byte of 0xE1 or more; text without such a byte
        // (most chat, in most scripts) is indexed as it is, without a scalar-by-scalar copy.
        if !body.utf8.contains(where: { $0 >= 0xE1 }) { return body }
        var out = String.UnicodeScalarView()
        out.reserveCapacity(body.unicodeScalars.count)
        for scalar in body.unicodeScalars {
            if isCJK(scalar) {
                out.append(" ")
                out.append(scalar)
                out.append(" ")
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Characters indexed one by one: CJK ideographs, kana and Hangul.
    static func isCJK(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x3040...0x30FF,  // Hiragana, Katakana
            0x3400...0x4DBF,  // CJK Extension A
            0x4E00...0x9FFF,  // CJK Unified Ideographs
            0xAC00...0xD7AF,  // Hangul syllables
            0x1100...0x11FF, 0x3130...0x318F,  // Hangul jamo
            0xF900...0xFAFF,  // CJK compatibility ideographs
            0x20000...0x2FA1F:  // CJK Extensions B and later
            return true
        default:
            return false
        }
    }

    /// The terms of a user's query: runs of non-spaces that contain a letter or digit
    /// (a lone `-` or `!!` would be an empty FTS5 phrase).
    public static func terms(_ query: String) -> [String] {
        query.split(whereSeparator: { $0.isWhitespace }).map(String.init)
            .filter { $0.contains { $0.isLetter || $0.isNumber } }
    }

    /// The FTS5 MATCH expression for `query`: every term must appear (AND), each term as a
    /// quoted phrase (so FTS5 operators and quotes in it are plain text) matched as a
    /// prefix (`hel` finds `hello`). nil if the query has no searchable term.
    public static func matchExpression(_ query: String) -> String? {
        let phrases = terms(query).map { term in
            "\"" + indexText(term).replacingOccurrences(of: "\"", with: "\"\"") + "\"*"
        }
        return phrases.isEmpty ? nil : phrases.joined(separator: " ")
    }

    /// An excerpt of `body` around the first place a term of `query` appears (case and
    /// accents ignored), at most about `width` characters, `…` where it was cut. One line:
    /// line breaks become spaces.
    public static func snippet(_ body: String, query: String, width: Int = 80) -> String {
        let flat = body.replacingOccurrences(of: "\r\n", with: " ").replacingOccurrences(of: "\n", with: " ")
        guard flat.count > width else { return flat }
        var hit: Range<String.Index>?
        for term in terms(query) {
            if let r = flat.range(of: term, options: [.caseInsensitive, .diacriticInsensitive]),
                hit == nil || r.lowerBound < hit!.lowerBound
            {
                hit = r
            }
        }
        let center = hit.map { flat.distance(from: flat.startIndex, to: $0.lowerBound) } ?? 0
        let start = max(0, min(center - width / 3, flat.count - width))
        let from = flat.index(flat.startIndex, offsetBy: start)
        let to = flat.index(from, offsetBy: width, limitedBy: flat.endIndex) ?? flat.endIndex
        return (start > 0 ? "…" : "") + flat[from..<to] + (to < flat.endIndex ? "…" : "")
    }
}
