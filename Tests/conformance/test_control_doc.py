"""Item 10: what docs/CONTROL.md says about the CLI's options and the example session."""
import json
import subprocess

import socket

from conftest import PARLEY, ROOT
from parley_wire import ACK, CHAT, Identity, Session, id_list


def test_socket_option_goes_after_the_subcommand(daemon):
    p = subprocess.run([PARLEY, "whoami", "--socket", str(daemon.sock_path), "--json"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["identityKey"] == daemon.call("node.whoami")["identityKey"]


def test_options_before_the_subcommand_work_too(daemon):
    """CONTROL.md: `parley --socket PATH whoami` works as typed (issue 31), also for a
    nested subcommand and with the option's `=` form."""
    p = subprocess.run([PARLEY, "--socket", str(daemon.sock_path), "--json", "whoami"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert json.loads(p.stdout)["identityKey"] == daemon.call("node.whoami")["identityKey"]
    p = subprocess.run([PARLEY, f"--socket={daemon.sock_path}", "--json", "rooms"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    assert json.loads(p.stdout)["rooms"] == []


def key_tree(value):
    """The shape of a JSON value: objects by their member names, recursively."""
    if isinstance(value, dict):
        return {k: key_tree(v) for k, v in value.items()}
    return None


def example_session():
    text = (ROOT / "docs" / "CONTROL.md").read_text()
    block = text.split("## Example session", 1)[1].split("```", 2)[1]
    return [(line[:1], line[2:]) for line in block.splitlines() if line[:2] in ("> ", "< ")]


def test_example_session_matches_the_daemon(daemon):
    """CONTROL.md's example session, replayed against a real daemon whose peer "bob" is this
    client: every answer and notification has exactly the members the example shows."""
    me = Identity()
    session = Session.established(daemon.address, me, card=me.card(name="bob"))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(daemon.sock_path))
    f = s.makefile("rwb")
    for direction, line in example_session():
        if direction == ">":
            f.write(line.encode() + b"\n")
            f.flush()
            if '"messages.send"' in line:
                pending = session.wait_for(CHAT)[:16]
            continue
        expected = json.loads(line)
        if expected.get("method") == "message.delivered":
            # Acknowledged only now, so the delivery happens after the subscription.
            session.send_records(id_list(ACK, [pending]))
        got = json.loads(f.readline())
        assert key_tree(got) == key_tree(expected), f"documented {line}\n   daemon {got}"
    s.close()
