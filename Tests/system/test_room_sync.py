"""Issue 30, room sync: members pass signed room messages on to each other. Real parleyd
processes on loopback with static peers (the style of test_rooms.py); the hostile member
is parley-adversary speaking the real protocol."""
import json

from parley_harness import wait_until
from test_rooms import accept, member_names, mesh, room, room_messages


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
