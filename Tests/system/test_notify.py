"""Issue 28: `parley notify`, desktop notifications per person (docs/NOTIFY.md).

A real private session bus (`dbus-daemon --session` on a socket in the test's directory),
a small notification server on it recording every Notify call
(fake_notification_server.py, python3-dbus), real parleyd processes, and `parley notify`
following alice's daemon. A message from bob produces exactly one notification whose
markup is escaped and whose sender shows bob's fingerprint (not verified); a flood from bob
is coalesced into a summary, not a notification per message; no message text is on any
process's command line."""
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from parley_harness import PARLEY, Cluster, wait_until

HERE = Path(__file__).parent
SYSTEM_PYTHON = "/usr/bin/python3"


def short_fp(fingerprint):
    return "-".join(fingerprint.split("-")[:2])


@pytest.fixture(scope="module")
def desktop():
    if not shutil.which("dbus-daemon"):
        pytest.fail("dbus-daemon is needed: scripts/install-deps.sh test (package dbus)")
    r = subprocess.run([SYSTEM_PYTHON, "-c", "import dbus, gi"], capture_output=True)
    if r.returncode != 0:
        pytest.fail("python3-dbus and python3-gi are needed: scripts/install-deps.sh test")
    cluster = Cluster()
    procs = []
    try:
        bus_socket = cluster.dir / "bus"
        bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1",
                                f"--address=unix:path={bus_socket}"], stdout=subprocess.PIPE, text=True)
        procs.append(bus)
        address = bus.stdout.readline().strip()
        assert address.startswith("unix:"), address
        record = cluster.dir / "notifications.jsonl"
        record.touch()
        env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=address)
        server = subprocess.Popen([SYSTEM_PYTHON, str(HERE / "fake_notification_server.py"), str(record)],
                                  stdout=subprocess.PIPE, text=True, env=env)
        procs.append(server)
        assert server.stdout.readline().strip() == "ready"
        alice = cluster.node("alice").start()
        bob = cluster.node("bob", peers=[alice.address]).start()
        wait_until(lambda: alice.online("bob") and bob.online("alice"), timeout=20, what="alice and bob connected")
        notify = subprocess.Popen([PARLEY, "notify", "--socket", str(alice.socket)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        procs.append(notify)
        # It says when it follows the daemon (subscribed): from then on nothing is missed.
        line = notify.stdout.readline()
        assert "following" in line, (line, notify.stderr.read() if notify.poll() is not None else "")
        yield dict(cluster=cluster, alice=alice, bob=bob, record=record, notify=notify)
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        cluster.close()


def calls(record):
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def test_a_message_is_one_notification_with_escaped_text_and_the_senders_fingerprint(desktop):
    alice, bob, record = desktop["alice"], desktop["bob"], desktop["record"]
    hostile = '<b>urgent</b> & <a href="http://evil.example/">open me</a> <img src="file:///etc/passwd">'
    bob.call("messages.send", {"to": "alice", "body": hostile})
    wait_until(lambda: len(calls(record)) >= 1, timeout=15, what="a notification")
    # A second, ordinary message: its notification replaces the first (one per
    # conversation) and, arriving after it, shows that the first was shown exactly once.
    bob.call("messages.send", {"to": "alice", "body": "second"})
    wait_until(lambda: len(calls(record)) >= 2, timeout=15, what="the second notification")
    first, second = calls(record)[:2]
    assert len(calls(record)) == 2, calls(record)
    bob_fp = bob.whoami()["fingerprint"]
    assert first["app_name"] == "Parley"
    assert first["summary"] == f"bob ({short_fp(bob_fp)})", "an unverified sender shows their fingerprint"
    assert first["body"] == ('&lt;b&gt;urgent&lt;/b&gt; &amp; &lt;a href="http://evil.example/"&gt;open me&lt;/a&gt; '
                             '&lt;img src="file:///etc/passwd"&gt;'), first["body"]
    assert first["replaces_id"] == 0 and second["replaces_id"] == first["id"], (first, second)
    assert second["body"] == "second"
    # No message text on any command line (other users can read /proc/*/cmdline).
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        assert b"open me" not in cmdline


def test_a_flood_is_coalesced(desktop):
    bob, record, notify = desktop["bob"], desktop["record"], desktop["notify"]
    before = len(calls(record))
    count = 60
    for i in range(count):
        bob.call("messages.send", {"to": "alice", "body": f"flood {i}"})
    # The summary: the latest text and how many; it comes once the rate allows.
    wait_until(lambda: any("flood 59" in c["body"] and "new messages" in c["body"] for c in calls(record)[before:]),
               timeout=30, what="the flood's summary")
    flood = calls(record)[before:]
    assert len(flood) <= 4, f"{len(flood)} notifications for {count} messages: {[c['body'] for c in flood]}"
    # Every message is accounted for: shown alone, or counted in a summary.
    summarised = [int(re.match(r"(\d+) new messages\. The latest: flood \d+", c["body"]).group(1))
                  for c in flood if "new messages" in c["body"]]
    assert len(flood) - len(summarised) + sum(summarised) == count, [c["body"] for c in flood]
    # All in bob's one bubble: each replaces the notification bob's conversation already has.
    assert len({c["id"] for c in calls(record)}) == 1, calls(record)
    assert notify.poll() is None, notify.stderr.read()
