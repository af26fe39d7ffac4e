import Foundation

/// One static file of the page, compiled into the binary (`WebAssets+Generated.swift`,
/// written by `scripts/gen-web-assets.py` from `Sources/ParleyWebCore/Assets/`), so the
/// installed `parley` needs no files beside it and nothing can be swapped under it.
public struct WebAsset: Sendable, Equatable {
    public var path: String
    public var contentType: String
    public var bytes: [UInt8]
}

public enum WebAssets {
    /// Every asset by URL path; `/` is `index.html`.
    public static let byPath: [String: WebAsset] = {
        var table: [String: WebAsset] = [:]
        for entry in generated {
            let bytes = [UInt8](Data(base64Encoded: entry.base64) ?? Data())
            let asset = WebAsset(path: entry.path, contentType: entry.contentType, bytes: bytes)
            table[entry.path] = asset
            if entry.path == "/index.html" { table["/"] = asset }
            // Browsers ask for /favicon.ico on pages without an icon link (the sign-in page).
            if entry.path == "/icon.svg" { table["/favicon.ico"] = asset }
        }
        return table
    }()

    public static func asset(forPath path: Substring) -> WebAsset? { byPath[String(path)] }
}
