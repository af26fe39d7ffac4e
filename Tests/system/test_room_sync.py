"""Issue 30, room sync: members pass signed room messages on to each other. Real parleyd
processes on loopback with static peers (the style of test_rooms.py); the hostile member
is parley-adversary speaking the real protocol."""
import json

from parley_harness import wait_until
from test_rooms import accept, joined_names, member_names, mesh, room, room_messages


def incoming(node, name):
    return [(m["fromName"], m["body"]) for m in room_messages(node, name) if m["direction"] == "in"]


def test_office_story_bob_gets_alices_message_from_carol(cluster):
    """alice writes to #lab while only carol is online, alice's laptop dies, bob comes in:
    bob gets alice's messages from carol, as alice's, once each, in alice's order."""
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.cli("room", "create", "lab", "bob", "carol")
    accept([bob, carol], "lab")
    for node in n.values():
        wait_until(lambda: member_names(node, "lab") == ["alice", "bob", "carol"], what=f"{node.name} sees #lab")

    bob.stop()
    wait_until(lambda: not alice.online("bob") and not carol.online("bob"), what="bob offline")
    bodies = ["17:00 the build is broken", "17:01 fixed it, see the log", "17:02 going home"]
    for b in bodies:
        alice.call("messages.send", {"to": "#lab", "body": b})
    wait_until(lambda: incoming(carol, "lab") == [("alice", b) for b in bodies], what="carol has alice's messages")
    alice_fp = alice.whoami()["fingerprint"]
    alice.kill()  # SIGKILL: the laptop lid, not a goodbye
    wait_until(lambda: not carol.online("alice"), timeout=60, what="carol sees alice gone")

    bob.start()
    wait_until(lambda: bob.online("carol"), timeout=30, what="bob and carol have a session")
    assert not bob.online("alice")
    wait_until(lambda: incoming(bob, "lab") == [("alice", b) for b in bodies], timeout=30,
               what="bob gets alice's messages from carol")
    got = [m for m in room_messages(bob, "lab") if m["direction"] == "in"]
    assert len({m["id"] for m in got}) == 3
    assert {m["from"] for m in got} == {alice_fp}, "verified as alice's: her key, whoever handed it over"
    assert [m["sequence"] for m in got] == sorted(m["sequence"] for m in got)
    out = bob.cli("read", "#lab").stdout
    assert "#lab alice: 17:00 the build is broken" in out

    # alice comes back and resends what bob never acknowledged to her: still once each.
    alice.start()
    wait_until(lambda: alice.online("bob"), timeout=30, what="alice back")
    wait_until(lambda: {m["state"] for m in room_messages(alice, "lab") if m["direction"] == "out"} == {"delivered"},
               timeout=30, what="alice's messages delivered to every member")
    assert incoming(bob, "lab") == [("alice", b) for b in bodies]


def outgoing(node, name):
    return [m for m in room_messages(node, name) if m["direction"] == "out"]


def holders(m):
    return sorted(h["name"] for h in (m.get("roomDelivery") or {}).get("heldBy", []))


def lab_of_three(cluster):
    """alice, bob and carol, connected, all joined in #lab (alice's)."""
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.call("rooms.create", {"name": "lab", "members": ["bob", "carol"]})
    accept([bob, carol], "lab")
    for node in n.values():
        wait_until(lambda: joined_names(node, "lab") == ["alice", "bob", "carol"], what=f"{node.name} sees #lab")
    return alice, bob, carol


def lab_of_three_with_bob_away(cluster):
    """alice, bob and carol in #lab (alice's), then bob's daemon stopped."""
    alice, bob, carol = lab_of_three(cluster)
    bob.stop()
    wait_until(lambda: not alice.online("bob") and not carol.online("bob"), what="bob offline")
    return alice, bob, carol


