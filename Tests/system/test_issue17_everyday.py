"""Issue 17 (everything but the conversation features): history that opens on the newest,
CLI habits, reaching the system service, search, reconnecting without mDNS, TOML. Real
parleyd and parley processes on loopback; `parley chat` driven in tmux."""
import json
import os
import pwd
import grp
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from parley_harness import PARLEY, PARLEYD, RPC, RPCError, wait_until


def pair(cluster, a="alice", b="bob"):
    na = cluster.node(a).start()
    nb = cluster.node(b, peers=[na.address]).start()
    wait_until(lambda: na.online(b) and nb.online(a), what=f"{a} and {b} online")
    return na, nb


def burst(node, to, n, prefix="m"):
    r = node.rpc(timeout=60)
    for i in range(n):
        r.call("messages.send", {"to": to, "body": f"{prefix}{i}"})
    r.close()


def cli(node, *args, input=None, check=True, timeout=30, env=None):
    p = subprocess.run([PARLEY, *args, "--socket", str(node.socket)], input=input, capture_output=True,
                       text=True, timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"parley {' '.join(args)} failed ({p.returncode}): {p.stdout}{p.stderr}")
    return p


def bodies_at(node, peer):
    return [m["body"] for m in node.messages(peer)]


# ---------------------------------------------------------------- 1. history newest first


def test_read_opens_on_the_newest_page_points_back_and_clears_unread(cluster):
    alice, bob = pair(cluster)
    burst(bob, "alice", 60)
    wait_until(lambda: alice.peer_info("bob")["unread"] == 60, what="60 unread at alice")

    p = alice.cli("read", "bob")
    shown = [l.split(": ", 1)[1] for l in p.stdout.splitlines()]
    assert shown == [f"m{i}" for i in range(10, 60)], "the newest 50, oldest of them first"
    cursors = [m["cursor"] for m in alice.call("messages.list", {"peer": "bob", "after": 0, "limit": 1000})["messages"]]
    assert f"More: parley read bob --before {cursors[10]}" in p.stderr, p.stderr
    # Shown means read: unread counts clear, read receipts go out for the newest message.
    assert alice.peer_info("bob")["unread"] == 0
    wait_until(lambda: bob.messages("alice")[-1]["readAt"], what="bob sees m59 read")

    older = alice.cli("read", "bob", "--before", str(cursors[10]))
    assert [l.split(": ", 1)[1] for l in older.stdout.splitlines()] == [f"m{i}" for i in range(10)]
    assert "More:" not in older.stderr and f"Newer: parley read bob --after {cursors[9]}" in older.stderr

    page = alice.call("messages.list", {"peer": "bob", "limit": 5})
    assert [m["body"] for m in page["messages"]] == [f"m{i}" for i in range(55, 60)]
    assert page["olderCursor"] == page["nextCursor"] == page["messages"][0]["cursor"]
    assert page["newerCursor"] is None
    forward = alice.call("messages.list", {"peer": "bob", "after": cursors[0], "limit": 2})
    assert [m["body"] for m in forward["messages"]] == ["m1", "m2"]
    assert forward["nextCursor"] == forward["newerCursor"] == cursors[2]


def test_read_without_a_peer_marks_every_conversation_shown(cluster):
    alice, bob = pair(cluster)
    carol = cluster.node("carol", peers=[alice.address]).start()
    wait_until(lambda: alice.online("carol"), what="carol online")
    bob.cli("send", "alice", "from bob", "--wait")
    carol.cli("send", "alice", "from carol", "--wait")
    out = alice.cli("read").stdout
    assert "from bob" in out and "from carol" in out
    assert alice.peer_info("bob")["unread"] == 0 and alice.peer_info("carol")["unread"] == 0


# ---------------------------------------------------------------- chat in tmux


