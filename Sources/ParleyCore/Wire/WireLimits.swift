/// Every limit a remote peer can push against, in one place. Each value says why.
public enum WireLimits {
    /// Largest chat body in bytes of UTF-8. 64 KiB is a long letter; anything larger
    /// is a file, which Parley does not carry.
    public static let maxBodyBytes = 65_536

    /// Largest application record (type + length + payload). A chat record is a body
    /// plus 41 bytes of header; twice the body limit leaves room for future fields
    /// while bounding what a receiver buffers for one record.
    public static let maxRecordBytes = 2 * maxBodyBytes

    /// Plaintext bytes in one Noise transport message: the Noise maximum (65535)
    /// minus the 16-byte Poly1305 tag.
    public static let maxPlaintextPerMessage = 65_535 - 16

    /// Most message ids in one acknowledgement record (16 bytes each, so an ack
    /// record stays under 16 KiB).
    public static let maxAcksPerRecord = 1_000

    /// Longest reason text in a close record.
    public static let maxCloseReasonBytes = 200
    /// Ports in one `listenPorts` record: a node listens on one port per address family
    /// at most; 8 leaves room and bounds what a peer can make us remember.
    public static let maxListenPorts = 8

    /// Addresses in one signed address record (0x21): a host's few interfaces times its
    /// one or two listening ports; bounds what one record can make a receiver dial.
    public static let maxAddressesPerRecord = 8
    /// Bytes of one address record: header 42 + 8 × 19 + signature 64 = 258.
    public static let maxAddressRecordBytes = 1 + 32 + 8 + 1 + maxAddressesPerRecord * 19 + 64
    /// Tags in one contactTags record (0x22): as many as the contacts a person keeps;
    /// 1,024 × 16 bytes is 16 KiB, and a receiver hashes each of its contacts once per
    /// record, not each tag.
    public static let maxContactTags = 1_024

    /// Transport messages per direction after which both sides rekey that direction
    /// (Noise `Rekey()`). Counting messages, not bytes, lets both sides rekey at the
    /// same point without signalling: 2^16 messages of at most 64 KiB is ≤ 4 GiB per key.
    public static let rekeyEveryMessages: UInt64 = 65_536

    /// Bytes a handshake payload may take (a card plus a few small fields).
    public static let maxHandshakePayloadBytes = 2_048

    /// Longest reaction in bytes of UTF-8. The longest emoji sequences (families, flags of
    /// subdivisions, with skin tones) take about 35 bytes; a reaction is not a message.
    public static let maxReactionBytes = 48

    /// Most characters (grapheme clusters) in a reaction: one emoji, or a word like "+1"
    /// or "lol".
    public static let maxReactionCharacters = 8

    /// Most different reactions one person may have on one message. Each (reactor,
    /// reaction, message) counts once, so this bounds what a receiver stores per message
    /// and peer; an addition beyond it is ignored (acknowledged, not stored).
    public static let maxReactionsPerReactor = 16

    /// Longest status line in bytes of UTF-8: a short sentence ("in a meeting until 3,
    /// then at the lab"), shown next to a name, never a message.
    public static let maxStatusBytes = 140
}
