"""Issue 31, what new users stumbled on in the CLI and `parley chat`: real parleyd and
parley processes on loopback, the chat driven in tmux."""
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import time

import pytest

from parley_harness import PARLEY, wait_until
from test_everyday import Tmux, pair
from test_files import final, transfers
from test_rooms import accept, mesh


# ---------------------------------------------------------------- send --attach: all or nothing


def test_a_missing_attachment_sends_nothing_and_names_the_close_file(cluster):
    alice, bob = pair(cluster)
    docs = cluster.dir / "docs"
    docs.mkdir()
    (docs / "report.pdf").write_bytes(b"%PDF-1.4 numbers")
    p = alice.cli("send", "bob", "--attach", str(docs / "reprot.pdf"), "here is the report", check=False)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "reprot.pdf" in p.stderr and "did you mean report.pdf?" in p.stderr, p.stderr
    assert "Nothing was sent" in p.stderr
    # A directory is no attachment either; the good file beside it does not go alone.
    p = alice.cli("send", "bob", "--attach", str(docs / "report.pdf"), "--attach", str(docs), "caption",
                  check=False)
    assert p.returncode == 2 and "is a directory" in p.stderr, p.stderr
    assert alice.messages("bob") == [] and transfers(alice) == []
    # A good send still works, text and file.
    alice.cli("send", "bob", "--attach", str(docs / "report.pdf"), "here it is")
    wait_until(lambda: [m["body"] for m in bob.messages("alice")] == ["here it is"], what="bob gets the text")
    assert len(transfers(alice)) == 1


def test_a_file_the_daemon_refuses_sends_neither_the_other_files_nor_the_text(cluster):
    """The CLI's own check passes (it can open both files), the daemon refuses the second
    (over the 16 GiB limit of a transfer): one files.send carries both descriptors, so the
    daemon offers neither, and the text is not sent."""
    alice, bob = pair(cluster)
    good = cluster.dir / "photo.png"
    good.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 100)
    huge = cluster.dir / "huge.img"
    with open(huge, "wb") as f:
        f.truncate(17 << 30)  # sparse: no disk used
    p = alice.cli("send", "bob", "--attach", str(good), "--attach", str(huge), "two files", check=False)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "nothing was sent" in p.stderr and "16 GiB" in p.stderr, p.stderr
    assert alice.messages("bob") == []
    assert transfers(alice) == []
    assert bob.messages("alice") == []
    assert not list((alice.state_dir / "outgoing").iterdir()), "no copy is left behind"


# ---------------------------------------------------------------- get --to keeps the offered name


def test_get_to_an_empty_directory_keeps_the_name_the_file_was_offered_with(cluster):
    alice, bob = pair(cluster)
    src = cluster.dir / "big50.bin"
    src.write_bytes(os.urandom(50_000))
    first = alice.send_files("bob", [src])["transfers"][0]["id"]
    wait_until(lambda: any(t["id"] == first for t in transfers(bob)), what="bob sees the first offer")
    elsewhere = cluster.dir / "elsewhere"
    elsewhere.mkdir()
    bob.cli("get", first[:8], "--to", str(elsewhere))  # bob's daemon keeps its big50.bin
    second = alice.send_files("bob", [src])["transfers"][0]["id"]
    wait_until(lambda: any(t["id"] == second for t in transfers(bob)), what="bob sees the second offer")
    empty = cluster.dir / "empty"
    empty.mkdir()
    out = bob.cli("get", second[:8], "--to", str(empty)).stdout
    assert os.listdir(empty) == ["big50.bin"], (os.listdir(empty), out)
    assert (empty / "big50.bin").read_bytes() == src.read_bytes()


# ---------------------------------------------------------------- rooms, peers, search, read


def test_room_send_says_sent_when_members_are_online_and_invitations_name_the_inviter(cluster):
    nodes = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = nodes["alice"], nodes["bob"], nodes["carol"]
    alice.cli("room", "create", "lab", "bob", "carol")
    wait_until(lambda: "invited" in carol.cli("rooms").stdout, timeout=20, what="carol is invited")
    rooms = carol.cli("rooms").stdout
    fp = alice.whoami()["fingerprint"][:9]
    assert f"invited by alice ({fp})" in rooms, rooms
    assert "`parley room accept '#lab'`" in rooms, rooms
    accept([bob, carol], "lab")
    wait_until(lambda: all(m["joined"] for r in alice.call("rooms.list")["rooms"] for m in r["members"]),
               timeout=20, what="both joined, as alice sees it")
    out = alice.cli("send", "#lab", "standup in 5").stdout
    assert "sent to every member of #lab (2 members, all online)" in out, out
    assert "queued" not in out
    carol.stop()
    wait_until(lambda: not alice.online("carol"), what="carol offline")
    out = alice.cli("send", "#lab", "who is here").stdout
    assert "sent to the 1 of 2 members of #lab online now" in out, out


