"""Issue 30, room cards: a co-member you never had a session with has a name (from the
card that travels with the room's operations) and can be written to. Real parleyd
processes on loopback without mDNS (static peers, the style of test_rooms.py); the
hostile member is parley-adversary speaking the real protocol."""
from parley_harness import wait_until
from test_rooms import accept, joined_names, room
from test_rooms_hostile import make_team, mallory


def member(node, room_name, name):
    return next(m for m in room(node, room_name)["members"] if m["name"] == name)


def test_a_co_member_never_met_has_a_name_and_can_be_written_to(cluster):
    """The office story: alice makes #lab with bob and carol while bob's laptop is shut;
    carol accepts and goes home. bob opens his laptop and accepts: he has never had a
    session with carol, yet sees her by name (not verified), and `parley send carol`
    reaches her once she is back, with no `parley connect` (the room's address records)."""
    alice = cluster.node("alice").start()
    carol = cluster.node("carol", peers=[alice.address]).start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and alice.online("carol"), timeout=20, what="alice has both")
    bob.stop()
    wait_until(lambda: not alice.online("bob"), what="bob's laptop shut")
    alice.call("rooms.create", {"name": "lab", "members": ["bob", "carol"]})
    accept([carol], "lab")
    wait_until(lambda: "carol" in joined_names(alice, "lab"), what="alice sees carol joined")
    carol_fp = carol.whoami()["fingerprint"]
    carol.stop()
    wait_until(lambda: not alice.online("carol"), what="carol gone home")

    bob.start()
    accept([bob], "lab", timeout=30)
    # carol's join came to bob from alice, and her card with it.
    wait_until(lambda: joined_names(bob, "lab") == ["alice", "bob", "carol"], timeout=30,
               what="bob sees carol by name")
    assert not bob.online("carol"), "bob never had a session with carol"
    assert member(bob, "lab", "carol")["verified"] is False
    listed = bob.peer_info("carol")
    assert listed is not None and listed["trust"] != "verified" and listed["fingerprint"] == carol_fp

    bob.cli("send", "carol", "hi carol")  # before room cards: "no peer matches"
    carol.start()
    wait_until(lambda: ("in", "hi carol") in [(m["direction"], m["body"]) for m in carol.messages("bob")],
               timeout=40, what="carol gets bob's message through the room's address records")
    bob.cli("send", "carol", "and again", "--wait", "--timeout", "30")


def test_room_cards_from_a_hostile_member(cluster, tmp_path):
    """mallory, a member of #team, passes bob: a forged card for alice's key (refused, the
    session survives), a stranger's validly signed card (not taken: not a member), and the
    card of a key of its own it added to the room, named like alice with a Cyrillic a
    (taken as that key's name, flagged as looking like alice, never shown as alice)."""
    alice, bob, room_id, state = make_team(cluster, tmp_path)
    alice_key = alice.whoami()["identityKey"]
    look_alike = "\u0430lice"  # Cyrillic a
    out = mallory(bob, "card-attacks", room_id, alice_key, look_alike, state=state)
    assert "ops-acked 2" in out and "alive" in out, out
    puppet = next(line.split()[1] for line in out if line.startswith("puppet "))

    peers = bob.call("peers.list")["peers"]
    assert not any(p["name"] == "stranger-card" for p in peers), "a stranger's card is not taken"
    assert [p["name"] for p in peers if p["identityKey"] == alice_key] == ["alice"], "alice's name unchanged"
    fake = next(p for p in peers if p["identityKey"] == puppet)
    assert fake["name"] == look_alike and fake["trust"] == "pinned"
    assert fake["nameClash"] and alice.whoami()["fingerprint"] in [w["fingerprint"] for w in fake["nameClash"]["with"]]
    shown = [m for m in room(bob, "team")["members"] if m["fingerprint"] == fake["fingerprint"]][0]
    assert shown["name"] != "alice" and "\u26a0" in shown["name"] and shown["verified"] is False
    # `parley send alice` is still alice.
    bob.cli("send", "alice", "still you?", "--wait")
    assert ("in", "still you?") in [(m["direction"], m["body"]) for m in alice.messages("bob")]
    log = bob.log_path.read_text(errors="replace")
    assert "room card that does not verify refused" in log
