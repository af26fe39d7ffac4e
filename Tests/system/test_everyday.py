"""Issue 8 (everything but rooms): read state and receipts, resuming a subscription from an
event id, the notification hook, history export and the interactive chat (driven in tmux).
Real parleyd and parley processes on loopback."""
import json
import os
import select
import shutil
import sqlite3
import stat
import subprocess
import threading
import time
import uuid

import pytest

from parley_harness import PARLEY, RPCError, wait_until


def pair(cluster, a="alice", b="bob"):
    na = cluster.node(a).start()
    nb = cluster.node(b, peers=[na.address]).start()
    wait_until(lambda: na.online(b) and nb.online(a), what=f"{a} and {b} online")
    return na, nb


def config_file(cluster, name, text):
    path = cluster.dir / f"{name}.toml"
    path.write_text(text)
    return ["--config", str(path)]


def notifications(sub, n, timeout=15.0):
    return [sub.next_notification(timeout=timeout) for _ in range(n)]


def next_of(sub, method, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = sub.next_notification(timeout=max(0.1, deadline - time.monotonic()))
        if n["method"] == method:
            return n
    raise AssertionError(f"no {method} within {timeout}s")


def read_lines(pipe, n, timeout=15.0):
    """The first n lines a child writes to `pipe` (bounded wait, unbuffered reads)."""
    data = b""
    deadline = time.monotonic() + timeout
    while data.count(b"\n") < n and time.monotonic() < deadline:
        ready, _, _ = select.select([pipe], [], [], 0.5)
        if ready:
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            data += chunk
    return data.decode().splitlines()[:n]


def outgoing(node, peer):
    return [m for m in node.messages(peer) if m["direction"] == "out"]


# ---------------------------------------------------------------- read state and receipts


def test_unread_counts_and_read_receipts(cluster):
    alice, bob = pair(cluster)
    sub = alice.rpc(timeout=30)
    sub.call("messages.subscribe", {"peer": "bob"})
    for i in range(3):
        alice.cli("send", "bob", f"note {i}", "--wait")
    assert bob.peer_info("alice")["unread"] == 3
    peers_table = bob.cli("peers").stdout
    assert "UNREAD" in peers_table and any(l.startswith("alice") and l.rstrip().endswith("3")
                                           for l in peers_table.splitlines()), peers_table

    # Reading the conversation marks it read and tells alice.
    out = bob.cli("read", "alice").stdout
    assert "note 2" in out
    assert bob.peer_info("alice")["unread"] == 0
    assert all(m["readAt"] for m in bob.messages("alice"))
    read = []
    while len(read) < 3:
        n = sub.next_notification(timeout=15)
        if n["method"] == "message.read":
            read.append(n["params"])
    sent = outgoing(alice, "bob")
    assert sorted(r["id"] for r in read) == sorted(m["id"] for m in sent)
    assert all(r["readAt"] > 0 and isinstance(r["eventId"], int) for r in read)
    assert all(m["readAt"] and m["state"] == "delivered" for m in sent)
    assert alice.cli("read", "bob").stdout.count("✓✓") == 3

    # Only what was shown (and older) is marked: a message after the page stays unread.
    alice.cli("send", "bob", "later", "--wait")
    assert bob.peer_info("alice")["unread"] == 1
    bob.cli("read", "alice", "--keep-unread")
    assert bob.peer_info("alice")["unread"] == 1, "--keep-unread marked the message read"
    later = [m for m in bob.messages("alice") if m["body"] == "later"][0]
    res = bob.call("messages.mark_read", {"peer": "alice", "upTo": later["cursor"] - 1})
    assert res == {"marked": 0, "unread": 1}
    res = bob.call("messages.mark_read", {"peer": "alice"})
    assert res == {"marked": 1, "unread": 0}
    assert next_of(sub, "message.read")["params"]["id"] == later["id"]
    sub.close()


def test_no_read_receipts_when_turned_off(cluster):
    alice = cluster.node("alice").start()
    bob = cluster.node("bob", peers=[alice.address],
                       extra_args=config_file(cluster, "bob", "read_receipts = false\n")).start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="online")
    alice.cli("send", "bob", "private", "--wait")
    bob.cli("read", "alice")
    assert bob.peer_info("alice")["unread"] == 0, "local read state is kept"
    # A sync point: a receipt would travel before this chat on the same ordered session,
    # so once alice has the chat she would have the receipt too.
    bob.cli("send", "alice", "sync", "--wait")
    wait_until(lambda: any(m["body"] == "sync" for m in alice.messages("bob")), what="sync message")
    assert [m["readAt"] for m in outgoing(alice, "bob")] == [None]
    assert "✓✓" not in alice.cli("read", "bob").stdout


