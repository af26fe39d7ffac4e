/// `messages.search`: full-text search over the whole history.

/// Finds messages whose body contains every word of `query` (case and accents ignored,
/// each word also as a prefix, Chinese/Japanese/Korean by characters), best match first.
public struct MessagesSearchParams: ControlCallParams {
    public typealias ResultType = MessagesSearchResult
    public static let method = ControlMethod.messagesSearch
    public static let fieldNames = ["query", "peer", "limit"]

    public var query: String
    /// Only the direct conversation with this peer, or `#room`.
    public var peer: String?
    public var limit: Int?

    public init(query: String, peer: String? = nil, limit: Int? = nil) {
        self.query = query
        self.peer = peer
        self.limit = limit
    }

    public var effectiveLimit: Int { limit ?? ControlLimits.defaultSearchLimit }

    public func validate() throws(JSONRPCError) {
        guard query.contains(where: { $0.isLetter || $0.isNumber }) else {
            throw .invalidParams("\"query\" must contain a letter or digit to search for")
        }
        guard query.utf8.count <= ControlLimits.maxSearchQueryBytes else {
            throw .invalidParams("\"query\" must be at most \(ControlLimits.maxSearchQueryBytes) bytes")
        }
        if let peer { try ParamCheck.peerSelector(peer, field: "peer") }
        if let limit, !(1...ControlLimits.maxSearchLimit).contains(limit) {
            throw .invalidParams("\"limit\" must be between 1 and \(ControlLimits.maxSearchLimit)")
        }
    }
}

public struct MessagesSearchHit: Codable, Sendable, Hashable {
    public var message: MessageInfo
    /// The body around the first match, one line, at most about 80 characters, `…` where cut.
    public var snippet: String

    public init(message: MessageInfo, snippet: String) {
        self.message = message
        self.snippet = snippet
    }
}

public struct MessagesSearchResult: Codable, Sendable, Hashable {
    /// Best match first.
    public var hits: [MessagesSearchHit]
    /// How long the query took in the daemon, in milliseconds.
    public var tookMs: Int
    /// The cursors of matching stored messages that could not be read (a damaged store):
    /// left out of `hits`, the rest is there. Absent when none.
    public var unreadable: [Int] = []

    public init(hits: [MessagesSearchHit], tookMs: Int, unreadable: [Int] = []) {
        self.hits = hits
        self.tookMs = tookMs
        self.unreadable = unreadable
    }

    enum CodingKeys: String, CodingKey { case hits, tookMs, unreadable }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        hits = try c.decode([MessagesSearchHit].self, forKey: .hits)
        tookMs = try c.decode(Int.self, forKey: .tookMs)
        unreadable = try c.decodeIfPresent([Int].self, forKey: .unreadable) ?? []
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(hits, forKey: .hits)
        try c.encode(tookMs, forKey: .tookMs)
        if !unreadable.isEmpty { try c.encode(unreadable, forKey: .unreadable) }
    }
}
