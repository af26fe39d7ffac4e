"""Issue 30 where people run it: rooms on booted Debian 12 hosts (scripts/debhost) with the
installed package, each person an ordinary user (not in group parley) with their own
instance of the shipped hardened template unit (`systemctl enable --now parleyd@NAME`),
the hosts on one lab LAN (scripts/lanlab), finding each other over mDNS through their own
avahi-daemons. The office story, on real units:

- alice and bob share the lab PC (host 1), carol has her own (host 2);
- alice creates #lab with bob and carol and writes "welcome" at once: before anyone has
  joined it is not "delivered" to anyone (it waits for the invited); each gets it on
  joining, and alice then sees who holds it;
- bob's instance is stopped (`systemctl stop parleyd@bob`); alice writes while only carol
  is online and sees "carol has it"; alice's instance is stopped; bob's starts: bob gets
  alice's messages from carol, verified as alice's (her fingerprint), shown once, in order
  (`parley read '#lab'` as bob);
- alice is back: her messages are delivered and `parley read` names who holds them;
- alice removes bob and writes again: carol gets it (the positive control), bob never does;
- mallory, another local user of the lab PC, cannot read bob's room through his control
  socket (permission denied), nor his state.

Setup is shared with the package tests (test_package's session fixtures): the .deb is
built once per session, the host root once per checkout.
"""
import json
import time

import pytest

debhost = pytest.importorskip("debhost", reason="Tests/system/debhost.py (issue 27's booted-host harness) is missing")
from debhost import DebHost, lab_netns  # noqa: E402
import lab as lab_module  # noqa: E402
from test_package import deb, root  # noqa: E402,F401  (session fixtures: the .deb, the cached root)
# The same bound as the package tests: run alone, this test builds the package and the root.
from test_package import pytestmark  # noqa: E402,F401
from test_people_booted import DISCOVERY_TIMEOUT, online, start_instances, whoami  # noqa: E402

# A room message between instances that have a session (an operation, its ack, a sync
# round): seconds; bounded generously for a loaded 2-core machine.
ROOM_TIMEOUT = 90
# An instance that was stopped: started by systemd, then its peers found again over mDNS.
RECONNECT_TIMEOUT = 120

BODIES = ["17:00 the build is broken", "17:01 fixed it, see the log", "17:02 going home"]


def rooms(host, user):
    out = host.as_user(user, "parley rooms --json")
    assert out.returncode == 0, out.stdout + out.stderr
    listed = json.loads(out.stdout)
    return listed["rooms"] if isinstance(listed, dict) else listed


def lab_room(host, user):
    return next((r for r in rooms(host, user) if r["name"] == "lab"), None)


def joined(host, user):
    r = lab_room(host, user)
    return sorted(m["name"] for m in r["members"] if m["joined"]) if r else []


def messages(host, user):
    """#lab as `user` reads it (--json; --keep-unread: looking is not reading)."""
    out = host.as_user(user, "parley read '#lab' --json --keep-unread --limit 200")
    if out.returncode != 0:
        return []
    return json.loads(out.stdout)["messages"]


def incoming(host, user):
    return [(m["fromName"], m["body"]) for m in messages(host, user) if m["direction"] == "in"]


def outgoing(host, user):
    return [m for m in messages(host, user) if m["direction"] == "out"]


def holders(m):
    return sorted(h["name"] for h in (m.get("roomDelivery") or {}).get("heldBy", []))


def read_text(host, user):
    out = host.as_user(user, "parley read '#lab' --keep-unread")
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def accept(host, user):
    host.wait_until(f"{user} is invited to #lab", lambda: (lab_room(host, user) or {}).get("status") == "invited",
                    timeout=ROOM_TIMEOUT)
    host.check("runuser", "-l", user, "-c", "parley room accept '#lab'")


def set_instance(host, user, action):
    host.check("systemctl", action, f"parleyd@{user}")
    want = "active" if action == "start" else "inactive"
    host.wait_until(f"parleyd@{user} {want}",
                    lambda: host.run("systemctl", "is-active", f"parleyd@{user}").stdout.strip() == want, timeout=60)
    if action == "start":
        host.wait_until(f"{user}'s instance answers", lambda: host.as_user(user, "parley whoami").returncode == 0,
                        timeout=60)