def test_reads_while_the_sender_is_away_are_reported_when_it_returns(cluster):
    alice, bob = pair(cluster)
    alice.cli("send", "bob", "read me later", "--wait")
    alice.stop()
    wait_until(lambda: not bob.online("alice"), what="bob sees alice offline")
    bob.cli("read", "alice")
    assert bob.peer_info("alice")["unread"] == 0
    alice.start()
    wait_until(lambda: outgoing(alice, "bob")[0]["readAt"], timeout=30, what="receipt after reconnect")


def test_hostile_mark_read_params(cluster):
    alice, bob = pair(cluster)
    for params, code in [({}, -32602), ({"peer": "nobody"}, -32001), ({"peer": "bob", "upTo": -1}, -32602),
                         ({"peer": "bob", "upTo": "x"}, -32602), ({"peer": "bob", "extra": 1}, -32602)]:
        with pytest.raises(RPCError) as e:
            alice.call("messages.mark_read", params)
        assert e.value.code == code, params
    assert alice.call("messages.mark_read", {"peer": "bob", "upTo": 2**62}) == {"marked": 0, "unread": 0}


# ---------------------------------------------------------------- resuming from an event id


def test_resume_from_cursor_delivers_exactly_the_missed_events(cluster):
    alice, bob = pair(cluster)
    sub = alice.rpc(timeout=30)
    first = sub.call("messages.subscribe")
    assert isinstance(first["lastEventId"], int)
    bob.cli("send", "alice", "seen", "--wait")
    seen = next_of(sub, "message.received")
    last = seen["params"]["eventId"]
    assert last > first["lastEventId"]
    sub.close()  # the subscriber goes away

    for i in range(5):
        bob.cli("send", "alice", f"missed {i}", "--wait")
    wait_until(lambda: len(alice.messages("bob")) == 6, what="alice stored the missed messages")

    again = alice.rpc(timeout=30)
    res = again.call("messages.subscribe", {"since": last})
    assert res["lastEventId"] == last + 5
    replayed = notifications(again, 5)
    assert [n["method"] for n in replayed] == ["message.received"] * 5
    assert [n["params"]["eventId"] for n in replayed] == list(range(last + 1, last + 6))
    assert [n["params"]["message"]["body"] for n in replayed] == [f"missed {i}" for i in range(5)]
    # Then live, continuing the numbering: nothing twice at the boundary.
    bob.cli("send", "alice", "live", "--wait")
    live = next_of(again, "message.received")
    assert live["params"]["eventId"] == last + 6 and live["params"]["message"]["body"] == "live"
    again.close()

    # The CLI does the same: parley follow --since ID --json.
    proc = subprocess.Popen([PARLEY, "follow", "--since", str(last), "--json", "--socket", str(alice.socket)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lines = [json.loads(l) for l in read_lines(proc.stdout, 6)]
        assert [l["eventId"] for l in lines] == list(range(last + 1, last + 7))
        assert lines[-1]["event"] == "message.received" and lines[-1]["message"]["body"] == "live"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_resume_replays_presence_events_as_they_were_sent(cluster):
    """Events that are not about a message are stored as their params; a resuming client
    gets them back with their ids, byte for byte what a live subscriber saw."""
    alice, bob = pair(cluster)
    live = alice.rpc(timeout=30)
    last = live.call("messages.subscribe")["lastEventId"]
    bob.stop()
    offline = next_of(live, "peer.offline")
    bob.start()
    online = next_of(live, "peer.online")
    live.close()

    again = alice.rpc(timeout=30)
    again.call("messages.subscribe", {"since": last})
    replayed = {}
    deadline = time.monotonic() + 15
    while len(replayed) < 2 and time.monotonic() < deadline:
        n = again.next_notification(timeout=5)
        if n["method"] in ("peer.offline", "peer.online"):
            replayed[n["method"]] = n
    again.close()
    for seen in (offline, online):
        got = replayed[seen["method"]]
        assert got["params"]["eventId"] == seen["params"]["eventId"] > last
        assert got["params"]["peer"]["name"] == "bob"
        assert got["params"] == seen["params"], "the replay is what was sent live"


def test_resume_during_a_burst_has_no_gap_and_no_duplicate(cluster):
    alice, bob = pair(cluster)
    probe = alice.rpc()
    start = probe.call("messages.subscribe")["lastEventId"]
    probe.close()
    n = 150
    done = threading.Event()

    def burst():
        r = bob.rpc(timeout=30)
        for i in range(n):
            r.call("messages.send", {"to": "alice", "body": f"b{i:03d}"})
        r.close()
        done.set()

    t = threading.Thread(target=burst)
    t.start()
    wait_until(lambda: len(alice.messages("bob")) >= 20, timeout=30, what="burst under way")
    sub = alice.rpc(timeout=30)
    sub.call("messages.subscribe", {"since": start, "peer": "bob"})
    got = []
    while len([x for x in got if x["method"] == "message.received"]) < n:
        got.append(sub.next_notification(timeout=30))
    t.join(timeout=60)
    ids = [x["params"]["eventId"] for x in got]
    assert ids == sorted(ids) and len(ids) == len(set(ids)), "events out of order or twice"
    assert ids == list(range(start + 1, start + 1 + len(ids))), "a gap in the event ids"
    bodies = [x["params"]["message"]["body"] for x in got if x["method"] == "message.received"]
    assert bodies == [f"b{i:03d}" for i in range(n)]
    sub.close()


def test_resume_from_an_expired_or_unknown_event_id_is_refused(cluster):
    alice, bob = pair(cluster)
    for i in range(3):
        bob.cli("send", "alice", f"m{i}", "--wait")
    last = alice.rpc().call("messages.subscribe")["lastEventId"]
    with pytest.raises(RPCError) as e:
        alice.call("messages.subscribe", {"since": last + 1000})
    assert e.value.code == -32602
    # Pretend the journal was pruned (what 100,000 events or a week does): the daemon is
    # stopped, so its database can be edited.
    alice.stop()
    db = sqlite3.connect(alice.state_dir / "parley.sqlite")
    db.execute("DELETE FROM event WHERE id <= ?", (last - 1,))
    db.execute("UPDATE counter SET value = ? WHERE name = 'events_pruned_through'", (last - 1,))
    db.commit()
    db.close()
    alice.start()
    with pytest.raises(RPCError) as e:
        alice.call("messages.subscribe", {"since": 0})
    assert e.value.code == -32020
    assert e.value.error["data"]["prunedThrough"] == last - 1
    assert e.value.error["data"]["lastEventId"] >= last
    assert alice.rpc().call("messages.subscribe", {"since": last - 1})["subscribed"]
    p = alice.cli("follow", "--since", "1", check=False, timeout=10)
    assert p.returncode == 1 and "no longer kept" in p.stderr


# ---------------------------------------------------------------- notification hook


HOOK_ENV = """#!/bin/sh
env > "$1/$PARLEY_MESSAGE_ID.env.tmp" && mv "$1/$PARLEY_MESSAGE_ID.env.tmp" "$1/$PARLEY_MESSAGE_ID.env"
"""


def hook_script(cluster, name, text):
    path = cluster.dir / name
    path.write_text(text)
    path.chmod(stat.S_IRWXU)
    return path


def read_env(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


@pytest.mark.parametrize("include_body", [False, True])
def test_notify_hook_gets_metadata_in_its_environment(cluster, include_body):
    out = cluster.dir / "hook-out"
    out.mkdir()
    script = hook_script(cluster, "hook.sh", HOOK_ENV)
    cfg = f'notify_command = ["{script}", "{out}"]\nnotify_include_body = {"true" if include_body else "false"}\n'
    alice = cluster.node("alice", extra_args=config_file(cluster, "alice", cfg))
    # A systemd-style variable the hook must not inherit (nobody listens there).
    alice.env["NOTIFY_SOCKET"] = str(cluster.dir / "no-such-notify-socket")
    alice.start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="online")
    sent = bob.call("messages.send", {"to": "alice", "body": "the text $(id) `id`", "wait": True})["message"]
    env_file = out / f"{sent['id']}.env"
    wait_until(env_file.exists, what="the hook ran")
    env = read_env(env_file)
    assert env["PARLEY_FROM"] == "bob"
    assert env["PARLEY_FROM_FINGERPRINT"] == alice.peer_info("bob")["fingerprint"]
    assert env["PARLEY_MESSAGE_ID"] == sent["id"]
    assert abs(int(env["PARLEY_RECEIVED_AT"]) - time.time() * 1000) < 60_000
    assert "NOTIFY_SOCKET" not in env
    if include_body:
        assert env["PARLEY_BODY"] == "the text $(id) `id`", "passed verbatim, never through a shell"
    else:
        assert "PARLEY_BODY" not in env
    assert "PARLEY_ROOM" not in env


def test_notify_hooks_are_bounded_and_a_hung_hook_is_killed(cluster):
    out = cluster.dir / "hook-out"
    out.mkdir()
    script = hook_script(cluster, "hook.sh", """#!/bin/sh
case "$PARLEY_BODY" in
  hang) echo $$ > "$1/hung.pid"; exec sleep 600 ;;
esac
echo "S $(date +%s%N)" > "$1/$PARLEY_MESSAGE_ID.t"
sleep 0.5
echo "E $(date +%s%N)" >> "$1/$PARLEY_MESSAGE_ID.t"
""")
    cfg = f'notify_command = ["{script}", "{out}"]\nnotify_include_body = true\n'
    alice = cluster.node("alice", extra_args=config_file(cluster, "alice", cfg)).start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="online")

    # A burst: at most 4 hooks run at once, and every one of them runs.
    r = bob.rpc(timeout=30)
    for i in range(12):
        r.call("messages.send", {"to": "alice", "body": f"burst {i}"})
    r.close()

    def finished():
        files = list(out.glob("*.t"))
        return files if len(files) == 12 and all("E " in f.read_text() for f in files) else None

    files = wait_until(finished, timeout=30, what="12 hooks finished")
    spans = []
    for f in files:
        marks = dict(line.split() for line in f.read_text().splitlines())
        spans.append((int(marks["S"]), int(marks["E"])))
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert 1 <= most <= 4, f"{most} hooks ran at once"

    # A hook that never ends is stopped after the timeout and reaped (no zombie left).
    bob.cli("send", "alice", "hang", "--wait")
    pid_file = out / "hung.pid"
    wait_until(pid_file.exists, what="the hanging hook started")
    pid = int(pid_file.read_text())
    assert os.path.exists(f"/proc/{pid}")
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=30, what="the hung hook killed and reaped")
    assert alice.proc.poll() is None


