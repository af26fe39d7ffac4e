"""Issue 17, the conversation features: reply, edit, delete for everyone, reactions and the
status line, end to end with real parleyd and parley processes on loopback (CLI and control
socket), and `parley chat` in tmux showing a reply and an edit."""
import shutil
import sqlite3
import time

import pytest

from parley_harness import PARLEY, RPCError, wait_until
from test_everyday import Tmux, next_of, pair


def only(node, peer, body):
    """The one message in `node`'s conversation with `peer` whose id or body is `body`."""
    found = [m for m in node.messages(peer) if m["body"] == body or m["id"] == body]
    assert len(found) == 1, (body, found)
    return found[0]


def by_id(node, peer, mid):
    return only(node, peer, mid)


def sent(node, peer, text):
    """Sends and waits for delivery; returns the message id."""
    node.cli("send", peer, text, "--wait")
    return only(node, peer, text)["id"]


def test_reply_quotes_the_message_at_both_ends(cluster):
    alice, bob = pair(cluster)
    original = sent(bob, "alice", "lunch at noon?")
    out = alice.cli("reply", original[:8], "yes, at the usual place").stdout
    assert "reply" in out
    wait_until(lambda: any(m["body"] == "yes, at the usual place" for m in bob.messages("alice")),
               what="bob receives the reply")
    at_bob = only(bob, "alice", "yes, at the usual place")
    assert at_bob["replyTo"] == {"id": original, "fromName": "bob", "excerpt": "lunch at noon?", "deleted": False}
    at_alice = only(alice, "bob", "yes, at the usual place")
    assert at_alice["replyTo"]["id"] == original and at_alice["replyTo"]["excerpt"] == "lunch at noon?"
    # The transcript shows the quote above the reply.
    text = bob.cli("read", "alice").stdout
    assert "↳ bob: lunch at noon?" in text and "yes, at the usual place" in text
    # A reply to a message id nobody has is refused with a hint, nothing is sent.
    p = alice.cli("reply", "0123456789abcdef", "into the void", check=False)
    assert p.returncode == 1 and "no message" in p.stderr and "parley read --ids" in p.stderr


def test_edit_changes_the_text_at_the_recipient_and_is_marked(cluster):
    alice, bob = pair(cluster)
    mid = sent(alice, "bob", "see you at 5")
    sub = bob.rpc(timeout=30)
    sub.call("messages.subscribe", {"peer": "alice"})
    alice.cli("edit", mid[:10], "see you at 6")
    event = next_of(sub, "message.updated")["params"]["message"]
    assert event["id"] == mid and event["body"] == "see you at 6" and event["editedAt"]
    m = by_id(bob, "alice", mid)
    assert m["body"] == "see you at 6" and m["editedAt"] is not None and m["deletedAt"] is None
    assert by_id(alice, "bob", mid)["body"] == "see you at 6"
    assert "see you at 6 (edited)" in bob.cli("read", "alice").stdout
    # Only the author may edit: bob's daemon refuses to edit alice's message.
    p = bob.cli("edit", mid[:8], "forged", check=False)
    assert p.returncode == 1 and "only edit or delete your own" in p.stderr
    assert by_id(bob, "alice", mid)["body"] == "see you at 6"


def test_delete_for_everyone_erases_the_body_from_the_receivers_store(cluster):
    alice, bob = pair(cluster)
    mid = sent(alice, "bob", "the wifi password is hunter2")
    alice.cli("edit", mid[:8], "the wifi password is hunter3")
    wait_until(lambda: by_id(bob, "alice", mid)["editedAt"], what="the edit arrives")
    keep = sent(alice, "bob", "this one stays")
    out = alice.cli("delete", mid[:8]).stdout
    assert "deleted for everyone" in out
    wait_until(lambda: by_id(bob, "alice", mid)["deletedAt"], what="the tombstone arrives")
    m = by_id(bob, "alice", mid)
    assert m["body"] == "" and m["editedAt"] is not None
    assert by_id(alice, "bob", mid)["body"] == "" and by_id(alice, "bob", mid)["deletedAt"]
    assert by_id(bob, "alice", keep)["body"] == "this one stays"
    assert "(deleted)" in bob.cli("read", "alice").stdout
    # Search finds neither the text nor its edit, at either end.
    for node in (bob, alice):
        for word in ("hunter2", "hunter3"):
            assert node.call("messages.search", {"query": word})["hits"] == [], (node.name, word)
    # Nothing is left in bob's store: not the text, not the edit's text, not in the file.
    bob.stop()
    alice.stop()
    for node in (bob, alice):
        db = node.state_dir / "parley.sqlite"
        with sqlite3.connect(db) as c:
            bodies = [bytes(r[0]) for r in c.execute("SELECT body FROM message_body")]
            actions = [r[0] for r in c.execute("SELECT body FROM message_action WHERE kind = 'edit'")]
        assert not any(b"hunter" in b for b in bodies), bodies
        assert actions == [None], actions
        raw = db.read_bytes() + (db.with_name("parley.sqlite-wal").read_bytes()
                                 if db.with_name("parley.sqlite-wal").exists() else b"")
        assert b"hunter2" not in raw and b"hunter3" not in raw, f"{node.name}'s database file still holds the text"


