"""Issue 28: `parley notify` as each person's systemd *user* unit, on a booted Debian 12 host
with the package installed (scripts/debhost; the package tests' harness).

alice and bob each have their own parleyd@ instance and a user session of their own
(`loginctl enable-linger`: the user manager and, with dbus-user-session, the session bus
at /run/user/UID/bus), a notification server on that bus (fake_notification_server.py,
started as a user unit: it records every Notify call in the person's home), and
`systemctl --user enable --now parley-notify`, the shipped user unit, as a person does.
carol, a third person on the host, sends alice a message: alice's session shows it, bob's
gets nothing; then carol sends bob one: only bob's session shows it (which also proves
bob's agent was listening all along)."""
import json
from pathlib import Path

import pytest

debhost = pytest.importorskip("debhost", reason="Tests/system/debhost.py (issue 27's booted-host harness) is missing")
from debhost import DebHost  # noqa: E402
from test_package import deb, root  # noqa: E402,F401  (session fixtures: the .deb, the cached root)
from test_package import pytestmark  # noqa: E402,F401
from test_people_booted import DELIVERY_TIMEOUT, DISCOVERY_TIMEOUT, online, start_instances  # noqa: E402

SERVER = "/usr/local/lib/parley-test/fake_notification_server.py"
# The user manager and its bus, after enable-linger: a few seconds on a loaded machine.
SESSION_TIMEOUT = 60


def in_session(h, user, *argv, timeout=60):
    """`argv` as `user` inside their user session (the user manager's bus and runtime dir)."""
    uid = h.check("id", "-u", user).strip()
    return h.run("runuser", "-u", user, "--", "env", f"XDG_RUNTIME_DIR=/run/user/{uid}",
                 f"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/{uid}/bus", *argv, timeout=timeout)


def notifications(h, user):
    out = h.run("cat", f"/home/{user}/notifications.jsonl")
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


def start_session_with_notifications(h, user):
    h.check("loginctl", "enable-linger", user)
    h.wait_until(f"{user}'s session bus", lambda: in_session(h, user, "busctl", "--user", "status").returncode == 0,
                 timeout=SESSION_TIMEOUT)
    started = in_session(h, user, "systemd-run", "--user", "--unit=notification-server", "/usr/bin/python3", SERVER,
                         f"/home/{user}/notifications.jsonl")
    assert started.returncode == 0, started.stdout + started.stderr
    h.wait_until(f"a notification server on {user}'s session bus",
                 lambda: "org.freedesktop.Notifications" in in_session(h, user, "busctl", "--user", "list").stdout,
                 timeout=SESSION_TIMEOUT)
    # What the person does (docs/NOTIFY.md): the shipped user unit.
    enabled = in_session(h, user, "systemctl", "--user", "enable", "--now", "parley-notify")
    assert enabled.returncode == 0, enabled.stdout + enabled.stderr
    uid = h.check("id", "-u", user).strip()
    h.wait_until(f"{user}'s parley notify follows their parleyd",
                 lambda: f"following parleyd at /run/parley-user/{user}/control.sock" in h.run(
                     "journalctl", "--no-pager", f"_UID={uid}", "_SYSTEMD_USER_UNIT=parley-notify.service").stdout,
                 timeout=SESSION_TIMEOUT)


def test_parley_notify_as_each_persons_user_unit_shows_their_own_messages_only(deb, root):  # noqa: F811
    with DebHost("notifyhost") as h:
        h.install(deb)
        h.check("mkdir", "-p", str(Path(SERVER).parent))
        h.copy_in(Path(__file__).parent / "fake_notification_server.py", SERVER)
        h.check("chmod", "0644", SERVER)
        start_instances(h, ["alice", "bob", "carol"])
        for user in ("alice", "bob"):
            start_session_with_notifications(h, user)
        h.wait_until("carol sees alice and bob online",
                     lambda: online(h, "carol", "alice") and online(h, "carol", "bob"), timeout=DISCOVERY_TIMEOUT)

        sent = h.as_user("carol", "parley send alice 'for alice only' --wait", timeout=DELIVERY_TIMEOUT)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        h.wait_until("alice's notification", lambda: notifications(h, "alice"), timeout=DELIVERY_TIMEOUT)
        shown = notifications(h, "alice")
        assert len(shown) == 1 and shown[0]["body"] == "for alice only", shown
        assert shown[0]["summary"].startswith("carol"), shown

        sent = h.as_user("carol", "parley send bob 'for bob only' --wait", timeout=DELIVERY_TIMEOUT)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        h.wait_until("bob's notification", lambda: notifications(h, "bob"), timeout=DELIVERY_TIMEOUT)
        # Bob's session showed his message and never alice's; alice's showed nothing more.
        assert [n["body"] for n in notifications(h, "bob")] == ["for bob only"], notifications(h, "bob")
        assert [n["body"] for n in notifications(h, "alice")] == ["for alice only"], notifications(h, "alice")
        # The agents run as the people themselves, in their own sessions.
        for user in ("alice", "bob"):
            owner = in_session(h, user, "systemctl", "--user", "show", "-p", "MainPID", "--value", "parley-notify")
            pid = owner.stdout.strip()
            assert pid not in ("", "0"), owner.stdout + owner.stderr
            assert h.check("stat", "-c", "%U", f"/proc/{pid}").strip() == user
