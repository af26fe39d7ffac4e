import Foundation

/// A command suggested to the person (`parley room accept '#lab'`) must work when pasted
/// into a shell: a word with anything but plain characters is single-quoted, so bash
/// neither drops `#lab` as a comment nor expands `$`, globs or spaces in a peer's name.
public enum ShellQuoting {
    /// Characters that never need quoting in sh, bash, zsh or fish.
    static let plain = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:,@%+=")

    /// `word` as one shell word: unchanged when it is plain, else in single quotes (a `'`
    /// inside becomes `'\''`). The empty word is `''`.
    public static func word(_ word: String) -> String {
        if !word.isEmpty, word.allSatisfy(plain.contains) {
            return word
        }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// A room selector as typed on a command line: `'#lab'`.
    public static func room(_ name: String) -> String { word("#" + name) }
}