def test_reactions_one_per_person_and_emoji_and_withdrawn(cluster):
    alice, bob = pair(cluster)
    mid = sent(alice, "bob", "new release is out")
    sub = alice.rpc(timeout=30)
    sub.call("messages.subscribe", {"peer": "bob"})
    bob.cli("react", mid[:8], "👍")
    bob.cli("react", mid[:8], "👍")  # the same again: still one
    bob.cli("react", mid[:8], "🎉")
    alice.cli("react", mid[:8], "👍")
    wait_until(lambda: len(by_id(alice, "bob", mid)["reactions"]) == 2
               and len(by_id(alice, "bob", mid)["reactions"][0]["fromNames"]) == 2, what="reactions at alice")
    r = {x["reaction"]: x for x in by_id(alice, "bob", mid)["reactions"]}
    assert sorted(r["👍"]["fromNames"]) == ["alice", "bob"] and r["👍"]["mine"] is True
    assert r["🎉"]["fromNames"] == ["bob"] and r["🎉"]["mine"] is False
    assert next_of(sub, "message.updated")["params"]["message"]["id"] == mid
    wait_until(lambda: len(by_id(bob, "alice", mid)["reactions"]) == 2
               and len(by_id(bob, "alice", mid)["reactions"][0]["fromNames"]) == 2, what="reactions at bob")
    bob.cli("react", mid[:8], "🎉", "--remove")
    wait_until(lambda: [x["reaction"] for x in by_id(alice, "bob", mid)["reactions"]] == ["👍"],
               what="the withdrawn reaction is gone at alice")
    assert "👍 2" in alice.cli("read", "bob").stdout
    # Not a paragraph, not invisible: refused before anything is stored.
    for bad in ["this is a whole sentence", "\u200b", "a\nb"]:
        p = bob.cli("react", mid[:8], bad, check=False)
        assert p.returncode in (1, 2) and "reaction" in p.stderr, (bad, p.stderr)


def test_status_line_reaches_peers_now_and_at_the_next_session(cluster):
    alice, bob = pair(cluster)
    sub = bob.rpc(timeout=30)
    sub.call("messages.subscribe", {})
    out = alice.cli("presence", "in a meeting until 3").stdout
    assert "1 peer told now" in out
    e = next_of(sub, "peer.status")["params"]
    assert e["name"] == "alice" and e["status"] == "in a meeting until 3"
    assert bob.peer_info("alice")["status"] == "in a meeting until 3"
    # Kept across a restart of alice's daemon and announced at the start of the session.
    alice.stop()
    alice.start()
    e = next_of(sub, "peer.status", timeout=30)["params"]
    assert e["status"] == "in a meeting until 3"
    # A line break or a bidi override is refused, with the reason.
    for bad in ["two\nlines", "evil \u202e txt", "x" * 141]:
        p = alice.cli("presence", bad, check=False)
        assert p.returncode in (1, 2) and "status" in p.stderr, (bad, p.stderr)
    alice.cli("presence", "--clear")
    assert next_of(sub, "peer.status")["params"]["status"] == ""


