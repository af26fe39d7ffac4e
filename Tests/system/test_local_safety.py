"""The local side of Parley against hostile input, with real parleyd and parley processes:
what a peer's free text can do to the terminal of a person reading `--json` output, a
peer's chosen name in shell completion, where parleyd agrees to put its control socket,
and whom it serves there: other local users (real accounts sharing one primary group, as
on many lab machines) never act as a person, and are never told to join a group that
would open the person's files to them."""
import json
import os
import secrets
import select
import shutil
import socket
import subprocess
import time

import pytest

from parley_harness import PARLEY, PARLEYD, Node, wait_until
from test_everyday import pair
from test_first_use import complete
from test_people import SHARED_GROUP, people, person_env  # noqa: F401 (people is a fixture)

ROOT_WITH_USERS = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or shutil.which("useradd") is None,
    reason="creates local users with useradd and runs as them with setpriv: run as root (CI does)")

# A message body a hostile peer may send (bodies are free text): C1 CSI and OSC 52 (the
# clipboard) as UTF-8, DEL, a bidi override, a line separator, and a right-to-left mark.
HOSTILE_BODY = "hi\u009b2J\u009b1;1Hfake\u009d52;c;cm0gLXJm\u009c\u007f \u202egnp.exe\u2028x\u200f é 🙂"
# What must never reach the terminal raw (their UTF-8 bytes).
RAW_UNSAFE = [c.encode() for c in "\u009b\u009d\u009c\u007f\u202e\u2028\u200f"]


def assert_terminal_safe(raw: bytes, what: str):
    for bad in RAW_UNSAFE:
        assert bad not in raw, f"{what}: {bad!r} reaches the terminal raw: {raw[:400]!r}"


def parley_bytes(node, *args, timeout=30):
    p = subprocess.run([PARLEY, *args, "--socket", str(node.socket)], capture_output=True, timeout=timeout)
    assert p.returncode == 0, (args, p.stderr)
    return p.stdout