class Tmux:
    def __init__(self, command, width=100, height=30):
        self.name = f"parley-{secrets.token_hex(4)}"
        subprocess.run(["tmux", "-L", self.name, "-f", "/dev/null", "new-session", "-d", "-s", "chat",
                        "-x", str(width), "-y", str(height), command], check=True)

    def screen(self):
        return subprocess.run(["tmux", "-L", self.name, "capture-pane", "-p", "-t", "chat"],
                              capture_output=True, text=True).stdout

    def keys(self, *keys, literal=False):
        subprocess.run(["tmux", "-L", self.name, "send-keys", "-t", "chat", *(["-l"] if literal else []), *keys],
                       check=True)

    def alive(self):
        return subprocess.run(["tmux", "-L", self.name, "has-session", "-t", "chat"], capture_output=True).returncode == 0

    def close(self):
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)

    def has(self, *texts):
        s = self.screen()
        return s if all(t in s for t in texts) else None

    def prompt(self):
        return self.screen().rstrip("\n").split("\n")[-1]


needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@needs_tmux
def test_chat_opens_at_the_newest_and_page_up_loads_older_history(cluster):
    alice, bob = pair(cluster)
    burst(bob, "alice", 120, prefix="h")
    wait_until(lambda: len(alice.messages("bob")) == 120, what="history at alice")
    tmux = Tmux(f"{PARLEY} chat bob --socket {alice.socket} --history 30")
    try:
        s = wait_until(lambda: tmux.has("bob: h119", "bob (", ") · online"), what="the newest message on screen")
        assert "bob: h0\n" not in s and "bob: h50\n" not in s
        wait_until(lambda: alice.peer_info("bob")["unread"] == 0, what="what chat shows is read")
        # Page Up until the very first message: older pages are loaded on the way.
        for _ in range(12):
            if tmux.has("bob: h0"):
                break
            before = tmux.screen()
            tmux.keys("PPage")
            wait_until(lambda: tmux.screen() != before,
                       what=f"Page Up moves the view (or loads an older page); screen was:\n{before}")
        s = wait_until(lambda: tmux.has("bob: h0"), what="the oldest message after Page Up")
        assert "more lines below (PgDn)" in s
        for _ in range(12):
            tmux.keys("NPage")
        wait_until(lambda: tmux.has("bob: h119"), what="back at the end")
    finally:
        tmux.close()


@needs_tmux
def test_chat_editing_keys_recall_and_refused_paste(cluster):
    alice, bob = pair(cluster)
    tmux = Tmux(f"{PARLEY} chat bob --socket {alice.socket}")
    try:
        wait_until(lambda: tmux.has("bob (", ") · online"), what="chat open")
        tmux.keys("first line", "Enter")
        wait_until(lambda: "first line" in bodies_at(bob, "alice"), what="bob receives")
        # Up recalls the sent line; Alt-b moves a word back (no `b` typed); edit and send.
        tmux.keys("Up")
        wait_until(lambda: tmux.prompt().strip() == "> first line", what="Up recalls")
        tmux.keys("M-b")
        tmux.keys("X", literal=True)
        wait_until(lambda: tmux.prompt().strip() == "> first Xline", what="Alt-b moved a word back")
        tmux.keys("Enter")
        wait_until(lambda: "first Xline" in bodies_at(bob, "alice"), what="edited line sent")
        # A whitespace-only line sends nothing and leaves no spaces behind.
        tmux.keys("   ", "Enter")
        wait_until(lambda: tmux.prompt() == ">", what="blank line cleared")
        # A paste over the message limit is refused with a notice, not cut.
        big = cluster.dir / "big.txt"
        big.write_text("y" * 66_000)
        subprocess.run(["tmux", "-L", tmux.name, "load-buffer", str(big)], check=True)
        subprocess.run(["tmux", "-L", tmux.name, "paste-buffer", "-p", "-t", "chat"], check=True)
        wait_until(lambda: tmux.has("paste refused"), what="refusal notice", timeout=15)
        assert tmux.prompt() == ">", "nothing of the paste was inserted"
    finally:
        tmux.close()


