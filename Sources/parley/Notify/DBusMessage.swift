/// Just enough of the D-Bus wire format (the D-Bus specification, "Message Protocol") for a
/// client that calls methods: writing a METHOD_CALL, reading the header of whatever comes
/// back (a METHOD_RETURN, an ERROR, a signal to skip). Pure; `DBusConnection` does the I/O.
/// Little-endian out; both byte orders in.
struct DBusWriter {
    var bytes: [UInt8] = []

    /// Pads with zeros to a multiple of `n` (from the start of the message or body: both
    /// start 8-aligned, so alignment within either is alignment within the message).
    mutating func align(_ n: Int) { while bytes.count % n != 0 { bytes.append(0) } }
    mutating func byte(_ v: UInt8) { bytes.append(v) }
    mutating func uint32(_ v: UInt32) {
        align(4)
        withUnsafeBytes(of: v.littleEndian) { bytes += $0 }
    }
    mutating func int32(_ v: Int32) { uint32(UInt32(bitPattern: v)) }
    /// `s` and `o`: length, UTF-8, NUL.
    mutating func string(_ s: String) {
        let utf8 = Array(s.utf8)
        uint32(UInt32(utf8.count))
        bytes += utf8
        bytes.append(0)
    }
    /// `g`: one-byte length, ASCII, NUL.
    mutating func signature(_ s: String) {
        bytes.append(UInt8(s.utf8.count))
        bytes += Array(s.utf8)
        bytes.append(0)
    }
    /// `a…`: the length (of the elements, without the padding before the first) then the
    /// elements, the first aligned to `elementAlignment`.
    mutating func array(elementAlignment: Int, _ elements: (inout DBusWriter) -> Void) {
        uint32(0)
        let lengthAt = bytes.count - 4
        align(elementAlignment)
        let start = bytes.count
        elements(&self)
        let length = UInt32(bytes.count - start).littleEndian
        withUnsafeBytes(of: length) { for (i, b) in $0.enumerated() { bytes[lengthAt + i] = b } }
    }
}

enum DBusMessageType: UInt8 {
    case methodCall = 1
    case methodReturn = 2
    case error = 3
    case signal = 4
}

enum DBusWireError: Error, CustomStringConvertible {
    case malformed(String)
    case tooLarge(Int)

    var description: String {
        switch self {
        case .malformed(let what): return "malformed D-Bus message: \(what)"
        case .tooLarge(let size): return "D-Bus message of \(size) bytes is larger than parley notify reads"
        }
    }
}

enum DBusMessage {
    /// Larger messages are refused: ours are replies of a few bytes; a signal this large
    /// from the bus means something is wrong.
    static let maxMessageBytes = 1 << 20

    enum HeaderField: UInt8 {
        case path = 1, interface, member, errorName, replySerial, destination, sender, signature
    }

    /// A METHOD_CALL with `body` (already marshalled, of `signature`).
    static func methodCall(
        serial: UInt32, destination: String, path: String, interface: String, member: String,
        signature: String = "", body: [UInt8] = []
    ) -> [UInt8] {
        var w = DBusWriter()
        w.byte(UInt8(ascii: "l"))
        w.byte(DBusMessageType.methodCall.rawValue)
        w.byte(0)  // flags: a reply is wanted
        w.byte(1)  // protocol version
        w.uint32(UInt32(body.count))
        w.uint32(serial)
        w.array(elementAlignment: 8) { w in
            func field(_ code: HeaderField, _ type: String, _ value: String) {
                w.align(8)
                w.byte(code.rawValue)
                w.signature(type)
                if type == "g" { w.signature(value) } else { w.string(value) }
            }
            field(.path, "o", path)
            field(.destination, "s", destination)
            field(.interface, "s", interface)
            field(.member, "s", member)
            if !signature.isEmpty { field(.signature, "g", signature) }
        }
        w.align(8)
        return w.bytes + body
    }

    /// The fixed part of a header: its first 16 bytes say how long the whole message is.
    static func totalLength(ofHeader first16: [UInt8]) throws(DBusWireError) -> Int {
        guard first16.count >= 16 else { throw .malformed("short header") }
        let little = try isLittleEndian(first16[0])
        let body = Int(uint32(first16, 4, little))
        let fields = Int(uint32(first16, 12, little))
        let total = (16 + fields + 7) / 8 * 8 + body
        guard total <= maxMessageBytes else { throw .tooLarge(total) }
        return total
    }

    struct Received: Equatable {
        var type: UInt8
        var replySerial: UInt32?
        var errorName: String?
        var signature: String
        var body: [UInt8]
        var littleEndian: Bool

        /// The body's first `u` (Notify's return value: the notification's id).
        var firstUInt32: UInt32? {
            guard signature.hasPrefix("u"), body.count >= 4 else { return nil }
            return DBusMessage.uint32(body, 0, littleEndian)
        }

