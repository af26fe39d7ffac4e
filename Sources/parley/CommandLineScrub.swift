#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A process's arguments are readable by every local user while it runs
/// (`/proc/PID/cmdline`, `ps`): on a shared host, `parley send bob "the door code is 4711"`
/// would show the text and who it is for, and `send --wait` to an offline peer lingers for
/// up to 300 s. So once the arguments are copied (`CommandLine.arguments`), `parley`
/// overwrites them in place: the kernel reads the command line from the process's own
/// memory, and from then on it shows `parley` and the control socket it uses (`--socket
/// PATH`, which is no secret and tells an administrator which daemon a `parley` talks to).
/// The milliseconds between exec and this are not covered: text that must never show goes
/// through standard input or `--file` (docs/CONTROL.md).
enum CommandLineScrub {
    /// Which of `arguments` (without the program's name) stay readable: `--socket PATH` and
    /// `--socket=PATH`, before a `--` (after it every word is text). Pure.
    static func kept(_ arguments: [String]) -> [Bool] {
        var kept = [Bool](repeating: false, count: arguments.count)
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            if word == "--" { break }
            if word.hasPrefix("--socket=") {
                kept[index] = true
            } else if word == "--socket" {
                kept[index] = true
                if index + 1 < arguments.count {
                    kept[index + 1] = true
                    index += 1
                }
            }
            index += 1
        }
        return kept
    }

    /// Zeroes every argument after the program's name that `kept` does not keep. Call only
    /// after the arguments were read (`CommandLine.arguments` is made from this memory on
    /// first use).
    static func scrub() {
        guard CommandLine.argc > 1 else { return }
        let keep = kept(Array(CommandLine.arguments.dropFirst()))
        for index in 1..<Int(CommandLine.argc) where !(keep.indices.contains(index - 1) && keep[index - 1]) {
            guard let argument = CommandLine.unsafeArgv[index] else { continue }
            memset(argument, 0, strlen(argument))
        }
    }
}