def test_delivery_state_says_which_members_hold_a_room_message(cluster):
    """Delivery state that says the truth: alice writes while bob is offline and carol
    holds it: alice sees "carol has it", not "queued". alice goes away, bob gets it from
    carol; when alice is back she sees bob holds it too (his summary or his ack)."""
    alice, bob, carol = lab_of_three_with_bob_away(cluster)

    sent = alice.call("messages.send", {"to": "#lab", "body": "standup moved to 10"})["message"]
    assert sent["roomDelivery"] == {"heldBy": [], "members": 2}
    wait_until(lambda: outgoing(alice, "lab")[0]["state"] == "partial", what="carol's ack reaches alice")
    m = outgoing(alice, "lab")[0]
    assert holders(m) == ["carol"] and m["roomDelivery"]["members"] == 2, m
    assert m["roomDelivery"]["heldBy"][0]["fingerprint"] == carol.whoami()["fingerprint"]
    out = alice.cli("read", "#lab", "--keep-unread").stdout
    assert "standup moved to 10 ✓ carol has it (1 of 2)" in out, out

    alice.stop()
    wait_until(lambda: not carol.online("alice"), timeout=30, what="alice gone")
    bob.start()
    wait_until(lambda: ("alice", "standup moved to 10") in incoming(bob, "lab"), timeout=30,
               what="bob gets alice's message from carol")
    alice.start()
    wait_until(lambda: outgoing(alice, "lab")[0]["state"] == "delivered", timeout=30,
               what="alice learns bob holds it too")
    assert holders(outgoing(alice, "lab")[0]) == ["bob", "carol"]
    out = alice.cli("read", "#lab", "--keep-unread").stdout
    assert "standup moved to 10 ✓" in out and "has it" not in out, out


def test_an_edit_and_a_reaction_reach_a_member_through_another_member(cluster):
    """Signed changes: alice edits her message and carol reacts to it while bob is away;
    alice leaves; bob gets the message, the edit (alice's, verified) and carol's reaction
    from carol."""
    alice, bob, carol = lab_of_three_with_bob_away(cluster)
    sent = alice.call("messages.send", {"to": "#lab", "body": "meet at 3"})["message"]
    wait_until(lambda: incoming(carol, "lab") == [("alice", "meet at 3")], what="carol has it")
    alice.call("messages.edit", {"message": sent["id"], "body": "meet at 4"})
    wait_until(lambda: incoming(carol, "lab") == [("alice", "meet at 4")], what="carol has the edit")
    carol.call("messages.react", {"message": sent["id"], "reaction": "👍"})
    wait_until(lambda: outgoing(alice, "lab")[0]["reactions"], what="alice has carol's reaction")
    alice_key = alice.whoami()["fingerprint"]
    alice.kill()
    wait_until(lambda: not carol.online("alice"), timeout=60, what="alice gone")

    bob.start()
    wait_until(lambda: bob.online("carol"), timeout=30, what="bob and carol have a session")

    def bobs():
        got = [m for m in room_messages(bob, "lab") if m["direction"] == "in"]
        return got[0] if got else None
    wait_until(lambda: (bobs() or {}).get("body") == "meet at 4", timeout=30, what="bob has the edited message")
    wait_until(lambda: bobs()["reactions"] == [{"reaction": "👍", "fromNames": ["carol"], "mine": False}],
               timeout=30, what="and carol's reaction")
    m = bobs()
    assert m["editedAt"] is not None and m["from"] == alice_key
    assert len([x for x in room_messages(bob, "lab") if x["direction"] == "in"]) == 1


def test_a_blocked_former_contact_does_not_reach_a_member_through_the_room(cluster):
    """A former contact carol blocked is still in #lab: what it writes reaches carol only
    through bob (room sync), and carol drops it there too (trust.block: nothing stored
    from the key), while bob, who did not block it, shows it; bob's own messages still
    reach carol."""
    alice, bob, carol = lab_of_three(cluster)
    carol.cli("trust", "block", "alice")
    wait_until(lambda: not carol.online("alice"), timeout=20, what="carol's session with alice ends")

    alice.call("messages.send", {"to": "#lab", "body": "let me back in"})
    wait_until(lambda: ("alice", "let me back in") in incoming(bob, "lab"), what="bob has alice's message")
    dropped = "signed room message or change by a blocked key passed on by a member; dropped"

    def alices_at_carol():
        return ("alice", "let me back in") in incoming(carol, "lab")
    wait_until(lambda: dropped in carol.log_path.read_text(errors="replace") or alices_at_carol(), timeout=30,
               what="bob passes alice's message on to carol")
    assert not alices_at_carol(), "the blocked key's message reached carol through bob"
    bob.call("messages.send", {"to": "#lab", "body": "standup at 10"})
    wait_until(lambda: ("bob", "standup at 10") in incoming(carol, "lab"), what="bob's message reaches carol")
    assert [m["body"] for m in room_messages(carol, "lab") if m["direction"] == "in"] == ["standup at 10"]
    assert joined_names(carol, "lab") == ["alice", "bob", "carol"], "the room's membership is not carol's to change"