def test_json_output_escapes_what_a_peers_body_would_make_the_terminal_do(cluster):
    alice, bob = pair(cluster)
    bob.call("messages.send", {"to": "alice", "body": HOSTILE_BODY})
    wait_until(lambda: any(m["body"] == HOSTILE_BODY for m in alice.messages("bob")),
               what="alice stores bob's message")
    # `parley follow --json`, the live view someone leaves open in a terminal (from the
    # first event on, so the message is among what it prints).
    follow = subprocess.Popen([PARLEY, "follow", "--json", "--since", "0", "--socket", str(alice.socket)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        received = b""
        deadline = time.monotonic() + 20
        while b"message.received" not in received and time.monotonic() < deadline:
            ready, _, _ = select.select([follow.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if ready:
                chunk = os.read(follow.stdout.fileno(), 65536)
                if not chunk:
                    break
                received += chunk
        line = next((ln for ln in received.split(b"\n") if b"message.received" in ln), None)
        assert line is not None, received
    finally:
        follow.terminate()
        follow.wait(timeout=10)
    assert_terminal_safe(line, "follow --json")
    assert json.loads(line)["message"]["body"] == HOSTILE_BODY

    # One-shot reads of the same conversation: the value is intact, the bytes are safe.
    out = parley_bytes(alice, "read", "bob", "--json", "--keep-unread")
    assert_terminal_safe(out, "read --json")
    assert HOSTILE_BODY in [m["body"] for m in json.loads(out)["messages"]]
    out = parley_bytes(alice, "export", "bob", "--format", "json")
    assert_terminal_safe(out, "export --format json")
    assert HOSTILE_BODY in [json.loads(ln)["body"] for ln in out.splitlines() if ln.strip()]


def test_parleyd_refuses_a_socket_directory_other_users_can_write(cluster):
    """A shared directory (/tmp-like: sticky and world-writable; or group-writable) lets
    another user put their own socket at parleyd's path first: parleyd would then refuse to
    start ("already running") and every `parley` pointed there would talk to the impostor.
    parleyd refuses such a directory before it opens anything, saying what to use."""
    for name, mode in [("sticky-shared", 0o1777), ("group-writable", 0o770)]:
        shared = cluster.dir / name
        shared.mkdir()
        os.chmod(shared, mode)
        args = [PARLEYD, "--state-dir", str(cluster.dir / f"{name}-state"), "--no-mdns",
                "--listen", "127.0.0.1:0", "--socket", str(shared / "control.sock")]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            out, _ = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            raise AssertionError(f"parleyd started with its socket in a {name} directory (mode {mode:o}): {out}")
        assert p.returncode != 0, out
        assert "other users can write to it" in out and str(shared) in out, out
        assert not (shared / "control.sock").exists()
    # Its own private directory is fine (the default, $XDG_RUNTIME_DIR/parley, is one).
    alice = cluster.node("alice").start()
    assert alice.call("node.status")


def test_completion_never_offers_a_peer_name_that_the_shell_would_pass_as_an_option(cluster):
    """A peer picks its own name. Completed onto the command line, `--socket=/tmp/x.sock`
    would be an option of `parley` (what the person then types goes to another user's
    socket), and no quoting stops that: such a peer is offered by fingerprint prefix."""
    alice, bob = pair(cluster)
    mallory = cluster.node("mallory", peers=[alice.address])
    hostile_name = "--socket=/tmp/mallory.sock"
    mallory.extra_args += [f"--name={hostile_name}"]  # the last --name wins
    mallory.start()
    fingerprint = mallory.whoami()["fingerprint"]
    wait_until(lambda: any(p["fingerprint"] == fingerprint and p["online"] for p in alice.call("peers.list")["peers"]),
               what="mallory's key known to alice")
    assert any(p["name"] == hostile_name for p in alice.call("peers.list")["peers"])
    p = complete(alice.socket, [""])
    assert p.returncode == 0, p.stderr
    offered = p.stdout.split()
    assert "bob" in offered and fingerprint[:9] in offered, offered
    assert not any(w.startswith("-") for w in offered), offered


def _daemon_as(people, person, socket_dir, mode, group=SHARED_GROUP):
    """`person`'s own parleyd, run as them (primary group `group`), its socket in
    `socket_dir` (made with `mode`, owned by them and `group`)."""
    socket_dir.mkdir()
    os.chmod(socket_dir, mode)
    shutil.chown(socket_dir, person.name, group)
    state = people["base"] / f"{socket_dir.name}-state"
    state.mkdir(mode=0o700)
    shutil.chown(state, person.name, group)
    n = Node(person.name, people["base"], state_dir=state, env=person_env(person),
             launcher=["setpriv", f"--reuid={person.name}", f"--regid={group}", "--clear-groups"])
    n.socket = socket_dir / "control.sock"
    people["nodes"].append(n)
    return n.start()


@ROOT_WITH_USERS
def test_a_persons_parleyd_in_a_directory_everyone_may_search_serves_no_one_else(people):
    """Alice runs her own parleyd with its socket in a directory made with the usual umask
    (0755). Bob shares her primary group (`users`, as every account on many shared hosts):
    the socket file (0660) lets him connect, and the daemon used to serve its group whenever
    the directory's group could search it: bob read alice's messages and sent as her."""
    pa, pb = people["alice"], people["bob"]
    alice = _daemon_as(people, pa, people["base"] / "alice-run", 0o755)
    for args in (["status"], ["read", "--keep-unread"], ["presence", "taken over"]):
        p = pb.parley(alice, *args)
        assert p.returncode != 0, (args, p.stdout)
        assert "belongs to " + pa.name in p.stderr and "serves nobody else" in p.stderr, p.stderr
    assert pa.parley(alice, "status").returncode == 0, "alice herself is served"


@ROOT_WITH_USERS
def test_refused_by_a_socket_parley_suggests_a_group_only_when_the_daemon_serves_it(people):
    """Bob is refused alice's own instance (a 0700 directory, as /run/parley-user/alice):
    `parley` must not tell him to join alice's group (it would not let him in, and would open
    her group files to him); a daemon that does serve its group (0750, as /run/parley) is
    named with what joining means: its members share one identity and all its messages."""
    pa, pb, pc = people["alice"], people["bob"], people["carol"]
    alice = _daemon_as(people, pa, people["base"] / "alice-own", 0o700)
    p = pb.parley(alice, "status")
    assert p.returncode != 0 and "ermission denied" in p.stderr, p.stderr
    assert "usermod" not in p.stderr, p.stderr
    assert f"{pa.name}'s own Parley" in p.stderr and "parleyd@$USER" in p.stderr, p.stderr

    group = f"pg{secrets.token_hex(3)}"
    subprocess.run(["groupadd", group], check=True)
    try:
        shared = _daemon_as(people, pc, people["base"] / "shared-run", 0o750, group=group)
        p = pb.parley(shared, "status")
        assert p.returncode != 0, p.stdout
        assert f"You are not in group {group}: sudo usermod -aG {group} $USER, then log in again" in p.stderr, p.stderr
        assert "shares that one Parley identity and reads all of its messages" in p.stderr, p.stderr
        assert "parleyd@$USER" in p.stderr, p.stderr
    finally:
        for n in list(people["nodes"]):
            if n.name == pc.name:
                n.stop()
                people["nodes"].remove(n)
        subprocess.run(["groupdel", group], capture_output=True)


def test_parley_never_talks_to_a_socket_in_a_directory_other_users_can_write(cluster):
    """Another user listens at a path in a shared directory (/tmp-like) that a person's
    `parley` is pointed at (`--socket`, `$PARLEY_SOCKET`): parley does not connect, so the
    impostor never reads a request, a message or a file; the error says why."""
    shared = cluster.dir / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    path = shared / "control.sock"
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    impostor.bind(str(path))
    impostor.listen(4)
    impostor.setblocking(False)
    try:
        for args in (["status"], ["send", "bob", "the secret plan"]):
            p = subprocess.run([PARLEY, *args, "--socket", str(path)], capture_output=True, text=True, timeout=30)
            assert p.returncode != 0, p.stdout
            assert f"other users can write to {shared}" in p.stderr, p.stderr
            with pytest.raises(BlockingIOError):
                impostor.accept()  # nothing connected
    finally:
        impostor.close()


def test_message_text_leaves_the_command_line_other_users_can_read(cluster):
    """`/proc/PID/cmdline` (what `ps` shows) is readable by every local user. A
    `parley send bob TEXT --wait` to an offline peer runs until its timeout: the text and
    the recipient must not stay on its command line."""
    alice, bob = pair(cluster)
    bob.stop()
    wait_until(lambda: not alice.online("bob"), what="bob offline")
    secret = "the door code is 4711"
    p = subprocess.Popen([PARLEY, "send", "bob", secret, "--wait", "--timeout", "60", "--socket", str(alice.socket)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Once the message is queued, parley is past its start-up and waits for delivery.
        wait_until(lambda: any(m["body"] == secret for m in alice.messages("bob")), what="the message queued")
        assert p.poll() is None, "parley send --wait still runs"
        with open(f"/proc/{p.pid}/cmdline", "rb") as f:
            shown = f.read()
        assert secret.encode() not in shown and b"bob" not in shown, shown
        words = [w for w in shown.split(b"\0") if w]
        assert words[0].endswith(b"parley") and words[1:] == [b"--socket", str(alice.socket).encode()], shown
    finally:
        p.terminate()
        p.wait(timeout=10)
