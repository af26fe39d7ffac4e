import Foundation  // Unicode normalization only (NFKD); no clock, no I/O.

/// The skeleton of a display name (Unicode TS #39, section 4, "Confusable Detection"): two
/// names with the same skeleton look alike, so a person cannot tell them apart on screen
/// ("bob" and "bоb" with a Cyrillic о, "alice" and "aIice", "Bob" and "bob").
///
/// skeleton = NFKD, each character replaced by its confusable prototype
/// (`ConfusablesTable`), lower-cased and mapped again (so case does not matter, and a
/// capital I still looks like an l), default-ignorable code points removed, NFKD again.
/// Names are compared by skeleton only to *mark* look-alikes; a peer is always its key.
public enum NameSkeleton {
    public static func of(_ name: String) -> String {
        let mapped = prototypes(name.decomposedStringWithCompatibilityMapping)
        return prototypes(mapped.lowercased()).decomposedStringWithCompatibilityMapping
    }

    private static func prototypes(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar.properties.isDefaultIgnorableCodePoint { continue }
            if let prototype = table[scalar.value] {
                out.append(contentsOf: prototype)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Code point -> prototype, parsed once from the generated text.
    private static let table: [UInt32: [Unicode.Scalar]] = {
        var map: [UInt32: [Unicode.Scalar]] = [:]
        map.reserveCapacity(ConfusablesTable.entryCount)
        for line in ConfusablesTable.text.split(separator: "\n") {
            let fields = line.split(separator: " ").compactMap { UInt32($0, radix: 16) }
            guard fields.count >= 2 else { continue }
            map[fields[0]] = fields.dropFirst().compactMap(Unicode.Scalar.init)
        }
        return map
    }()
}
