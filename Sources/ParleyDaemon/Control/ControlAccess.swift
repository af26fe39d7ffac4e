/// Who may use the control socket, decided from the caller's real credentials. Pure.
///
/// The kernel tells us the connecting process's uid, gid and pid (SO_PEERCRED) and its
/// supplementary groups (SO_PEERGROUPS, `PeerGroups`; `/proc/PID/status` "Groups:" only
/// where the socket cannot say, as parleyd under `ProtectProc=invisible` cannot read other
/// users' processes): what the process actually holds: `setpriv --groups parley` counts, and a user added to the group
/// in /etc/group who has not logged in again does not (their processes do not have it yet,
/// and the file's 0660 mode would refuse them anyway). The old check read /etc/group and
/// got both wrong.
enum ControlAccess {
    struct Caller: Equatable {
        var uid: UInt32
        var gid: UInt32
        /// The supplementary groups, nil when they could not be read (the process is gone).
        var groups: [UInt32]?
    }

    /// Whom a daemon serves.
    struct Rule: Equatable, Sendable {
        var daemonUID: UInt32
        var daemonGID: UInt32
        /// False for a person's own instance (its socket directory is 0700): then only that
        /// person (and root) may connect, even when others share the person's primary group.
        var groupMayConnect: Bool
    }

    /// root, the daemon's own user, or (when the rule lets the group in) a process holding
    /// the daemon's group (primary or supplementary).
    static func allows(_ caller: Caller, rule: Rule) -> Bool {
        if caller.uid == 0 || caller.uid == rule.daemonUID { return true }
        guard rule.groupMayConnect else { return false }
        if caller.gid == rule.daemonGID { return true }
        return caller.groups?.contains(rule.daemonGID) ?? false
    }

    static func allows(_ caller: Caller, daemonUID: UInt32, daemonGID: UInt32) -> Bool {
        allows(caller, rule: Rule(daemonUID: daemonUID, daemonGID: daemonGID, groupMayConnect: true))
    }

    /// What another user is told by a person's own instance.
    static func ownerOnlyRefusal(ownerName: String?) -> String {
        "not permitted: this parleyd belongs to \(ownerName ?? "another user") and serves nobody else; "
            + "use your own (`sudo systemctl enable --now parleyd@$USER`)"
    }

    /// The supplementary groups in the text of `/proc/PID/status`; nil if there is no
    /// well-formed "Groups:" line.
    static func supplementaryGroups(procStatus: String) -> [UInt32]? {
        for line in procStatus.split(separator: "\n") where line.hasPrefix("Groups:") {
            var groups: [UInt32] = []
            for field in line.dropFirst("Groups:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                guard let gid = UInt32(field) else { return nil }
                groups.append(gid)
            }
            return groups
        }
        return nil
    }

    /// What a refused caller is told: exactly what to do, and what joining the group
    /// means (everyone in it is this one identity), with the other way: their own instance.
    static func refusal(groupName: String?, daemonGID: UInt32) -> String {
        let group = groupName ?? String(daemonGID)
        return "not permitted: you are not in group \(group): sudo usermod -aG \(group) $USER, then log in again "
            + "(or run parley as parleyd's user). Everyone in group \(group) shares this one Parley identity and "
            + "reads all of its messages; for a Parley of your own instead: sudo systemctl enable --now parleyd@$USER"
    }
}
