#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Splits a byte stream into `\n`-terminated lines, holding at most `maxLineBytes` of an
/// unfinished line. Pure: the daemon feeds it what the socket delivered, the client too.
///
/// Once a line exceeds the limit the buffer is poisoned: the lines completed before it
/// are still returned, then `popLine` throws for good and further input is dropped, so
/// the reader answers `lineTooLong` and closes.
public struct LineBuffer: Sendable {
    public let maxLineBytes: Int
    private var complete: [[UInt8]] = []
    /// Index of the next line in `complete` to hand out (avoids O(n) removeFirst).
    private var head = 0
    private var partial: [UInt8] = []
    private var overflowed = false

    public init(maxLineBytes: Int = ControlLimits.maxLineBytes) {
        self.maxLineBytes = maxLineBytes
    }

    /// Bytes of the line not yet terminated (0 if the input ended on a `\n`). The daemon
    /// starts its idle timer when this becomes non-zero.
    public var partialLineByteCount: Int { partial.count }

    /// True when `popLine` would return a line (or throw) without more input.
    public var hasCompleteLine: Bool { head < complete.count || overflowed }

    /// True once a line exceeded the limit.
    public var isOverflowed: Bool { overflowed }

    /// Convenience for any byte collection; the work is done on contiguous memory.
    public mutating func append<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        let handled: Void? = bytes.withContiguousStorageIfAvailable { append(UnsafeRawBufferPointer($0)) }
        if handled == nil { Array(bytes).withUnsafeBytes { append($0) } }
    }

    /// Splits what one read delivered. Non-generic and `memchr`-based on purpose: a
    /// generic collection walk is not specialised across modules and cost the daemon
    /// most of its time on 64 KiB lines (docs/BENCHMARKS.md, row 5).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !overflowed, let base = bytes.baseAddress, bytes.count > 0 else { return }
        var start = 0
        while start < bytes.count,
            let hit = memchr(base + start, Int32(UInt8(ascii: "\n")), bytes.count - start)
        {
            let newline = base.distance(to: UnsafeRawPointer(hit))
            guard partial.count + (newline - start) <= maxLineBytes else {
                poison()
                return
            }
            var line = partial
            line.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<newline]))
            partial = []
            complete.append(line)
            start = newline + 1
        }
        guard partial.count + (bytes.count - start) <= maxLineBytes else {
            poison()
            return
        }
        if start < bytes.count {
            partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start...]))
        }
    }

    /// The next complete line without its `\n`, nil if none is complete yet; throws once
    /// the complete lines are drained and a line was too long.
    public mutating func popLine() throws(LineBufferError) -> [UInt8]? {
        if head < complete.count {
            let line = complete[head]
            head += 1
            if head == complete.count {
                complete.removeAll(keepingCapacity: true)
                head = 0
            }
            return line
        }
        if overflowed { throw .lineTooLong(maxBytes: maxLineBytes) }
        return nil
    }

    private mutating func poison() {
        overflowed = true
        partial = []
    }
}

public enum LineBufferError: Error, Sendable, Hashable, CustomStringConvertible {
    case lineTooLong(maxBytes: Int)

    public var description: String {
        switch self {
        case .lineTooLong(let max): return "a line exceeded \(max) bytes without a newline"
        }
    }
}