@needs_tmux
def test_chat_reconnects_after_a_daemon_restart_and_keeps_the_typed_line(cluster):
    alice, bob = pair(cluster)
    tmux = Tmux(f"{PARLEY} chat bob --socket {alice.socket}")
    try:
        wait_until(lambda: tmux.has("bob (", ") · online"), what="chat open")
        tmux.keys("typed before the restart", literal=True)
        wait_until(lambda: tmux.has("> typed before the restart"), what="line typed")
        alice.stop()
        wait_until(lambda: tmux.has("reconnecting"), what="chat notices the daemon went away")
        assert tmux.alive(), "chat did not exit"
        alice.start()
        wait_until(lambda: tmux.has("reconnected to parleyd"), what="chat reconnects", timeout=20)
        assert tmux.has("> typed before the restart"), "the typed line is kept"
        wait_until(lambda: alice.online("bob"), what="bob back", timeout=30)
        tmux.keys("Enter")
        wait_until(lambda: "typed before the restart" in bodies_at(bob, "alice"), what="sent after reconnect",
                   timeout=20)
    finally:
        tmux.close()


# ---------------------------------------------------------------- 2. CLI habits


def test_send_takes_text_from_stdin_and_files(cluster):
    alice, bob = pair(cluster)
    cli(alice, "send", "bob", "-", input="from a pipe\n")
    cli(alice, "send", "bob", input="no argument on a pipe\n")
    long_text = "z" * 200_000  # longer than any argument list allows in one word
    (cluster.dir / "ok.txt").write_text("line 1\nline 2\n")
    cli(alice, "send", "bob", "--file", str(cluster.dir / "ok.txt"))
    wait_until(lambda: bodies_at(bob, "alice") == ["from a pipe", "no argument on a pipe", "line 1\nline 2"],
               what="three messages as sent")
    (cluster.dir / "big.txt").write_text(long_text)
    p = cli(alice, "send", "bob", "--file", str(cluster.dir / "big.txt"), check=False)
    assert p.returncode != 0 and ("too large" in p.stderr or "bytes" in p.stderr), p.stderr
    p = cli(alice, "send", "bob", "--file", str(cluster.dir / "missing.txt"), check=False)
    assert p.returncode == 2 and "cannot read" in p.stderr


def test_send_says_sent_delivered_or_queued_because_offline(cluster):
    alice, bob = pair(cluster)
    p = alice.cli("send", "bob", "online")
    assert "sent to bob" in p.stdout and "offline" not in p.stdout, p.stdout
    assert "✓ delivered to bob" in alice.cli("send", "bob", "waited", "--wait").stdout
    bob.stop()
    wait_until(lambda: not alice.online("bob"), what="bob offline")
    p = alice.cli("send", "bob", "later")
    assert "queued because bob is offline" in p.stdout, p.stdout


def test_connect_waits_and_reports_success_or_the_error(cluster):
    alice = cluster.node("alice").start()
    bob = cluster.node("bob").start()
    p = alice.cli("connect", "127.0.0.1:1", check=False)
    assert p.returncode == 1 and "refused" in p.stderr.lower() and "not retried" in p.stderr, p.stderr
    p = alice.cli("connect", bob.address)
    assert p.stdout.startswith("✓ connected to bob"), p.stdout
    assert alice.online("bob")
    p = alice.cli("connect", "127.0.0.1:1", "--no-wait")
    assert p.stdout.startswith("Dialing 127.0.0.1:1")
    r = alice.call("peers.connect", {"address": bob.address, "wait": True})
    assert r["status"] == "connected" and r["peer"]["name"] == "bob"


def test_connect_does_not_report_success_when_the_peer_refuses_after_the_handshake(cluster):
    # The dialler finishes Noise XX by sending the third message; the peer makes its trust
    # decision after reading it and refuses with a close record. "✓ connected" printed at our
    # end of the handshake was a lie the person then acted on.
    alice, bob = pair(cluster)
    alice.cli("trust", "block", "bob")
    wait_until(lambda: not bob.online("alice"), what="alice's block closed bob's session")
    p = bob.cli("connect", alice.address, check=False)
    assert p.returncode == 1 and "connected" not in p.stdout, p.stdout + p.stderr
    assert "does not trust this node" in p.stderr, p.stderr
    with pytest.raises(RPCError, match="does not trust this node"):
        bob.call("peers.connect", {"address": alice.address, "wait": True})
    assert not bob.online("alice")