# --- Hostile members (parley-adversary "room-member" as mallory, bit 3 announced) ---

from test_rooms_hostile import make_team, mallory  # noqa: E402

EVE_SEED = "e5" * 32


def team_bodies(node):
    return [(m["fromName"], m["body"]) for m in room_messages(node, "team")]


def test_forged_and_altered_room_messages_are_refused_and_the_session_survives(cluster, tmp_path):
    alice, bob, room_id, state = make_team(cluster, tmp_path)
    out = mallory(alice, "sync-forge", room_id, state=state)
    # The valid message after the two bad ones is stored: the session survived them.
    assert "valid-acked 1" in out and "forged-acked 0" in out, out
    wait_until(lambda: ("mallory", "mallory's real message") in team_bodies(alice), what="alice shows the valid one")
    assert not any("forged" in b or "altered" in b for _, b in team_bodies(alice)), team_bodies(alice)
    assert "signature is not its author's" in alice.log_path.read_text(errors="replace")
    # A stream of them is an attack: the session is closed.
    assert "closed" in mallory(alice, "sync-flood", room_id, 20, state=state)


def test_history_goes_to_a_member_that_lacks_it_and_never_to_a_stranger(cluster, tmp_path):
    alice, bob, room_id, state = make_team(cluster, tmp_path)
    # bob writes while mallory has no session with anyone: alice holds bob's messages.
    for i in range(2):
        bob.call("messages.send", {"to": "#team", "body": f"bob {i}"})
    wait_until(lambda: [b for _, b in team_bodies(alice)] == ["bob 0", "bob 1"], what="alice has bob's messages")
    # mallory, a member, sends alice an empty summary: alice passes bob's messages on.
    out = mallory(alice, "sync-have", room_id, state=state)
    assert "pushed 2" in out, out
    # eve, a stranger who learnt the room id, does the same: nothing.
    out = mallory(alice, "sync-have", room_id, state=tmp_path / "eve.ops", seed=EVE_SEED, name="eve")
    assert "pushed 0" in out, out


def test_a_removed_members_messages_are_not_shown_after_its_removal(cluster, tmp_path):
    alice, bob, room_id, state = make_team(cluster, tmp_path)
    out = mallory(bob, "sync-say", room_id, "while a member", state=state)
    assert "message-acked 1" in out, out
    wait_until(lambda: ("mallory", "while a member") in team_bodies(bob), what="bob shows mallory's message")
    alice.call("rooms.remove", {"room": "#team", "peer": "mallory"})
    wait_until(lambda: "mallory" not in joined_names(bob, "team"), what="bob applies the removal")
    out = mallory(bob, "sync-say", room_id, "after my removal", 2, state=state)
    assert "message-acked 0" in out, out
    assert ("mallory", "after my removal") not in team_bodies(bob)