def test_control_socket_methods_and_errors(cluster):
    alice, bob = pair(cluster)
    mid = sent(bob, "alice", "from bob")
    r = alice.call("messages.reply", {"message": mid, "body": "to bob"})["message"]
    assert r["replyTo"]["id"] == mid and r["to"] == bob.whoami()["fingerprint"]
    with pytest.raises(RPCError) as e:
        alice.call("messages.delete", {"message": mid})
    assert e.value.code == -32006  # notPermitted: bob wrote it
    with pytest.raises(RPCError) as e:
        alice.call("messages.edit", {"message": "zz"})
    assert e.value.code == -32602
    with pytest.raises(RPCError) as e:
        alice.call("messages.react", {"message": "ffffffffffffffff", "reaction": "👍"})
    assert e.value.code == -32023


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
def test_chat_in_tmux_shows_reply_and_edit(cluster):
    alice, bob = pair(cluster)
    sent(bob, "alice", "anyone for coffee")
    tmux = Tmux(f"{PARLEY} chat bob --socket {alice.socket}")
    try:
        def screen_has(*texts):
            s = tmux.screen()
            return s if all(t in s for t in texts) else None

        wait_until(lambda: screen_has("anyone for coffee", "bob (", ") · online"), what="history on screen")
        tmux.keys("/reply me, in five", "Enter")
        wait_until(lambda: screen_has("↳ bob: anyone for coffee", "me, in five"), what="the reply with its quote")
        wait_until(lambda: any(m["body"] == "me, in five" and m["replyTo"] for m in bob.messages("alice")),
                   what="bob gets the reply")
        tmux.keys("/edit me, in ten", "Enter")
        wait_until(lambda: screen_has("me, in ten (edited)"), what="the edit on screen")
        wait_until(lambda: any(m["body"] == "me, in ten" for m in bob.messages("alice")), what="bob sees the edit")
        # An edit by the peer shows up live too.
        mid = only(bob, "alice", "anyone for coffee")["id"]
        bob.cli("edit", mid[:8], "anyone for tea")
        wait_until(lambda: screen_has("anyone for tea (edited)"), what="the peer's edit on screen")
        tmux.keys("C-c")
        wait_until(lambda: not tmux.alive(), what="Ctrl-C quits")
    finally:
        tmux.close()


def test_hostile_peer_cannot_edit_delete_or_react_to_someone_elses_message(cluster):
    """mallory (parley-adversary, a real handshake announcing conversation records) sends
    bob an edit, a delete and a reaction naming alice's message: bob acknowledges all of
    them (a resend would be refused again), applies none, logs the refusal, and still
    applies mallory's edit of mallory's own message."""
    from test_hostile import attack
    alice, bob = pair(cluster)
    mid = sent(alice, "bob", "the meeting moved to room 4")
    out = attack(bob, "forge-action", mid).splitlines()
    assert out == ["acked 5", "alive"], out
    m = by_id(bob, "alice", mid)
    assert m["body"] == "the meeting moved to room 4"
    assert m["editedAt"] is None and m["deletedAt"] is None and m["reactions"] == []
    own = [x for x in bob.messages() if x["fromName"].startswith("mallory")]
    assert [x["body"] for x in own] == ["mallory edited"] and own[0]["editedAt"] is not None
    wait_until(lambda: "message action refused" in bob.log_path.read_text(errors="replace"),
               what="the refusal is logged")
    # The forged text was never stored, not even as the refused action's record.
    bob.stop()
    with sqlite3.connect(bob.state_dir / "parley.sqlite") as c:
        kept = [bytes(r[0]) for r in c.execute("SELECT body FROM message_action WHERE body IS NOT NULL")]
    assert not any(b"forged" in b for b in kept), kept


# ---------------------------------------------------------------- rooms