def test_peers_shows_presence_search_says_what_to_do_and_read_shows_attachments(cluster):
    alice, bob = pair(cluster)
    bob.cli("presence", "in a meeting")
    wait_until(lambda: "in a meeting" in alice.cli("peers").stdout, what="the status line in the table")
    assert "PRESENCE" in alice.cli("peers").stdout
    bob.cli("send", "alice", "lunch at the usual place?", "--wait")
    out = alice.cli("search", "lunch").stdout
    assert "(cursor" not in out
    command = re.search(r"in context: (parley read .*)", out).group(1)
    argv = shlex.split(command)
    assert argv[0] == "parley"
    shown = subprocess.run([PARLEY, *argv[1:], "--socket", str(alice.socket)], capture_output=True, text=True,
                           timeout=20)
    assert shown.returncode == 0 and "lunch at the usual place?" in shown.stdout.splitlines()[-1], shown
    doc = cluster.dir / "notes.txt"
    doc.write_text("the numbers")
    alice.cli("send", "bob", "--attach", str(doc), "the notes")
    read = alice.cli("read", "bob").stdout
    assert "📎 notes.txt" in read and "the notes" in read, read


def complete(sock, words):
    """What the shell gets for `parley send --socket SOCK <words>`: argument-parser's
    ---completion call, as the generated bash script makes it."""
    line = ["parley", "send", "--socket", str(sock), *words]
    return subprocess.run([PARLEY, "---completion", "send", "--", "positional@0", str(len(line) - 1),
                           str(len(words[-1])), *line], capture_output=True, text=True, timeout=20)


def test_completion_offers_peer_and_room_names_and_never_hangs_the_shell(cluster):
    alice, bob = pair(cluster)
    alice.cli("room", "create", "lab", "bob")
    p = complete(alice.socket, [""])
    assert p.returncode == 0 and p.stdout.split() == ["bob", "#lab"], (p.stdout, p.stderr)
    assert complete(alice.socket, ["b"]).stdout.split() == ["bob"]
    # A daemon that accepts and never answers: the completion gives up, bounded.
    mute = cluster.dir / "mute.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(mute))
    server.listen(4)
    try:
        t0 = time.monotonic()
        p = complete(mute, [""])
        assert p.returncode == 0 and p.stdout.strip() == "", p.stdout
        assert time.monotonic() - t0 < 5, "completion waits at most 1.5 s for the daemon"
    finally:
        server.close()


# ---------------------------------------------------------------- global options before the subcommand