# ---------------------------------------------------------------- export


def test_export_json_and_text(cluster):
    alice, bob = pair(cluster)
    carol = cluster.node("carol", peers=[alice.address]).start()
    wait_until(lambda: alice.online("carol"), what="carol online")
    alice.cli("send", "bob", "to bob\nsecond line", "--wait")
    bob.cli("send", "alice", "from bob", "--wait")
    alice.cli("send", "carol", "to carol", "--wait")
    wait_until(lambda: len(alice.messages()) == 3, what="three messages")

    lines = [json.loads(l) for l in alice.cli("export", "bob", "--format", "json").stdout.splitlines()]
    assert [l["body"] for l in lines] == ["to bob\nsecond line", "from bob"]
    assert [l["direction"] for l in lines] == ["out", "in"]
    assert all(l["peerName"] == "bob" for l in lines)
    assert set(lines[0]) == {"cursor", "id", "direction", "peer", "peerName", "from", "fromName", "to", "toName",
                             "sequence", "createdAt", "state", "deliveredAt", "readAt", "body",
                             "room", "replyTo", "editedAt", "deletedAt", "reactions"}
    everything = [json.loads(l) for l in alice.cli("export", "--format", "json").stdout.splitlines()]
    assert [l["body"] for l in everything] == ["to bob\nsecond line", "from bob", "to carol"]
    assert [l["cursor"] for l in everything] == sorted(l["cursor"] for l in everything)

    text = alice.cli("export", "bob").stdout
    assert "conversation with bob" in text
    assert "alice → bob: to bob" in text and "second line" in text and "bob → alice: from bob" in text
    assert "to carol" not in text
    assert "all conversations" in alice.cli("export", "--format", "text").stdout
    # Exporting marks nothing read.
    assert alice.peer_info("bob")["unread"] == 1