def test_room_reply_edit_delete_and_reactions_reach_every_member(cluster):
    from test_rooms import accept, joined_names, mesh
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.call("rooms.create", {"name": "lab", "members": ["bob", "carol"]})
    accept([bob, carol], "lab")
    for node in n.values():
        wait_until(lambda: joined_names(node, "lab") == ["alice", "bob", "carol"], what=f"{node.name} sees everyone joined")

    def in_room(node, body):
        return next((m for m in node.messages("#lab") if m["body"] == body or m["id"] == body), None)

    alice.cli("send", "#lab", "standup at 10?", "--wait")
    mid = in_room(alice, "standup at 10?")["id"]
    for node in (bob, carol):
        wait_until(lambda: in_room(node, mid), what=f"{node.name} has the room message")

    # bob replies in the room: alice and carol see the quote.
    bob.cli("reply", mid[:8], "make it 10:30")
    for node in (alice, carol):
        wait_until(lambda: in_room(node, "make it 10:30"), what=f"{node.name} gets bob's reply")
        r = in_room(node, "make it 10:30")
        assert r["room"]["name"] == "lab" and r["replyTo"]["id"] == mid and r["replyTo"]["excerpt"] == "standup at 10?"

    # alice edits, carol reacts, both reach every member.
    alice.cli("edit", mid[:8], "standup at 10:30")
    carol.cli("react", mid[:8], "👍")
    for node in (alice, bob, carol):
        wait_until(lambda: in_room(node, mid)["body"] == "standup at 10:30"
                   and [x["reaction"] for x in in_room(node, mid)["reactions"]] == ["👍"],
                   what=f"{node.name} sees the edit and the reaction")
    # carol may not edit alice's room message.
    p = carol.cli("edit", mid[:8], "cancelled", check=False)
    assert p.returncode == 1 and "only edit or delete your own" in p.stderr

    # alice deletes it for everyone: the text is gone from every member's store.
    alice.cli("delete", mid[:8])
    for node in (alice, bob, carol):
        wait_until(lambda: in_room(node, mid)["deletedAt"] is not None, what=f"{node.name} gets the tombstone")
        assert in_room(node, mid)["body"] == "" and in_room(node, mid)["reactions"] == []
    for node in (bob, carol):
        reply = in_room(node, "make it 10:30") if node is carol else None
        if reply:
            assert reply["replyTo"]["deleted"] is True
    for node in (alice, bob, carol):
        node.stop()
        with sqlite3.connect(node.state_dir / "parley.sqlite") as c:
            texts = [bytes(r[0]) for r in c.execute("SELECT body FROM message_body")]
            texts += [bytes(r[0]) for r in c.execute("SELECT body FROM message_action WHERE body IS NOT NULL AND kind = 'edit'")]
        assert not any(b"standup" in t for t in texts), (node.name, texts)


def test_a_node_that_predates_conversation_records_gets_plain_messages_only(cluster):
    """oldie (parley-adversary, no features in its handshake) writes to bob. bob's reply
    reaches it as an ordinary chat; bob's reaction and status line are never sent to it
    (it would skip and never acknowledge them), and bob's node keeps working."""
    import subprocess
    from parley_harness import BIN
    bob = cluster.node("bob").start()
    old = subprocess.Popen([str(BIN / "parley-adversary"), "old-peer", bob.address, "12"], stdout=subprocess.PIPE,
                           text=True)
    try:
        wait_until(lambda: any(m["body"] == "hello from an old node" for m in bob.messages()), what="oldie's chat")
        mid = next(m["id"] for m in bob.messages() if m["body"] == "hello from an old node")
        bob.cli("presence", "at lunch")
        bob.cli("react", mid[:8], "👍")
        bob.cli("reply", mid[:8], "hello old friend")
        wait_until(lambda: by_id(bob, "oldie", only(bob, "oldie", "hello old friend")["id"])["state"] == "delivered",
                   timeout=15, what="the reply is delivered (acknowledged as a chat)")
        out, _ = old.communicate(timeout=30)
    finally:
        if old.poll() is None:
            old.kill()
    lines = out.splitlines()
    assert "chat hello old friend" in lines, lines
    assert not any(l.startswith("record") for l in lines), lines
    # The reaction stays queued for oldie (sent if it ever announces the feature).
    assert [x["reaction"] for x in by_id(bob, "oldie", mid)["reactions"]] == ["👍"]


def test_hostile_non_member_cannot_change_a_room_message(cluster):
    """mallory, not a member of #lab, sends bob room edits, deletes and reactions of
    alice's room message: acknowledged, none applied."""
    from test_hostile import attack
    from test_rooms import accept, joined_names
    alice, bob = pair(cluster)
    lab = alice.call("rooms.create", {"name": "lab", "members": ["bob"]})["room"]
    accept([bob], "lab")
    for node in (alice, bob):
        wait_until(lambda: joined_names(node, "lab") == ["alice", "bob"], what=f"{node.name} sees bob joined")
    alice.cli("send", "#lab", "room text", "--wait")
    mid = next(m["id"] for m in alice.messages("#lab") if m["body"] == "room text")
    wait_until(lambda: any(m["id"] == mid for m in bob.messages("#lab")), what="bob has it")
    out = attack(bob, "forge-action", mid, lab["id"]).splitlines()
    assert out == ["acked 8", "alive"], out
    m = next(m for m in bob.messages("#lab") if m["id"] == mid)
    assert m["body"] == "room text" and m["editedAt"] is None and m["deletedAt"] is None and m["reactions"] == []