        /// The body when it is one `as` (GetCapabilities' answer); nil if it is not, or is
        /// malformed.
        var stringArray: [String]? {
            guard signature == "as", body.count >= 4 else { return nil }
            let length = Int(DBusMessage.uint32(body, 0, littleEndian))
            guard length <= body.count - 4 else { return nil }
            var out: [String] = []
            var at = 4
            while at < 4 + length {
                at = (at + 3) / 4 * 4
                guard at + 4 <= body.count else { return nil }
                let count = Int(DBusMessage.uint32(body, at, littleEndian))
                // The string's bytes and its NUL must be inside the body.
                guard count < body.count, at + 4 + count + 1 <= body.count else { return nil }
                out.append(String(decoding: body[(at + 4)..<(at + 4 + count)], as: UTF8.self))
                at += 4 + count + 1
            }
            return out
        }

        /// The body's first `s` (an error's message).
        var firstString: String? {
            guard signature.hasPrefix("s"), body.count >= 4 else { return nil }
            let length = Int(DBusMessage.uint32(body, 0, littleEndian))
            guard body.count >= 4 + length else { return nil }
            return String(decoding: body[4..<(4 + length)], as: UTF8.self)
        }
    }

    /// Parses one whole message (as long as `totalLength` said).
    static func parse(_ bytes: [UInt8]) throws(DBusWireError) -> Received {
        let total = try totalLength(ofHeader: Array(bytes.prefix(16)))
        guard bytes.count == total else { throw .malformed("length") }
        let little = try isLittleEndian(bytes[0])
        let fieldsEnd = 16 + Int(uint32(bytes, 12, little))
        var at = 16
        var received = Received(
            type: bytes[1], replySerial: nil, errorName: nil, signature: "", body: [], littleEndian: little)
        while at < fieldsEnd {
            at = (at + 7) / 8 * 8
            guard at + 2 < fieldsEnd else { throw .malformed("header field") }
            let code = bytes[at]
            let typeLength = Int(bytes[at + 1])
            guard typeLength == 1, at + 3 < fieldsEnd else { throw .malformed("header field type") }
            let type = bytes[at + 2]
            at += 4
            switch type {
            case UInt8(ascii: "u"):
                at = (at + 3) / 4 * 4
                guard at + 4 <= fieldsEnd else { throw .malformed("u") }
                if code == HeaderField.replySerial.rawValue { received.replySerial = uint32(bytes, at, little) }
                at += 4
            case UInt8(ascii: "s"), UInt8(ascii: "o"):
                at = (at + 3) / 4 * 4
                guard at + 4 <= fieldsEnd else { throw .malformed("s") }
                let length = Int(uint32(bytes, at, little))
                guard length < maxMessageBytes, at + 4 + length < fieldsEnd + 1 else { throw .malformed("s length") }
                let text = String(decoding: bytes[(at + 4)..<(at + 4 + length)], as: UTF8.self)
                if code == HeaderField.errorName.rawValue { received.errorName = text }
                at += 4 + length + 1
            case UInt8(ascii: "g"):
                guard at < fieldsEnd else { throw .malformed("g") }
                let length = Int(bytes[at])
                guard at + 1 + length < fieldsEnd + 1 else { throw .malformed("g length") }
                if code == HeaderField.signature.rawValue {
                    received.signature = String(decoding: bytes[(at + 1)..<(at + 1 + length)], as: UTF8.self)
                }
                at += 1 + length + 1
            default:
                throw .malformed("header field of type \(type)")
            }
        }
        let bodyStart = (fieldsEnd + 7) / 8 * 8
        received.body = Array(bytes[bodyStart...])
        return received
    }

    static func isLittleEndian(_ flag: UInt8) throws(DBusWireError) -> Bool {
        switch flag {
        case UInt8(ascii: "l"): return true
        case UInt8(ascii: "B"): return false
        default: throw .malformed("byte order")
        }
    }

    static func uint32(_ bytes: [UInt8], _ at: Int, _ little: Bool) -> UInt32 {
        let b = (0..<4).map { UInt32(bytes[at + $0]) }
        return little ? b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24 : b[3] | b[2] << 8 | b[1] << 16 | b[0] << 24
    }
}

/// `org.freedesktop.Notifications.Notify` (the Desktop Notifications Specification):
/// `susssasa{sv}i`: app name, the id to replace (0: a new one), icon, summary, body, no
/// actions, hints (category `im.received`), the server's default timeout.
enum NotifyCall {
    static let destination = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"
    static let interface = "org.freedesktop.Notifications"
    static let signature = "susssasa{sv}i"

    /// `summary` is plain (the spec never renders markup there); `body` must already be
    /// made safe for the server (`NotificationText.body`).
    static func body(replacesID: UInt32, summary: String, body text: String) -> [UInt8] {
        var w = DBusWriter()
        w.string("Parley")
        w.uint32(replacesID)
        w.string("mail-message-new")
        w.string(summary)
        w.string(text)
        w.array(elementAlignment: 4) { _ in }
        w.array(elementAlignment: 8) { w in
            w.align(8)
            w.string("category")
            w.signature("s")
            w.string("im.received")
        }
        w.int32(-1)
        return w.bytes
    }
}