def test_the_office_story_of_a_room_on_booted_hosts_with_the_installed_package(deb, root):  # noqa: F811
    reason = lab_module.unavailable_reason()
    if reason:
        pytest.skip(reason)
    started = time.monotonic()
    with lab_module.Lab(hosts=2) as lab:
        # The booted hosts run their own avahi-daemon in the lab's namespaces: stop the lab's.
        for name in ("h1", "h2"):
            lab.lanlab("stop-avahi", name)
        with DebHost("lab-pc", netns=lab_netns(lab, "h1")) as h1, \
                DebHost("carol-pc", netns=lab_netns(lab, "h2")) as h2:
            h1.install(deb)
            h2.install(deb)
            start_instances(h1, ["alice", "bob"])
            start_instances(h2, ["carol"])
            h1.check("useradd", "--create-home", "--shell", "/bin/bash", "mallory")
            fps = {u: whoami(h, u)["fingerprint"] for h, u in ((h1, "alice"), (h1, "bob"), (h2, "carol"))}
            assert len(set(fps.values())) == 3, fps
            where = {"alice": h1, "bob": h1, "carol": h2}
            for me, host in where.items():
                for other in where:
                    if other != me:
                        host.wait_until(f"{me} sees {other} online", lambda h=host, m=me, o=other: online(h, m, o),
                                        timeout=DISCOVERY_TIMEOUT)

            # alice creates #lab and writes at once, before anyone has joined.
            h1.check("runuser", "-l", "alice", "-c", "parley room create lab bob carol")
            sent = h1.as_user("alice", "parley send '#lab' welcome --wait", timeout=ROOM_TIMEOUT)
            assert sent.returncode == 0, sent.stdout + sent.stderr
            assert "those invited get it when they join" in sent.stdout, sent.stdout
            welcome = outgoing(h1, "alice")[0]
            # Nobody holds it yet: it waits for the invited, it is not "delivered" (0 of 0).
            assert welcome["state"] == "queued", welcome
            assert welcome["roomDelivery"] == {"heldBy": [], "members": 2}, welcome
            assert "welcome ✓" not in read_text(h1, "alice")

            accept(h1, "bob")
            accept(h2, "carol")
            for user in ("alice", "bob", "carol"):
                where[user].wait_until(f"{user} sees everyone joined #lab",
                                       lambda u=user: joined(where[u], u) == ["alice", "bob", "carol"],
                                       timeout=ROOM_TIMEOUT)
            for user in ("bob", "carol"):
                where[user].wait_until(f"{user} gets the welcome",
                                       lambda u=user: incoming(where[u], u) == [("alice", "welcome")],
                                       timeout=ROOM_TIMEOUT)
            h1.wait_until("alice sees both hold the welcome",
                          lambda: outgoing(h1, "alice")[0]["state"] == "delivered", timeout=ROOM_TIMEOUT)
            assert holders(outgoing(h1, "alice")[0]) == ["bob", "carol"]

            # bob's instance stops; alice writes while only carol is online.
            set_instance(h1, "bob", "stop")
            for user in ("alice", "carol"):
                where[user].wait_until(f"{user} sees bob offline", lambda u=user: not online(where[u], u, "bob"),
                                       timeout=ROOM_TIMEOUT)
            for body in BODIES:
                out = h1.as_user("alice", f"parley send '#lab' '{body}'")
                assert out.returncode == 0, out.stdout + out.stderr
            h2.wait_until("carol has alice's messages",
                          lambda: incoming(h2, "carol") == [("alice", "welcome")] + [("alice", b) for b in BODIES],
                          timeout=ROOM_TIMEOUT)
            # Delivery state that names who holds it: carol, not bob.
            h1.wait_until("alice sees carol holds them",
                          lambda: [holders(m) for m in outgoing(h1, "alice")[1:]] == [["carol"]] * 3,
                          timeout=ROOM_TIMEOUT)
            assert all(m["state"] == "partial" for m in outgoing(h1, "alice")[1:])
            assert f"{BODIES[-1]} ✓ carol has it (1 of 2)" in read_text(h1, "alice")

            # alice's instance stops; bob's starts: he gets alice's messages from carol.
            set_instance(h1, "alice", "stop")
            h2.wait_until("carol sees alice offline", lambda: not online(h2, "carol", "alice"), timeout=ROOM_TIMEOUT)
            set_instance(h1, "bob", "start")
            h1.wait_until("bob and carol have a session", lambda: online(h1, "bob", "carol"),
                          timeout=RECONNECT_TIMEOUT)
            h1.wait_until("bob gets alice's messages from carol",
                          lambda: incoming(h1, "bob") == [("alice", "welcome")] + [("alice", b) for b in BODIES],
                          timeout=ROOM_TIMEOUT)
            assert not online(h1, "bob", "alice"), "alice is away: they came from carol"
            got = [m for m in messages(h1, "bob") if m["direction"] == "in"]
            assert len({m["id"] for m in got}) == len(got) == 4, got
            assert {m["from"] for m in got} == {fps["alice"]}, "verified as alice's, whoever handed them over"
            assert [m["sequence"] for m in got] == sorted(m["sequence"] for m in got)
            shown = h1.as_user("bob", "parley read '#lab'")
            assert shown.returncode == 0, shown.stdout + shown.stderr
            for body in BODIES:
                assert shown.stdout.count(body) == 1, shown.stdout
                assert f"#lab alice: {body}" in shown.stdout, shown.stdout
            positions = [shown.stdout.index(body) for body in BODIES]
            assert positions == sorted(positions), shown.stdout

            # alice is back: every member holds her messages, and she sees who.
            set_instance(h1, "alice", "start")
            h1.wait_until("alice's messages delivered to every member",
                          lambda: {m["state"] for m in outgoing(h1, "alice")} == {"delivered"},
                          timeout=RECONNECT_TIMEOUT)
            assert [holders(m) for m in outgoing(h1, "alice")] == [["bob", "carol"]] * 4
            assert f"{BODIES[-1]} ✓" in read_text(h1, "alice")
            assert incoming(h1, "bob") == [("alice", "welcome")] + [("alice", b) for b in BODIES], "still once each"

            # Removal: alice removes bob and writes again; carol gets it, bob never.
            h1.check("runuser", "-l", "alice", "-c", "parley room remove '#lab' bob")
            for user in ("alice", "bob", "carol"):
                where[user].wait_until(f"{user} sees bob removed", lambda u=user: "bob" not in joined(where[u], u),
                                       timeout=ROOM_TIMEOUT)
            after = "after bob left the project"
            out = h1.as_user("alice", f"parley send '#lab' '{after}' --wait", timeout=ROOM_TIMEOUT)
            assert out.returncode == 0, out.stdout + out.stderr
            h2.wait_until("carol gets what alice wrote after the removal",
                          lambda: ("alice", after) in incoming(h2, "carol"), timeout=ROOM_TIMEOUT)
            h2.check("runuser", "-l", "carol", "-c", "parley send '#lab' 'carol, after the removal' --wait")
            # Barriers: a later direct message from each of them on the same session has
            # reached bob, so whatever either would have passed him is in by now.
            for host, user in ((h1, "alice"), (h2, "carol")):
                out = host.as_user(user, f"parley send bob 'barrier from {user}' --wait", timeout=ROOM_TIMEOUT)
                assert out.returncode == 0, out.stdout + out.stderr
                h1.wait_until(f"bob has {user}'s barrier",
                              lambda u=user: f"barrier from {u}" in h1.as_user("bob", f"parley read {u}").stdout,
                              timeout=ROOM_TIMEOUT)
            bobs = h1.as_user("bob", "parley read '#lab' --keep-unread")
            assert after not in bobs.stdout and "carol, after the removal" not in bobs.stdout, bobs.stdout
            assert incoming(h1, "bob") == [("alice", "welcome")] + [("alice", b) for b in BODIES]

            # mallory, another local user of the lab PC, cannot read bob's room.
            refused = h1.as_user("mallory", "parley read '#lab' --socket /run/parley-user/bob/control.sock")
            assert refused.returncode != 0 and "ermission denied" in refused.stdout + refused.stderr, (
                refused.stdout + refused.stderr)
            assert BODIES[0] not in refused.stdout
            assert h1.run("runuser", "-u", "mallory", "--", "ls", "/var/lib/parley-user/bob").returncode != 0
    lab_module.record("booted rooms office story (two hosts, three instances)", time.monotonic() - started)