def test_global_options_typed_before_the_subcommand_work(cluster):
    """`parley --socket X whoami`, as people type it, against a real daemon; a `--json`
    after `--` stays the message's text."""
    alice, bob = pair(cluster)
    p = subprocess.run([PARLEY, "--socket", str(alice.socket), "whoami"], capture_output=True, text=True,
                       timeout=20)
    assert p.returncode == 0 and alice.whoami()["fingerprint"] in p.stdout.replace(" ", ""), (p.stdout, p.stderr)
    p = subprocess.run([PARLEY, "--json", f"--socket={alice.socket}", "peers"], capture_output=True, text=True,
                       timeout=20)
    assert p.returncode == 0, p.stderr
    assert "bob" in [x["name"] for x in json.loads(p.stdout)["peers"]], p.stdout
    p = subprocess.run([PARLEY, "--socket", str(alice.socket), "send", "bob", "--", "--json is text"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    wait_until(lambda: [m["body"] for m in bob.messages("alice")] == ["--json is text"], what="bob gets the text")


# ---------------------------------------------------------------- parley chat


needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")


@needs_tmux
def test_chat_numbers_help_attach_once_unread_elsewhere_and_attachments_after_reopening(cluster):
    nodes = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = nodes["alice"], nodes["bob"], nodes["carol"]
    bob.cli("send", "alice", "first question", "--wait")
    bob.cli("send", "alice", "second question", "--wait")
    tmux = Tmux(f"{PARLEY} chat bob --socket {alice.socket}")
    try:
        def screen_has(*texts):
            s = tmux.screen()
            return s if all(t in s for t in texts) else None

        s = wait_until(lambda: screen_has("first question", "second question", "bob (", ") · online"), what="history")
        number = re.search(r"\[(\d+)\] \S+ bob: first question", s).group(1)
        tmux.keys("/help", "Enter")
        wait_until(lambda: screen_has("/reply [N] TEXT"), what="/help answers")
        assert "unknown command" not in tmux.screen()

        # Reply to the older message by its number.
        tmux.keys(f"/reply {number} the first, yes", "Enter")
        wait_until(lambda: any(m["body"] == "the first, yes" and (m["replyTo"] or {}).get("excerpt") == "first question"
                               for m in bob.messages("alice")), what="bob gets the reply to the first question")

        # Another conversation's message shows in the status line.
        carol.cli("send", "alice", "urgent: call me", "--wait")
        wait_until(lambda: screen_has("unread: carol 1"), what="carol's unread message flagged")

        # /attach says "offered" once (the answer), not again for the event.
        doc = cluster.dir / "plan.txt"
        doc.write_text("the plan")
        tmux.keys(f"/attach {doc}", "Enter")
        tid = wait_until(lambda: next((t["id"] for t in transfers(bob) if t["name"] == "plan.txt"), None),
                         what="bob sees the offer")
        bob.cli("files", "reject", tid[:8])
        wait_until(lambda: screen_has("plan.txt (8 B) to bob: rejected"), what="the rejection on screen")
        assert tmux.screen().count("plan.txt (8 B) to bob: offered") == 1, tmux.screen()
        tmux.keys("C-c")
        wait_until(lambda: not tmux.alive(), what="Ctrl-C quits")
    finally:
        tmux.close()
    # After reopening, the attachment is still among the messages.
    tmux = Tmux(f"{PARLEY} chat bob --socket {alice.socket}")
    try:
        wait_until(lambda: "📎 plan.txt" in tmux.screen(), what="the attachment after reopening")
    finally:
        tmux.close()


@needs_tmux
def test_chat_in_a_room_counts_members_online_and_flags_new_messages_below(cluster):
    nodes = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = nodes["alice"], nodes["bob"], nodes["carol"]
    alice.cli("room", "create", "lab", "bob", "carol")
    accept([bob, carol], "lab")
    wait_until(lambda: all(m["joined"] for r in alice.call("rooms.list")["rooms"] for m in r["members"]),
               timeout=20, what="both joined")
    for i in range(40):
        bob.call("messages.send", {"to": "#lab", "body": f"backlog {i}"})
    wait_until(lambda: len(alice.messages("#lab")) == 40, timeout=30, what="the backlog at alice")
    tmux = Tmux(f"{PARLEY} chat '#lab' --socket {alice.socket}")
    try:
        def screen_has(*texts):
            s = tmux.screen()
            return s if all(t in s for t in texts) else None

        s = wait_until(lambda: screen_has("backlog 39", "#lab · all 2 members online"), what="the room's status")
        assert "offline" not in s.splitlines()[-2]
        tmux.keys("PPage")
        wait_until(lambda: screen_has("more lines below"), what="scrolled up")
        bob.cli("send", "#lab", "while you were up there")
        wait_until(lambda: screen_has("↓ 1 new message below"), what="the new message is flagged")
        tmux.keys("NPage")
        wait_until(lambda: screen_has("while you were up there"), what="back at the bottom")
        wait_until(lambda: "new message below" not in tmux.screen(), what="the flag goes")
        carol.stop()
        wait_until(lambda: screen_has("#lab · 1 of 2 members online"), what="carol gone")
    finally:
        tmux.close()


@needs_tmux
def test_chat_react_edit_and_delete_act_on_the_numbered_message_and_names_are_coloured(cluster):
    """Not the newest: the message whose number is typed. The peer's name is drawn in its
    key's colour (an SGR escape before the name in the pane)."""
    alice, bob = pair(cluster)
    bob.cli("send", "alice", "older question", "--wait")
    bob.cli("send", "alice", "newer question", "--wait")
    alice.cli("send", "bob", "my first answer", "--wait")
    alice.cli("send", "bob", "my second answer", "--wait")
    tmux = Tmux(f"{PARLEY} chat bob --socket {alice.socket}")
    try:
        def screen_has(*texts):
            s = tmux.screen()
            return s if all(t in s for t in texts) else None

        s = wait_until(lambda: screen_has("older question", "my second answer", ") · online"), what="history")
        older = re.search(r"\[(\d+)\] \S+ bob: older question", s).group(1)
        first = re.search(r"\[(\d+)\] \S+ you: my first answer", s).group(1)
        coloured = subprocess.run(["tmux", "-L", tmux.name, "capture-pane", "-p", "-e", "-t", "chat"],
                                  capture_output=True, text=True).stdout
        assert re.search(r"\x1b\[[0-9;]*(3[1-6]|9[1-6])mbob\x1b\[[0-9;]*m: older question", coloured), coloured

        def at_bob(body):
            return next((m for m in bob.messages("alice") if m["body"] == body), None)

        tmux.keys(f"/react {older} +1", "Enter")
        wait_until(lambda: [r["reaction"] for r in next(m for m in alice.messages("bob")
                                                         if m["body"] == "older question")["reactions"]] == ["+1"],
                   what="the reaction on the older question")
        assert next(m for m in alice.messages("bob") if m["body"] == "newer question")["reactions"] == []
        tmux.keys(f"/edit {first} my first answer, corrected", "Enter")
        wait_until(lambda: at_bob("my first answer, corrected"), what="bob sees the first answer edited")
        assert at_bob("my second answer"), "the newest was left alone"
        tmux.keys(f"/delete {first}", "Enter")
        wait_until(lambda: at_bob("my first answer, corrected") is None
                   and any(m["deletedAt"] for m in bob.messages("alice")), what="bob sees the first answer deleted")
        assert at_bob("my second answer"), "the newest was left alone"
    finally:
        tmux.close()


def test_read_points_to_a_replaced_keys_earlier_history(cluster):
    """A colleague reinstalled and alice moved the contact to the new key: `parley read bob`
    (the new key) ends at the new key's first message and says how to read what was said
    with the old key; that command shows it."""
    from test_trust import second_node
    alice, bob = pair(cluster)
    old_fp = bob.whoami()["fingerprint"]
    bob.cli("send", "alice", "said with the old key", "--wait")
    bob.stop()
    wait_until(lambda: not alice.online("bob"), what="bob offline")
    new_bob = second_node(cluster, "bob", "bob-new-state", "bob-new.sock", [alice.address]).start()
    new_fp = new_bob.whoami()["fingerprint"]
    wait_until(lambda: any(p["fingerprint"] == new_fp and p["online"] for p in alice.call("peers.list")["peers"]),
               what="the new key online")
    alice.call("trust.replace", {"peer": old_fp, "newFingerprint": new_fp})
    new_bob.cli("send", "alice", "said with the new key", "--wait")
    p = alice.cli("read", "bob")
    assert "said with the new key" in p.stdout and "said with the old key" not in p.stdout, p.stdout
    command = re.search(r"Earlier, with bob's previous key \(replaced\): (parley read \S+)", p.stderr)
    assert command, p.stderr
    argv = shlex.split(command.group(1))
    shown = subprocess.run([PARLEY, *argv[1:], "--socket", str(alice.socket)], capture_output=True, text=True,
                           timeout=20)
    assert shown.returncode == 0 and "said with the old key" in shown.stdout, (shown.stdout, shown.stderr)


def test_trust_replace_takes_the_safety_number_the_new_device_shows(cluster):
    """As the page's confirmation window: with --safety-number the key is replaced only if it
    is the number computed with the new key; a wrong one changes nothing."""
    from test_trust import second_node
    alice, bob = pair(cluster)
    old_fp = bob.whoami()["fingerprint"]
    bob.stop()
    wait_until(lambda: not alice.online("bob"), what="bob offline")
    new_bob = second_node(cluster, "bob", "bob-new-state", "bob-new.sock", [alice.address]).start()
    new_fp = new_bob.whoami()["fingerprint"]
    wait_until(lambda: any(p["fingerprint"] == new_fp and p["online"] for p in alice.call("peers.list")["peers"]),
               what="the new key online")
    shown = new_bob.peer_info("alice")["safetyNumber"]  # what bob's new device shows
    wrong = ("1" if shown[0] != "1" else "2") + shown[1:]
    p = alice.cli("trust", "replace", old_fp, "--new-fingerprint", new_fp, "--safety-number", wrong, check=False)
    assert p.returncode == 1 and "nothing was changed" in p.stderr, (p.returncode, p.stderr)
    assert old_fp in [x["fingerprint"] for x in alice.call("peers.list")["peers"]], "the old key is still the contact"
    out = alice.cli("trust", "replace", old_fp, "--new-fingerprint", new_fp, "--safety-number", shown).stdout
    assert new_fp in out and "(verified)" in out, out
    assert old_fp not in [x["fingerprint"] for x in alice.call("peers.list")["peers"]]
