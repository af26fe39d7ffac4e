import ParleyCore

/// Which outgoing files get a thumbnail, and whether what the child made is one: pure, so
/// every rule is unit-tested without a child process (the driver is `ThumbnailMaker`).
public enum ThumbnailPolicy {
    /// Media types `vipsthumbnail` reads with Debian's libvips (jpeg, png, gif, webp loaders).
    /// Not SVG (librsvg would fetch and parse far more than a picture) and nothing else.
    public static let readableMediaTypes: Set<String> = ["image/jpeg", "image/png", "image/gif", "image/webp"]

    /// Whether an offered file is worth a thumbnail at all (before any child is started).
    public static func wants(mediaType: String, size: UInt64) -> Bool {
        size > 0 && size <= ThumbnailLimits.maxSourceBytes && readableMediaTypes.contains(mediaType)
    }

    /// The width and height in `vipsheader`'s one line, `path: 640x480 uchar, 3 bands, srgb,
    /// pngload`: the first `<digits>x<digits>` word after the last ": ". Nil when there is none
    /// (the child's output is not trusted to be well formed).
    public static func dimensions(fromHeaderLine text: String) -> (width: Int, height: Int)? {
        guard text.utf8.count <= ThumbnailLimits.maxHeaderBytes else { return nil }
        let line = text.split(separator: "\n", omittingEmptySubsequences: true).first.map(String.init) ?? ""
        let fields = line.split(separator: ": ", omittingEmptySubsequences: false)
        guard fields.count >= 2, let described = fields.last else { return nil }
        for word in described.split(separator: " ") {
            let parts = word.split(separator: "x", omittingEmptySubsequences: false)
            guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]),
                parts[0].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isASCII)
            else { continue }
            return (w, h)
        }
        return nil
    }

    /// Whether a picture of this declared size may be decoded (see `maxSourcePixels`).
    public static func mayDecode(width: Int, height: Int) -> Bool {
        guard width > 0, height > 0 else { return false }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        return !overflow && pixels <= ThumbnailLimits.maxSourcePixels
    }

    /// What the child wrote, judged.
    public enum Verdict: Equatable, Sendable {
        /// A JPEG within the offer's bound: send it.
        case use
        /// Too large: retry at the next quality, if any.
        case tooLarge
        /// Empty, or not a JPEG: give up.
        case notJPEG
    }

    public static func judge(output: [UInt8]) -> Verdict {
        guard ThumbnailImageType.sniff(output) == .jpeg else { return .notJPEG }
        return output.count <= FileLimits.maxThumbnailBytes ? .use : .tooLarge
    }
}

/// The type of a stored thumbnail from its magic numbers only: the daemon never decodes one
/// (a thumbnail from a peer is hostile bytes), it only tells a client what it claims to be.
public enum ThumbnailImageType: String, Sendable, Equatable {
    case jpeg = "image/jpeg"
    case png = "image/png"

    /// JPEG: SOI then a marker (FF D8 FF). PNG: the 8-byte signature.
    public static func sniff(_ bytes: [UInt8]) -> ThumbnailImageType? {
        if bytes.count >= 3, bytes[0] == 0xFF, bytes[1] == 0xD8, bytes[2] == 0xFF { return .jpeg }
        if bytes.count >= 8, bytes.prefix(8).elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            return .png
        }
        return nil
    }

    public var mediaType: String { rawValue }
}