def test_export_pages_through_long_histories(cluster):
    alice, bob = pair(cluster)
    n = 1234
    r = alice.rpc(timeout=60)
    for i in range(n):
        r.call("messages.send", {"to": "bob", "body": f"n{i}"})
    r.close()
    lines = alice.cli("export", "bob", "--json", timeout=120).stdout.splitlines()
    assert [json.loads(l)["body"] for l in lines] == [f"n{i}" for i in range(n)]


# ---------------------------------------------------------------- chat in tmux


class Tmux:
    """A private tmux server (its own socket) running one command in a 100x30 window."""

    def __init__(self, command, width=100, height=30):
        self.name = f"parley-{uuid.uuid4().hex[:8]}"
        subprocess.run(["tmux", "-L", self.name, "-f", "/dev/null", "new-session", "-d", "-s", "chat",
                        "-x", str(width), "-y", str(height), command], check=True)

    def screen(self):
        return subprocess.run(["tmux", "-L", self.name, "capture-pane", "-p", "-t", "chat"],
                              capture_output=True, text=True).stdout

    def keys(self, *keys):
        subprocess.run(["tmux", "-L", self.name, "send-keys", "-t", "chat", *keys], check=True)

    def resize(self, width, height):
        subprocess.run(["tmux", "-L", self.name, "resize-window", "-t", "chat", "-x", str(width), "-y", str(height)],
                       check=True)

    def alive(self):
        return subprocess.run(["tmux", "-L", self.name, "has-session", "-t", "chat"], capture_output=True).returncode == 0

    def close(self):
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
def test_chat_in_tmux_shows_history_live_messages_and_sends(cluster):
    alice, bob = pair(cluster)
    bob.cli("send", "alice", "history from bob", "--wait")
    alice.cli("send", "bob", "history from alice", "--wait")
    tmux = Tmux(f"{PARLEY} chat bob --socket {alice.socket}")
    try:
        def screen_has(*texts):
            s = tmux.screen()
            return s if all(t in s for t in texts) else None

        s = wait_until(lambda: screen_has("history from bob", "history from alice", "bob (", ") · online"),
                       what="history on screen")
        rows = s.rstrip("\n").split("\n")
        assert len(rows) == 30 and rows[-1].startswith(">"), "the prompt is on the last row"
        assert "you: history from alice ✓" in s
        # Shown means read: bob gets a read receipt for his message.
        wait_until(lambda: bob.messages("alice")[0]["readAt"], what="bob's message marked read")

        # A message from the other node appears live.
        bob.cli("send", "alice", "live from bob", "--wait")
        wait_until(lambda: screen_has("bob: live from bob"), what="live message on screen")

        # Typing and Enter sends; the other node receives it; its read receipt shows ✓✓.
        tmux.keys("typed by alice", "Enter")
        wait_until(lambda: any(m["body"] == "typed by alice" for m in bob.messages("alice")), what="bob receives")
        wait_until(lambda: screen_has("you: typed by alice ✓"), what="delivered mark")
        bob.cli("read", "alice")
        wait_until(lambda: screen_has("you: typed by alice ✓✓"), what="read mark")
        assert tmux.screen().rstrip("\n").split("\n")[-1].strip() == ">", "the prompt is empty after sending"

        # A smaller window: everything is laid out again, the prompt still at the bottom.
        tmux.resize(50, 12)
        s = wait_until(lambda: screen_has("typed by alice"), what="redraw after resize")
        rows = s.rstrip("\n").split("\n")
        assert len(rows) == 12 and rows[-1].startswith(">")
        assert all(len(r) <= 50 for r in rows)

        tmux.keys("C-c")
        wait_until(lambda: not tmux.alive(), what="Ctrl-C quits")
    finally:
        tmux.close()


def test_chat_without_a_terminal_is_a_usage_error_and_marks_nothing(cluster):
    alice, bob = pair(cluster)
    bob.cli("send", "alice", "unread", "--wait")
    p = alice.cli("chat", "bob", check=False)
    assert p.returncode == 2 and "terminal" in p.stderr
    assert alice.peer_info("bob")["unread"] == 1
