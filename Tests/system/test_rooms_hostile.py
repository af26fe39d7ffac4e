"""Issue 14: rooms that a removed or hostile member cannot take over. Real parleyd
processes on loopback; the hostile member is parley-adversary speaking the real protocol
with a fixed identity ("mallory"). Each test is one numbered problem of the issue and
failed against the version-1 rule."""
import os
import subprocess

import pytest

from parley_harness import BIN, wait_until
from test_rooms import accept, joined_names, member_names, mesh, room, room_messages

ADVERSARY = str(BIN / "parley-adversary")
MALLORY_SEED = "6d" * 32


def mallory(target, action, *args, state, timeout=60, seed=MALLORY_SEED, name="mallory"):
    env = dict(os.environ, PARLEY_ADVERSARY_STATE=str(state))
    p = subprocess.run([ADVERSARY, "room-member", target.address, seed, name, action, *map(str, args)],
                       capture_output=True, text=True, timeout=timeout, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().splitlines()


def make_team(cluster, tmp_path):
    """alice (owner) and bob in #team with mallory, all three joined."""
    n = mesh(cluster, "alice", "bob")
    alice, bob = n["alice"], n["bob"]
    state = tmp_path / "mallory.ops"
    assert mallory(alice, "hello", state=state)[0] == "hello"          # alice pins mallory's card
    wait_until(lambda: any(p["name"] == "mallory" for p in alice.call("peers.list")["peers"]), what="alice knows mallory")
    created = alice.call("rooms.create", {"name": "team", "members": ["bob", "mallory"]})["room"]
    accept([bob], "team")
    out = mallory(alice, "join", state=state)
    assert f"joined {created['id']}" in out, out
    wait_until(lambda: joined_names(alice, "team") == ["alice", "bob", "mallory"], what="alice sees mallory joined")
    # Bob never had a session with mallory: he knows it by fingerprint only.
    wait_until(lambda: len(joined_names(bob, "team")) == 3, what="bob sees mallory joined")
    return alice, bob, created["id"], state


def test_item1_a_removed_member_cannot_veto_its_removal_nor_add_keys_of_its_own(cluster, tmp_path):
    alice, bob, room_id, state = make_team(cluster, tmp_path)
    alice.call("rooms.remove", {"room": "#team", "peer": "mallory"})
    for node in (alice, bob):
        wait_until(lambda: member_names(node, "team") == ["alice", "bob"], what=f"{node.name} applies the removal")
    # Mallory takes its removal, then signs from before it: remove alice, promote itself,
    # add a key of its own and join as that key; and writes to the room.
    out = mallory(alice, "takeover", room_id, state=state)
    assert "sent 4" in out and "acked 4" in out, out
    alice.cli("send", "bob", "barrier", "--wait")
    for node in (alice, bob):
        wait_until(lambda: member_names(node, "team") == ["alice", "bob"], what=f"{node.name} keeps mallory out")
        r = room(node, "team")
        assert {m["name"]: m["role"] for m in r["members"]} == {"alice": "owner", "bob": "member"}
    # Mallory's message is not shown (held, never acknowledged) and honest members chat on.
    assert all(m["body"] != "mallory is still here" for m in room_messages(alice, "team"))
    alice.call("messages.send", {"to": "#team", "body": "still ours", "wait": True})
    wait_until(lambda: "still ours" in [m["body"] for m in room_messages(bob, "team")], what="bob hears alice")
    assert room(alice, "team")["queued"] == 0, "nothing is queued for mallory"
    log = alice.log_path.read_text(errors="replace")
    assert "notPermitted" in log, "the veto was refused as not permitted"


def test_item2_a_member_cannot_backdate_removals(cluster, tmp_path):
    alice, bob, room_id, state = make_team(cluster, tmp_path)
    out = mallory(alice, "backdate", room_id, state=state)
    assert "sent 2" in out and "acked 2" in out, out
    alice.cli("send", "bob", "barrier", "--wait")
    assert member_names(alice, "team") == ["alice", "bob", "mallory"]
    assert len(member_names(bob, "team")) == 3
    assert "room operation refused" in alice.log_path.read_text(errors="replace")
    bob.call("messages.send", {"to": "#team", "body": "after the attempt"})
    wait_until(lambda: "after the attempt" in [m["body"] for m in room_messages(alice, "team")], what="alice hears bob")


def test_item3_a_room_id_cannot_be_squatted(cluster, tmp_path):
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    state = tmp_path / "mallory.ops"
    real = alice.call("rooms.create", {"name": "team", "members": ["bob"]})["room"]
    accept([bob], "team")
    # Mallory, who learnt the id, pre-seeds carol with a create claiming it.
    out = mallory(carol, "squat", real["id"], state=state)
    fake_id = [line.split()[1] for line in out if line.startswith("fake ")][0]
    assert fake_id != real["id"]
    # Carol is really added: the real invitation arrives and works.
    alice.call("rooms.add", {"room": "#team", "peer": "carol"})
    wait_until(lambda: any(r["id"] == real["id"] and r["status"] == "invited" for r in carol.call("rooms.list")["rooms"]),
               what="carol gets the real invitation")
    carol.call("rooms.accept", {"room": real["id"][:8]})
    wait_until(lambda: joined_names(alice, "team") == ["alice", "bob", "carol"], what="alice sees carol joined")
    got = {r["id"]: r for r in carol.call("rooms.list")["rooms"]}
    assert sorted(m["name"] for m in got[real["id"]]["members"]) == ["alice", "bob", "carol"]
    assert got[fake_id]["status"] == "invited", "the fake is only an unanswered invitation"
    alice.call("messages.send", {"to": "#" + real["id"][:8], "body": "to the real room", "wait": True})
    wait_until(lambda: "to the real room" in [m["body"] for m in carol.messages("#" + real["id"][:8])],
               what="carol gets the real room's messages")


def test_item4_operations_with_random_parents_do_not_freeze_the_room(cluster, tmp_path):
    alice, bob, room_id, state = make_team(cluster, tmp_path)
    # More than RoomAdmission.maxWaitingPerSender (4,097: one room's whole log) waiting.
    out = mallory(alice, "junk", room_id, 4200, state=state, timeout=300)
    assert "sent 4200" in out, out
    # The room still takes changes, and everyone agrees.
    before = room(alice, "team")["version"]
    alice.call("rooms.remove", {"room": "#team", "peer": "mallory"})
    alice.call("rooms.rename", {"room": "#team", "name": "team2"})
    assert room(alice, "team2")["version"] == before + 2
    wait_until(lambda: room(bob, "team2") is not None and member_names(bob, "team2") == ["alice", "bob"],
               what="bob applies the changes")
    log = alice.log_path.read_text(errors="replace")
    assert log.count("too many waiting for a parent") == 1, "the bound is logged once"


def test_item5_a_fake_room_is_only_an_invitation_and_an_unanswered_invitation_holds_nothing(cluster, tmp_path):
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob = n["alice"], n["bob"]
    state = tmp_path / "mallory.ops"
    # Anyone can list anyone in a create: bob only sees an invitation.
    mallory(bob, "squat", "00" * 16, state=state)
    fake = room(bob, "squat")
    assert fake["status"] == "invited" and fake["member"] is False
    assert "invited" in bob.cli("rooms").stdout
    p = bob.cli("send", "#squat", "hello?", check=False)
    assert p.returncode != 0 and "accept" in p.stderr
    # An invitee that never answers: alice's messages are delivered once bob has them.
    alice.call("rooms.create", {"name": "desk", "members": ["bob", "carol"]})
    accept([bob], "desk")
    wait_until(lambda: joined_names(alice, "desk") == ["alice", "bob"], what="alice sees bob joined")
    alice.call("messages.send", {"to": "#desk", "body": "carol never answers", "wait": True})
    assert room(alice, "desk")["queued"] == 0
    assert [m["state"] for m in room_messages(alice, "desk")] == ["delivered"]
    assert {m["name"]: m["joined"] for m in room(alice, "desk")["members"]} == {"alice": True, "bob": True, "carol": False}
    # Declining tells the others.
    n["carol"].call("rooms.decline", {"room": "#desk"})
    wait_until(lambda: member_names(alice, "desk") == ["alice", "bob"], what="alice sees carol declined")


def test_roles_and_policy_through_the_cli(cluster):
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.cli("room", "create", "office", "bob", "--only-admins-add")
    bob.cli("room", "accept", "#office")
    wait_until(lambda: joined_names(alice, "office") == ["alice", "bob"], what="bob joined")
    p = bob.cli("room", "add", "#office", "carol", check=False)
    assert p.returncode != 0 and "only admins may add" in p.stderr
    alice.cli("room", "promote", "#office", "bob")
    wait_until(lambda: {m["name"]: m["role"] for m in room(bob, "office")["members"]}["bob"] == "admin", what="bob is admin")
    bob.cli("room", "add", "#office", "carol")
    carol.cli("room", "accept", "#office")
    p = carol.cli("room", "remove", "#office", "bob", check=False)
    assert p.returncode != 0 and "only an admin or owner" in p.stderr
    p = bob.cli("room", "remove", "#office", "alice", check=False)
    assert p.returncode != 0
    alice.cli("room", "demote", "#office", "bob")
    alice.cli("room", "rename", "#office", "hq")
    wait_until(lambda: room(carol, "hq") is not None, what="carol sees the new name")
    out = alice.cli("rooms").stdout
    assert "#hq" in out


def test_item6_a_message_from_a_member_not_known_yet_is_held_until_its_join_arrives(cluster, tmp_path):
    """Mallory writes to bob before its join reached bob (it sends the join to alice only):
    bob neither shows nor acknowledges the message; once alice forwards the join, bob
    stores it and acknowledges it on mallory's session. Version 1 acknowledged and
    dropped it."""
    n = mesh(cluster, "alice", "bob")
    alice, bob = n["alice"], n["bob"]
    state = tmp_path / "mallory.ops"
    mallory(alice, "hello", state=state)
    mallory(bob, "hello", state=state)
    wait_until(lambda: any(p["name"] == "mallory" for p in alice.call("peers.list")["peers"]), what="alice knows mallory")
    created = alice.call("rooms.create", {"name": "team", "members": ["bob", "mallory"]})["room"]
    accept([bob], "team")
    wait_until(lambda: joined_names(alice, "team") == ["alice", "bob"], what="alice sees bob joined")
    mallory(alice, "hello", state=state)            # mallory takes the room's operations
    out = mallory(bob, "early-chat", created["id"], alice.address, state=state, timeout=90)
    assert out[:1] == ["held"], out
    assert "acked-after-join" in out, out
    assert [m["body"] for m in room_messages(bob, "team")] == ["early"]


def test_a_chain_sent_children_first_waits_and_then_applies_whole(cluster, tmp_path):
    """Operations whose parents come later wait (in memory) and are all taken, in one
    loop, when the first one arrives: a room's log in reverse order still converges."""
    alice, bob, room_id, state = make_team(cluster, tmp_path)
    version = room(alice, "team")["version"]
    out = mallory(alice, "reverse", room_id, 40, state=state)
    assert "sent 40" in out and "acked 40" in out, out
    wait_until(lambda: room(alice, "team")["version"] == version + 40, what="alice applies the whole chain")
    wait_until(lambda: room(bob, "team")["version"] == version + 40, what="bob gets it forwarded, parents first")
    assert len(room(alice, "team")["members"]) == 3 + 40


def test_issue29_h2_a_demoted_admins_backdated_removal_locks_nobody_out(cluster, tmp_path):
    """Mallory, an admin when bob was added, is demoted after bob joined; then it signs
    "remove bob" with parents from before bob's join. The removal is void and voids
    nothing: bob stays a joined member, room messages flow both ways, and after the owner
    removes and re-adds bob, `room accept` works. (Under the version-2 rule bob ended
    joined=False for good: sending failed both ways and accepting answered
    "refused (removedConcurrently)".)"""
    n = mesh(cluster, "alice", "bob")
    alice, bob = n["alice"], n["bob"]
    state = tmp_path / "mallory.ops"
    assert mallory(alice, "hello", state=state)[0] == "hello"
    wait_until(lambda: any(p["name"] == "mallory" for p in alice.call("peers.list")["peers"]), what="alice knows mallory")
    created = alice.call("rooms.create", {"name": "team", "members": ["mallory"]})["room"]
    assert f"joined {created['id']}" in mallory(alice, "join", state=state)
    wait_until(lambda: joined_names(alice, "team") == ["alice", "mallory"], what="mallory joined")
    alice.cli("room", "promote", "#team", "mallory")
    alice.call("rooms.add", {"room": "#team", "peer": "bob"})
    accept([bob], "team")
    # Bob never had a session with mallory: he knows it by fingerprint only.
    all_joined = {alice: lambda: joined_names(alice, "team") == ["alice", "bob", "mallory"],
                  bob: lambda: len(joined_names(bob, "team") or []) == 3}
    for node in (alice, bob):
        wait_until(all_joined[node], what=f"{node.name}: bob joined")
    alice.cli("room", "demote", "#team", "mallory")
    assert {m["name"]: m["role"] for m in room(alice, "team")["members"]}["mallory"] == "member"
    wait_until(lambda: room(bob, "team")["version"] == room(alice, "team")["version"], what="bob applies the demotion")
    bob_fp = [m["fingerprint"] for m in room(alice, "team")["members"] if m["name"] == "bob"][0]

    out = mallory(alice, "remove-behind", created["id"], bob_fp, state=state)
    assert "sent 1" in out and "acked 1" in out, out
    alice.cli("send", "bob", "barrier", "--wait")  # operations go before chat: bob has it now
    log = alice.log_path.read_text(errors="replace")
    assert "removedConcurrently" in log, "alice kept the removal as void"
    for node in (alice, bob):
        assert all_joined[node](), (node.name, room(node, "team"))
    bob.call("messages.send", {"to": "#team", "body": "bob still here"})
    wait_until(lambda: "bob still here" in [m["body"] for m in room_messages(alice, "team")], what="alice hears bob")
    alice.call("messages.send", {"to": "#team", "body": "alice hears you"})
    wait_until(lambda: "alice hears you" in [m["body"] for m in room_messages(bob, "team")], what="bob hears alice")

    # The owner removes and re-adds bob; bob accepts from the CLI, and it works.
    alice.call("rooms.remove", {"room": "#team", "peer": "bob"})
    wait_until(lambda: (room(bob, "team") or {}).get("status") == "left", what="bob applies his removal")
    alice.call("rooms.add", {"room": "#team", "peer": "bob"})
    wait_until(lambda: (room(bob, "team") or {}).get("status") == "invited", what="bob is invited again")
    p = bob.cli("room", "accept", "#team", check=False)
    assert p.returncode == 0, p.stderr
    for node in (alice, bob):
        wait_until(all_joined[node], what=f"{node.name}: bob is back")
    bob.call("messages.send", {"to": "#team", "body": "back again"})
    wait_until(lambda: "back again" in [m["body"] for m in room_messages(alice, "team")], what="alice hears bob again")
