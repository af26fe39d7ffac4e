import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// Whether a directory may hold the control and descriptor sockets. Pure: the directory's
/// mode and owner go in, the problem (or nil) comes out.
///
/// Whoever can write to the directory can put their own socket at the path: before
/// parleyd starts (parleyd then refuses to start, "already running", and every `parley`
/// pointed there talks to the impostor: it reads what the person sends and shows what it
/// likes) or after it stopped. The sticky bit does not help (a squatter's file is theirs
/// to keep), so a shared directory such as /tmp is refused, as is one another user owns
/// (its owner can always change it). The defaults are never refused: `$XDG_RUNTIME_DIR/parley`,
/// the state directory and the units' `/run/parley` (0750, owned by parley) and
/// `/run/parley-user/NAME` (0700, owned by NAME).
enum ControlSocketDirectory {
    /// Whether the daemon serves its group, not only its user and root: when the directory
    /// is kept for that group (its group may search it and others may not), as the system
    /// service's `/run/parley` (0750, group parley) is. A directory everyone may search
    /// (0755: a home or a directory made with the usual umask) is no such grant: a person
    /// running their own parleyd there would otherwise serve everyone who shares their
    /// primary group (`users`, "domain users": every account on many shared hosts), who
    /// could then read their messages and send as them.
    static func groupMayConnect(mode: mode_t) -> Bool {
        mode & S_IXGRP != 0 && mode & S_IXOTH == 0
    }

    static func problem(mode: mode_t, owner: uid_t, daemonUID: uid_t) -> String? {
        let shown = String(mode & 0o7777, radix: 8)
        let fix = "use a directory only you can write to (the default, $XDG_RUNTIME_DIR/parley, is one)"
        if ControlSocketPath.othersMayWrite(mode: mode) {
            return "other users can write to it (mode \(shown)) and could put their own socket in parleyd's "
                + "place; \(fix)"
        }
        if owner != daemonUID && owner != 0 {
            return "it belongs to another user (uid \(owner)), who could put their own socket in parleyd's place; \(fix)"
        }
        return nil
    }
}