def test_a_removed_member_that_passes_on_others_messages_is_not_heard(cluster, tmp_path):
    """mallory, while a member, gets bob's signed message by sync; removed, it hands that
    message (valid, bob's, one carol may have) to carol together with the operations it
    holds, its own removal among them: carol refuses it from a former member
    (unacknowledged, not shown); bob's own delivery then shows it, once."""
    alice, bob, room_id, state = make_team(cluster, tmp_path)
    carol = cluster.node("carol", peers=[alice.address, bob.address]).start()
    wait_until(lambda: alice.online("carol") and bob.online("carol"), timeout=20, what="carol online")
    alice.call("rooms.add", {"room": "#team", "peer": "carol"})
    accept([carol], "team")
    for node in (alice, bob, carol):
        # (bob never met mallory: he shows it by fingerprint.)
        wait_until(lambda: len(joined_names(node, "team")) == 4 and "carol" in joined_names(node, "team"),
                   what=f"{node.name} sees carol joined")
    assert mallory(carol, "hello", state=state)[0] == "hello"  # carol pins mallory's card
    carol.stop()
    wait_until(lambda: not alice.online("carol") and not bob.online("carol"), what="carol away")

    bob.call("messages.send", {"to": "#team", "body": "bob, while carol is away"})
    wait_until(lambda: ("bob", "bob, while carol is away") in team_bodies(alice), what="alice holds it")
    out = mallory(alice, "sync-have", room_id, state=state)
    assert "pushed 1" in out, out
    alice.call("rooms.remove", {"room": "#team", "peer": "mallory"})
    wait_until(lambda: len(joined_names(bob, "team")) == 3, what="bob applies the removal")
    mallory(alice, "hello", state=state)  # takes the operation that removed it
    alice.stop()
    bob.stop()

    carol.start()
    out = mallory(carol, "sync-relay", room_id, state=state)
    assert "relayed 1" in out and "relayed-acked 0" in out, out
    assert "mallory" not in joined_names(carol, "team"), "carol learnt the removal from mallory itself"
    assert ("bob", "bob, while carol is away") not in team_bodies(carol)
    assert "not a joined member here; not stored, unacknowledged" in carol.log_path.read_text(errors="replace")
    bob.start()
    wait_until(lambda: team_bodies(carol).count(("bob", "bob, while carol is away")) == 1, timeout=30,
               what="carol gets it from bob himself")


def test_members_reach_each_other_through_the_room_without_connect(cluster):
    """bob and carol know only alice (static peers, no mDNS): once all three are in #lab,
    alice passes each one's signed address record to the other, they get a session, and
    a message between them needs no `parley connect`."""
    alice = cluster.node("alice").start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    carol = cluster.node("carol", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and alice.online("carol"), timeout=20, what="alice has both")
    assert not bob.online("carol")
    alice.call("rooms.create", {"name": "lab", "members": ["bob", "carol"]})
    accept([bob, carol], "lab")
    wait_until(lambda: bob.online("carol") and carol.online("bob"), timeout=30,
               what="bob and carol reach each other through the room")
    bob.call("messages.send", {"to": "#lab", "body": "hello carol", "wait": True})
    wait_until(lambda: ("bob", "hello carol") in incoming(carol, "lab"), what="carol gets bob's message")


def test_a_welcome_written_right_after_the_create_reaches_each_invitee_once_it_joins(cluster):
    """The first thing people do in a new room: alice creates #lab with bob and carol and
    writes at once, before either has accepted. It was written for them: each gets it once
    it has joined (it used to reach nobody, and `send --wait` ran out)."""
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.call("rooms.create", {"name": "lab", "members": ["bob", "carol"]})
    p = alice.cli("send", "#lab", "welcome!", "--wait")
    assert "nobody else has joined yet; those invited get it when they join" in p.stdout, p.stdout + p.stderr
    # Nobody holds it yet: it waits for the invited, not "delivered" to nobody (0 of 0).
    m = outgoing(alice, "lab")[0]
    assert m["state"] == "queued" and m["roomDelivery"] == {"heldBy": [], "members": 2}, m
    out = alice.cli("read", "#lab", "--keep-unread").stdout
    assert "welcome! …" in out and "✓" not in out, out
    accept([bob], "lab")
    wait_until(lambda: incoming(bob, "lab") == [("alice", "welcome!")], timeout=40, what="bob gets the welcome")
    wait_until(lambda: holders(outgoing(alice, "lab")[0]) == ["bob"], timeout=40, what="alice sees bob holds it")
    assert outgoing(alice, "lab")[0]["state"] == "partial"
    assert "welcome! ✓ bob has it (1 of 2)" in alice.cli("read", "#lab", "--keep-unread").stdout
    accept([carol], "lab")
    wait_until(lambda: incoming(carol, "lab") == [("alice", "welcome!")], timeout=40, what="carol gets the welcome")
    wait_until(lambda: outgoing(alice, "lab")[0]["state"] == "delivered", timeout=40, what="alice sees both hold it")
    assert holders(outgoing(alice, "lab")[0]) == ["bob", "carol"]
    assert incoming(bob, "lab") == [("alice", "welcome!")], "shown once"


