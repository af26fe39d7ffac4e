import Foundation  // Unicode normalization only (NFKD); no clock, no I/O.
import ParleyCore

/// The skeleton of a display name (Unicode TS #39, section 4, "Confusable Detection"): two
/// names with the same skeleton look alike, so a person cannot tell them apart on screen
/// ("bob" and "bоb" with a Cyrillic о, "alice" and "aIice", "Bob" and "bob").
///
/// skeleton = NFKD, each character replaced by its confusable prototype
/// (`ConfusablesTable`), lower-cased and mapped again (so case does not matter, and a
/// capital I still looks like an l), NFKD again; and every character that renders as white
/// space or nothing (`BlankCharacters`: spaces of every width, line breaks, zero-width and
/// bidi controls, variation selectors, fillers...) dropped wherever it is, before and after
/// each step. So "bob ", " bob", "b  ob", "bob\u{3000}" and "b\u{200B}ob" all look like
/// "bob" (issue 29: a trailing space made an impostor unmarked; browsers collapse runs of
/// spaces and hide a trailing one). Names that differ only by where a space is ("bob smith",
/// "bobsmith") are marked too: a mark only says "look at the fingerprint".
/// Names are compared by skeleton only to *mark* look-alikes; a peer is always its key.
public enum NameSkeleton {
    public static func of(_ name: String) -> String {
        let mapped = prototypes(name.decomposedStringWithCompatibilityMapping)
        // NFKD can bring a space back (U+00A8 DIAERESIS is U+0020 U+0308): drop it again.
        return withoutBlanks(prototypes(mapped.lowercased()).decomposedStringWithCompatibilityMapping)
    }

    private static func withoutBlanks(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars where !BlankCharacters.isBlank(scalar) { out.append(scalar) }
        return String(out)
    }

    private static func prototypes(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if BlankCharacters.isBlank(scalar) { continue }
            if let prototype = prototypeTable[scalar.value] {
                out.append(contentsOf: prototype)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Code point -> prototype, parsed once from the generated text, closed under case.
    ///
    /// Unicode's table is case-sensitive: it maps a capital O to the digit 0 and a capital I
    /// to 1 (they look alike), but leaves the small o and i alone. Lower-casing between the
    /// two passes then split "BOB" ("b0b") from "bob", and "Ivan" from "ivan": a stranger
    /// named in capitals went unmarked beside the contact it imitates. So a small letter
    /// whose capital has a prototype, and has none of its own, takes its capital's: case
    /// never matters, as the skeleton promises (a few more names are marked alike, e.g.
    /// "ivan" and "lvan"; a mark only says "look at the fingerprint").
    static let prototypeTable: [UInt32: [Unicode.Scalar]] = {
        var map: [UInt32: [Unicode.Scalar]] = [:]
        map.reserveCapacity(ConfusablesTable.entryCount)
        for line in ConfusablesTable.text.split(separator: "\n") {
            let fields = line.split(separator: " ").compactMap { UInt32($0, radix: 16) }
            guard fields.count >= 2 else { continue }
            map[fields[0]] = fields.dropFirst().compactMap(Unicode.Scalar.init)
        }
        for (code, prototype) in map {
            guard let capital = Unicode.Scalar(code) else { continue }
            let small = capital.properties.lowercaseMapping.unicodeScalars
            guard small.count == 1, let s = small.first, s != capital, map[s.value] == nil else { continue }
            map[s.value] = prototype
        }
        return map
    }()
}