def test_follow_survives_a_daemon_restart_without_printing_peers_offline(cluster):
    alice, bob = pair(cluster)
    # From the newest event now: what follows is printed whenever follow gets to subscribe.
    since = alice.call("messages.subscribe", {})["lastEventId"]
    f = subprocess.Popen([PARLEY, "follow", "--since", str(since), "--socket", str(alice.socket)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(f.stdout), daemon=True)
    reader.start()
    try:
        bob.cli("send", "alice", "before", "--wait")
        alice.stop()
        alice.start()
        wait_until(lambda: alice.online("bob"), what="bob back", timeout=30)
        bob.cli("send", "alice", "after the restart", "--wait")
        wait_until(lambda: any("bob: after the restart" in l for l in lines), timeout=30,
                   what="follow prints the message sent after the restart")
        assert f.poll() is None, "follow kept running"
    finally:
        f.terminate()
        f.wait(timeout=10)
        reader.join(timeout=10)
        err = f.stderr.read()
    out = "".join(lines)
    assert "bob: before" in out and "bob: after the restart" in out, out
    assert "bob is offline" not in out, "our own shutdown is not bob going offline"
    assert "reconnected" in err


def test_small_cli_habits(cluster):
    p = subprocess.run([PARLEY, "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "0.1.0 (protocol parley/1)"  # issue 27: and the protocol
    p = subprocess.run([PARLEY, "sned", "bob", "hi"], capture_output=True, text=True)
    assert p.returncode == 2 and "Did you mean `parley send`?" in p.stderr, p.stderr
    help_text = subprocess.run([PARLEY, "chat", "--help"], capture_output=True, text=True).stdout
    assert "--json" not in help_text.split("OPTIONS:")[1] and "#ROOM" in help_text
    assert "#ROOM" in subprocess.run([PARLEY, "export", "--help"], capture_output=True, text=True).stdout
    p = subprocess.run([PARLEY, "chat", "bob", "--json", "--socket", "/nonexistent"], capture_output=True, text=True)
    assert p.returncode == 2 and "--json does not apply" in p.stderr


# ---------------------------------------------------------------- 3. reaching the system service


def _run_as(user, group, groups, args, env):
    return subprocess.run(["setpriv", f"--reuid={user}", f"--regid={group}", f"--groups={groups}", *args],
                          capture_output=True, text=True, env=env, timeout=30)


@pytest.mark.skipif(os.geteuid() != 0, reason="creates users and /run/parley: run as root")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) missing")
def test_a_group_member_reaches_the_system_service_without_flags(tmp_path):
    if os.path.exists("/run/parley"):
        pytest.skip("/run/parley exists (a real parleyd service?); not touching it")
    created_group = False
    try:
        grp.getgrnam("parley")
    except KeyError:
        subprocess.run(["groupadd", "--system", "parley"], check=True)
        created_group = True
    tag = secrets.token_hex(3)
    daemon_user, member, outsider = f"pd{tag}", f"pm{tag}", f"po{tag}"
    for name in (daemon_user, member, outsider):
        subprocess.run(["useradd", "--system", "--no-create-home", "--gid", "parley" if name == daemon_user else "nogroup",
                        "--shell", "/usr/sbin/nologin", name], check=True)
    state = Path(tempfile.mkdtemp(prefix="parley-svc-", dir="/var/tmp"))
    daemon = None
    try:
        os.chmod(state, 0o700)
        shutil.chown(state, daemon_user, "parley")
        os.mkdir("/run/parley", 0o750)
        shutil.chown("/run/parley", daemon_user, "parley")
        env = {"PATH": "/usr/bin:/bin", "RUNTIME_DIRECTORY": "/run/parley", "STATE_DIRECTORY": str(state)}
        daemon = subprocess.Popen(["setpriv", f"--reuid={daemon_user}", "--regid=parley", "--clear-groups",
                                   PARLEYD, "--name", "service", "--no-mdns", "--listen", "127.0.0.1:0"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        wait_until(lambda: os.path.exists("/run/parley/control.sock"), what="the service's socket")
        # /etc/group does not list the member: only the process's real groups (setpriv
        # --groups) make it one, as after `usermod -aG parley` and a new login.
        client_env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
        ok = wait_until(lambda: (lambda p: p if p.returncode == 0 else None)(
            _run_as(member, "nogroup", "parley", [PARLEY, "status"], client_env)), what="status as a member")
        assert "service" in ok.stdout
        refused = _run_as(outsider, "nogroup", "nogroup", [PARLEY, "status"], client_env)
        assert refused.returncode != 0
        assert "you are not in group parley: sudo usermod -aG parley $USER, then log in again" in (
            refused.stderr.replace("You are", "you are")), refused.stderr
    finally:
        if daemon:
            daemon.terminate()
            daemon.wait(timeout=20)
        shutil.rmtree("/run/parley", ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
        for name in (daemon_user, member, outsider):
            subprocess.run(["userdel", name], capture_output=True)
        if created_group:
            subprocess.run(["groupdel", "parley"], capture_output=True)


# ---------------------------------------------------------------- 4. search


def test_search_through_the_cli_and_the_control_socket(cluster):
    alice, bob = pair(cluster)
    carol = cluster.node("carol", peers=[alice.address]).start()
    wait_until(lambda: alice.online("carol"), what="carol online")
    bob.cli("send", "alice", "Rendez-vous au Café à midi", "--wait")
    alice.cli("send", "bob", "ok, see you at the cafe", "--wait")
    carol.cli("send", "alice", "东京で会いましょう", "--wait")
    carol.cli("send", "alice", "the cafe is closed", "--wait")
    out = alice.cli("search", "cafe", "bob").stdout
    assert "Café à midi" in out and "see you at the cafe" in out and "closed" not in out, out
    assert "東京" in alice.cli("search", "東京").stdout or "东京" in alice.cli("search", "东京").stdout
    r = alice.call("messages.search", {"query": "cafe"})
    assert len(r["hits"]) == 3 and isinstance(r["tookMs"], int)
    assert {h["message"]["fromName"] for h in r["hits"]} == {"alice", "bob", "carol"}
    with pytest.raises(RPCError) as e:
        alice.call("messages.search", {"query": "!!!"})
    assert e.value.code == -32602
    assert alice.cli("search", "nothing-like-this").stdout.strip() == "No messages match."


# ---------------------------------------------------------------- 5. reconnecting without mDNS


def test_a_node_restarted_without_peer_is_redialled_and_its_queue_delivered(cluster):
    alice = cluster.node("alice").start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="first session")
    # Alice never dialled bob: she knows where he listens only from his announcement.
    wait_until(lambda: f"127.0.0.1:{bob.port}" in (alice.peer_info("bob")["addresses"] or []),
               what="alice learned bob's listening address")

    bob.stop()
    alice.cli("send", "bob", "while you were away")
    bob.peers = []  # restarted without --peer, and no mDNS
    bob.start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="redialled after bob's restart", timeout=30)
    wait_until(lambda: "while you were away" in bodies_at(bob, "alice"), what="alice's queue delivered")

    # Alice restarts on a new port, so bob's remembered address for her is stale: only her
    # memory of where bob listens (taught by his announcement) brings them together.
    alice.stop()
    wait_until(lambda: not bob.online("alice"), what="alice gone")
    bob.cli("send", "alice", "back again?")
    alice.listen_arg, alice.fixed_listen = "127.0.0.1:0", False
    (alice.state_dir / "listen-port").unlink(missing_ok=True)  # else port 0 means her old port
    alice.start()
    wait_until(lambda: alice.online("bob"), what="alice dials bob from what he taught her", timeout=30)
    wait_until(lambda: "back again?" in bodies_at(alice, "bob"), what="bob's queue delivered")


# ---------------------------------------------------------------- 6. configuration


def test_a_multi_line_toml_array_configures_peers_and_errors_keep_their_line(cluster):
    alice = cluster.node("alice").start()
    good = cluster.dir / "bob.toml"
    good.write_text(f'[parleyd]\npeers = [\n    "{alice.address}",  # the desk\n    # more later\n]\n')
    bob = cluster.node("bob", extra_args=["--config", str(good)]).start()
    wait_until(lambda: bob.online("alice"), what="bob dials the peer from the multi-line array")
    bad = cluster.dir / "bad.toml"
    bad.write_text('[parleyd]\npeers = [\n    "a:1",\n    42,\n]\n')
    p = subprocess.run([PARLEYD, "--config", str(bad), "--state-dir", str(cluster.dir / "bad-state"), "--no-mdns"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 78 and f"{bad}:4:" in p.stderr, p.stderr