def test_a_new_member_gets_nothing_written_before_its_join(cluster):
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.call("rooms.create", {"name": "lab", "members": ["bob"]})
    accept([bob], "lab")
    # (Sent before alice has bob's join, a message is not for bob: wait for it.)
    wait_until(lambda: joined_names(alice, "lab") == ["alice", "bob"], what="alice sees bob joined")
    alice.call("messages.send", {"to": "#lab", "body": "before carol", "wait": True})
    alice.call("rooms.add", {"room": "#lab", "peer": "carol"})
    accept([carol], "lab")
    for node in (alice, bob):
        wait_until(lambda: joined_names(node, "lab") == ["alice", "bob", "carol"], what=f"{node.name} sees carol joined")
    alice.call("messages.send", {"to": "#lab", "body": "after carol", "wait": True})
    wait_until(lambda: incoming(carol, "lab") == [("alice", "after carol")], what="carol gets what follows her join")
    # bob and carol compared summaries (bob holds "before carol", carol does not) ...
    carol_fp = carol.whoami()["fingerprint"]
    wait_until(lambda: any("room summary received" in line and f"from={carol_fp}" in line
                           for line in bob.log_path.read_text(errors="replace").splitlines()),
               what="bob has carol's summary")
    # ... and whatever bob passed on reaches carol before a later message on the same session.
    bob.cli("send", "carol", "barrier", "--wait")
    assert incoming(carol, "lab") == [("alice", "after carol")], "history from before the join is not passed on"
    assert [m["body"] for m in room_messages(bob, "lab")] == ["before carol", "after carol"]


def test_with_shared_history_a_new_member_gets_what_was_written_while_it_was_shared(cluster):
    """The room setting "history shared with new members" (off by default): judged at each
    message's place, so switching it on opens what follows, not what came before."""
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.call("rooms.create", {"name": "lab", "members": ["bob"]})
    accept([bob], "lab")
    wait_until(lambda: joined_names(alice, "lab") == ["alice", "bob"], what="alice sees bob joined")
    assert room(alice, "lab")["sharedHistory"] is False
    alice.call("messages.send", {"to": "#lab", "body": "while not shared", "wait": True})
    out = alice.cli("room", "history", "#lab", "shared").stdout
    assert "members who join later get what is written from now on" in out, out
    wait_until(lambda: room(bob, "lab")["sharedHistory"] is True, what="bob has the new setting")
    alice.call("messages.send", {"to": "#lab", "body": "alice, shared", "wait": True})
    bob.call("messages.send", {"to": "#lab", "body": "bob, shared", "wait": True})
    alice.call("rooms.add", {"room": "#lab", "peer": "carol"})
    accept([carol], "lab")
    # From alice herself (her own message: carol is not in her outbox for it) and from bob
    # (his own) or from either by sync.
    wait_until(lambda: sorted(incoming(carol, "lab")) == [("alice", "alice, shared"), ("bob", "bob, shared")],
               timeout=30, what="carol gets what was written while history was shared")
    for node in (alice, bob):
        node.cli("send", "carol", "barrier", "--wait")
    assert ("alice", "while not shared") not in incoming(carol, "lab"), "written before the setting: not shared"
    alice.call("messages.send", {"to": "#lab", "body": "after carol", "wait": True})
    wait_until(lambda: ("alice", "after carol") in incoming(carol, "lab"), what="and what follows")


def test_an_author_that_signs_two_messages_with_one_number_is_shown_once(cluster, tmp_path):
    alice, bob, room_id, state = make_team(cluster, tmp_path)
    out = mallory(alice, "sync-equivocate", room_id, state=state)
    assert "message-acked 2" in out, out  # both final: the second is never stored
    wait_until(lambda: ("mallory", "the first version") in team_bodies(alice), what="alice shows the first")
    assert ("mallory", "a second version, same number") not in team_bodies(alice)
    assert "signed two different room messages with one sequence" in alice.log_path.read_text(errors="replace")
