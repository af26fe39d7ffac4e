import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Unbuffered line output on stdout and stderr. Written with write(2) so nothing is lost
/// when `follow` is ended by a signal, and without touching C's global `stdout`.
enum Console {
    static func out(_ line: String) { write(line + "\n", to: 1) }

    static func err(_ line: String) { write(line + "\n", to: 2) }

    /// One value as compact JSON with sorted keys: the stable `--json` format, with what
    /// a terminal would act on escaped (`TerminalSafeJSON`).
    static func json<T: Encodable>(_ value: T) {
        do {
            let bytes = try ControlJSON.line(value)
            write(TerminalSafeJSON.escaped(bytes), to: 1)
        } catch {
            err("parley: cannot encode output as JSON: \(error)")
        }
    }

    private static func write(_ text: String, to fd: Int32) { write(Array(text.utf8), to: fd) }

    private static func write(_ bytes: [UInt8], to fd: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                // baseAddress is non-nil: the loop only runs for a non-empty array.
                systemWrite(fd, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return  // stdout/stderr gone (closed pipe): nothing useful left to do
            }
            offset += written
        }
    }
}

private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, bytes, count)
}
