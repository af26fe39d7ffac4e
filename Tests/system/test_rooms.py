"""Issues 8 and 14, rooms: real parleyd processes on loopback with static peers."""
import json
import threading

import pytest

from parley_harness import RPCError, wait_until


def mesh(cluster, *names):
    """Starts one node per name, each dialling all earlier ones; waits for a full mesh."""
    nodes = {}
    for name in names:
        nodes[name] = cluster.node(name, peers=[n.address for n in nodes.values()]).start()
    for x in nodes:
        for y in nodes:
            if x != y:
                wait_until(lambda: nodes[x].online(y), timeout=20, what=f"{x} sees {y}")
    return nodes


def room(node, name):
    for r in node.call("rooms.list")["rooms"]:
        if r["name"] == name:
            return r
    return None


def member_names(node, name):
    r = room(node, name)
    return sorted(m["name"] for m in r["members"]) if r else None


def view(node, name):
    """(version, member fingerprints, am I a member) of a room as `node` resolved it."""
    r = room(node, name)
    return (r["version"], sorted(m["fingerprint"] for m in r["members"]), r["member"]) if r else None


def accept(nodes, name, timeout=20):
    """Each node waits for its invitation to #name and accepts it (issue 14: a node joins
    a room only when its person says so)."""
    for node in nodes:
        wait_until(lambda: (room(node, name) or {}).get("status") == "invited", timeout=timeout,
                   what=f"{node.name} is invited to #{name}")
        assert room(node, name)["member"] is False, "invited is not joined"
        node.call("rooms.accept", {"room": "#" + name})


def joined_names(node, name):
    r = room(node, name)
    return sorted(m["name"] for m in r["members"] if m["joined"]) if r else None


def room_messages(node, name):
    return node.messages("#" + name)


def converged(nodes, name):
    views = [view(n, name) for n in nodes]
    if any(v is None for v in views):
        return False
    return len({(v[0], tuple(v[1])) for v in views}) == 1


def test_room_of_three_with_one_member_offline(cluster):
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]

    out = alice.cli("room", "create", "lab", "bob", "carol").stdout
    assert "Created #lab" in out
    accept([bob, carol], "lab")
    for node in n.values():
        wait_until(lambda: member_names(node, "lab") == ["alice", "bob", "carol"], what=f"{node.name} sees the room")
    assert converged(n.values(), "lab")

    carol.stop()
    wait_until(lambda: not alice.online("carol") and not bob.online("carol"), what="carol offline")
    sent = []
    for i in range(3):
        sent.append(alice.call("messages.send", {"to": "#lab", "body": f"alice {i}"})["message"])
    for i in range(2):
        sent.append(json.loads(bob.cli("send", "#lab", f"bob {i}", "--json").stdout)["message"])
    assert all(m["room"]["name"] == "lab" and m["toName"] == "#lab" for m in sent)

    def bodies(node, direction="in"):
        return [m["body"] for m in room_messages(node, "lab") if m["direction"] == direction]

    wait_until(lambda: bodies(bob) == ["alice 0", "alice 1", "alice 2"], what="bob receives alice's room messages")
    wait_until(lambda: bodies(alice) == ["bob 0", "bob 1"], what="alice receives bob's room messages")
    # Queued for carol: not delivered to every member yet, but bob holds them (issue 30:
    # "queued" only while nobody has a message).
    wait_until(lambda: {m["state"] for m in room_messages(alice, "lab") if m["direction"] == "out"} == {"partial"},
               what="alice sees bob holds her messages")
    assert all([h["name"] for h in m["roomDelivery"]["heldBy"]] == ["bob"]
               for m in room_messages(alice, "lab") if m["direction"] == "out")
    assert room(alice, "lab")["queued"] == 3

    carol.start()
    expected = {("alice", f"alice {i}") for i in range(3)} | {("bob", f"bob {i}") for i in range(2)}
    wait_until(lambda: {(m["fromName"], m["body"]) for m in room_messages(carol, "lab")} == expected,
               timeout=30, what="carol receives everything on return")
    wait_until(lambda: {m["state"] for m in room_messages(alice, "lab") if m["direction"] == "out"} == {"delivered"},
               what="alice's room messages delivered to every member")
    wait_until(lambda: room(bob, "lab")["queued"] == 0, what="bob's room messages delivered")

    # Once each, per-sender order kept, tagged with the room; not in the 1:1 history.
    got = room_messages(carol, "lab")
    assert len(got) == 5 and len({m["id"] for m in got}) == 5
    for sender in ("alice", "bob"):
        mine = [m for m in got if m["fromName"] == sender]
        assert [m["sequence"] for m in mine] == sorted(m["sequence"] for m in mine)
        assert [m["body"] for m in mine] == sorted(m["body"] for m in mine)
    assert all(m["room"]["id"] == room(carol, "lab")["id"] for m in got)
    assert carol.messages("alice") == [] and carol.messages("bob") == []

    # A restart resends nothing new: still exactly once.
    carol.stop()
    carol.start()
    wait_until(lambda: carol.online("alice") and carol.online("bob"), what="carol back")
    alice.cli("send", "carol", "barrier", "--wait")
    assert len(room_messages(carol, "lab")) == 5

    out = carol.cli("read", "#lab").stdout
    assert "#lab alice: alice 0" in out and "#lab bob: bob 1" in out
    assert "#lab" in carol.cli("rooms").stdout


def test_removed_member_gets_nothing_after_removal_and_views_converge(cluster):
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.call("rooms.create", {"name": "ops", "members": ["bob", "carol"]})
    accept([bob, carol], "ops")
    alice.call("rooms.set_role", {"room": "#ops", "peer": "bob", "role": "admin"})
    for node in n.values():
        wait_until(lambda: member_names(node, "ops") == ["alice", "bob", "carol"], what=f"{node.name} sees the room")
    alice.call("messages.send", {"to": "#ops", "body": "before", "wait": True})
    wait_until(lambda: [m["body"] for m in room_messages(carol, "ops")] == ["before"], what="carol gets 'before'")

    # Bob, an admin, removes carol.
    out = bob.cli("room", "remove", "#ops", "carol").stdout
    assert "Removed carol" in out
    wait_until(lambda: converged(n.values(), "ops"), what="all three agree on the room")
    assert member_names(alice, "ops") == ["alice", "bob"]
    assert member_names(bob, "ops") == ["alice", "bob"]
    assert view(carol, "ops")[2] is False
    assert view(alice, "ops")[2] is True

    alice.call("messages.send", {"to": "#ops", "body": "after from alice", "wait": True})
    bob.call("messages.send", {"to": "#ops", "body": "after from bob", "wait": True})
    # Barrier: direct messages to carol from both, acknowledged; room traffic would have
    # been queued before them.
    alice.cli("send", "carol", "barrier a", "--wait")
    bob.cli("send", "carol", "barrier b", "--wait")
    assert [m["body"] for m in room_messages(carol, "ops")] == ["before"]
    assert "after from bob" in [m["body"] for m in room_messages(alice, "ops")]
    assert "after from alice" in [m["body"] for m in room_messages(bob, "ops")]

    # Carol can no longer send to the room.
    p = carol.cli("send", "#ops", "let me in", check=False)
    assert p.returncode == 1 and "not a member" in p.stderr
    with pytest.raises(RPCError) as e:
        carol.call("rooms.add", {"room": "#ops", "peer": "alice"})
    assert e.value.code == -32006


def test_concurrent_membership_changes_converge(cluster):
    n = mesh(cluster, "alice", "bob", "carol", "dave")
    alice, bob = n["alice"], n["bob"]
    alice.call("rooms.create", {"name": "team", "members": ["bob", "carol"]})
    accept([bob, n["carol"]], "team")
    alice.call("rooms.set_role", {"room": "#team", "peer": "bob", "role": "admin"})
    wait_until(lambda: {m["name"]: m["role"] for m in room(bob, "team")["members"]}.get("bob") == "admin",
               what="bob sees he is admin")
    for name in ("alice", "bob", "carol"):
        wait_until(lambda: member_names(n[name], "team") == ["alice", "bob", "carol"], what=f"{name} sees the room")

    # Alice adds dave while bob removes carol, at the same moment.
    barrier = threading.Barrier(2)
    errors = []

    def act(node, method, params):
        try:
            barrier.wait(timeout=5)
            node.call(method, params)
        except Exception as e:  # collected and reported below
            errors.append(e)

    threads = [threading.Thread(target=act, args=(alice, "rooms.add", {"room": "#team", "peer": "dave"})),
               threading.Thread(target=act, args=(bob, "rooms.remove", {"room": "#team", "peer": "carol"}))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not errors, errors
    # The members left (alice, bob, dave) agree on one state. Carol learns of her removal,
    # but whether she also sees dave's addition depends on the race: if alice had already
    # applied the removal when she added dave, carol was no longer a member and is rightly
    # not told. Either way she must not think she is in the room.
    members = [n["alice"], n["bob"], n["dave"]]
    wait_until(lambda: converged(members, "team"), timeout=20, what="the three members agree")
    for name in ("alice", "bob", "dave"):
        assert member_names(n[name], "team") == ["alice", "bob", "dave"], name
    wait_until(lambda: view(n["carol"], "team")[2] is False, what="carol learns of her removal")
    assert "carol" not in member_names(n["carol"], "team")

    # Dave, added by alice, accepts, can talk in the room and is heard by bob.
    accept([n["dave"]], "team")
    wait_until(lambda: joined_names(bob, "team") == ["alice", "bob", "dave"], what="bob sees dave joined")
    n["dave"].call("messages.send", {"to": "#team", "body": "hi all"})
    wait_until(lambda: [m["body"] for m in room_messages(bob, "team")] == ["hi all"], what="bob hears dave")


def pipeline(node, requests):
    """Writes every request in ONE write on one control connection (so the daemon reads
    them together and batches the sends), then reads the answers; returns them by id."""
    rpc = node.rpc()
    try:
        lines = [json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": m, "params": p}) + "\n"
                 for i, (m, p) in enumerate(requests)]
        rpc.send_raw("".join(lines).encode())
        answers = {}
        while len(answers) < len(requests):
            msg = rpc.read_line()
            if "id" in msg:
                answers[msg["id"]] = msg
        return [answers[i + 1] for i in range(len(requests))]
    finally:
        rpc.close()


def test_pipelined_room_sends_go_to_the_room(cluster):
    """Sends pipelined in one write are stored as one batch; a `#room` target in that batch
    must go to the room (it was once resolved as a peer name and answered peerNotFound)."""
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.call("rooms.create", {"name": "lab", "members": ["bob", "carol"]})
    accept([bob, carol], "lab")
    for node in n.values():
        wait_until(lambda: joined_names(node, "lab") == ["alice", "bob", "carol"], what=f"{node.name} sees the room")

    def send(to, body):
        return ("messages.send", {"to": to, "body": body})

    answers = pipeline(alice, [send("#lab", "room 1"), send("#lab", "room 2")])
    for a in answers:
        assert "error" not in a, a
        assert a["result"]["message"]["room"]["name"] == "lab"
    # A mix: direct sends still batch, the room sends in between still go to the room,
    # and the answers come in request order.
    answers = pipeline(alice, [send("bob", "direct 1"), send("#lab", "room 3"), send("bob", "direct 2"),
                               send("#lab", "room 4"), send("nobody-here", "lost")])
    assert [a.get("result", {}).get("message", {}).get("body") for a in answers[:4]] == \
        ["direct 1", "room 3", "direct 2", "room 4"]
    assert answers[0]["result"]["message"]["room"] is None and answers[2]["result"]["message"]["room"] is None
    assert answers[1]["result"]["message"]["room"]["name"] == "lab"
    assert answers[4]["error"]["code"] == -32001, "an unknown peer in the batch fails on its own"

    def bodies(node, selector):
        return [m["body"] for m in node.messages(selector) if m["direction"] == "in"]

    room_bodies = ["room 1", "room 2", "room 3", "room 4"]
    wait_until(lambda: bodies(bob, "#lab") == room_bodies, what="bob receives the pipelined room messages")
    wait_until(lambda: bodies(carol, "#lab") == room_bodies, what="carol receives the pipelined room messages")
    wait_until(lambda: bodies(bob, "alice") == ["direct 1", "direct 2"], what="bob receives the direct messages")
    assert bodies(carol, "alice") == []


def test_room_selectors_and_errors(cluster):
    n = mesh(cluster, "alice", "bob")
    alice = n["alice"]
    created = alice.call("rooms.create", {"name": "Alpha", "members": ["bob"]})["room"]
    alice.call("rooms.create", {"name": "alpha2", "members": []})
    by_prefix = alice.call("messages.send", {"to": "#" + created["id"][:6], "body": "by id prefix"})["message"]
    assert by_prefix["room"]["id"] == created["id"]
    by_case = alice.call("messages.send", {"to": "#alpha", "body": "by name, any case"})["message"]
    assert by_case["room"]["id"] == created["id"]
    with pytest.raises(RPCError) as e:
        alice.call("messages.send", {"to": "#nosuch", "body": "x"})
    assert e.value.code == -32021
    with pytest.raises(RPCError) as e:
        alice.call("rooms.create", {"name": "bad\u202ename", "members": []})
    assert e.value.code == -32602
    with pytest.raises(RPCError) as e:
        alice.call("rooms.add", {"room": "#Alpha", "peer": "bob"})
    assert e.value.code == -32602  # already a member
    # A room with only its creator: delivered at once.
    solo = alice.call("messages.send", {"to": "#alpha2", "body": "note to self"})["message"]
    assert solo["state"] == "delivered"
    # Leaving.
    left = alice.call("rooms.leave", {"room": "#alpha2"})["room"]
    assert left["member"] is False


def test_room_message_from_a_removed_member_is_dropped_by_those_who_know(cluster):
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.call("rooms.create", {"name": "desk", "members": ["bob", "carol"]})
    accept([bob, carol], "desk")
    for node in n.values():
        wait_until(lambda: joined_names(node, "desk") == ["alice", "bob", "carol"], what=f"{node.name} sees the room")
    # Carol is down when alice removes her: bob learns of it, carol does not.
    carol.stop()
    alice.call("rooms.remove", {"room": "#desk", "peer": "carol"})
    wait_until(lambda: member_names(bob, "desk") == ["alice", "bob"], what="bob applies the removal")
    alice.stop()
    bob.stop()
    # Carol comes back alone, still believing she is a member, and writes to the room.
    carol.start()
    assert member_names(carol, "desk") == ["alice", "bob", "carol"]
    carol.call("messages.send", {"to": "#desk", "body": "sneaky"})
    # Bob returns: he tells carol of her removal; her message is held, never shown.
    bob.start()
    wait_until(lambda: room(carol, "desk")["member"] is False, timeout=20, what="carol learns of her removal")
    # (Signed, with room sync, issue 30: "not stored, unacknowledged"; unsigned: "held".)
    wait_until(lambda: any(s in bob.log_path.read_text(errors="replace")
                           for s in ("are held, unacknowledged", "not a joined member here; not stored, unacknowledged")),
               timeout=20, what="bob holds the message of a non-member without acknowledging it")
    assert room_messages(bob, "desk") == []
    # Not acknowledged: it stays queued at carol, not falsely "delivered".
    assert [m["state"] for m in room_messages(carol, "desk") if m["direction"] == "out"] == ["queued"]
    wait_until(lambda: converged([bob, carol], "desk"), what="bob and carol agree")


def test_room_unread_counts_reading_and_room_subscriptions(cluster):
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob = n["alice"], n["bob"]
    alice.call("rooms.create", {"name": "lab", "members": ["bob", "carol"]})
    accept([bob, n["carol"]], "lab")
    wait_until(lambda: joined_names(bob, "lab") == ["alice", "bob", "carol"], what="bob sees the room")

    sub = bob.rpc(timeout=15)
    start = sub.call("messages.subscribe", {"peer": "#lab"})["lastEventId"]
    alice.call("messages.send", {"to": "bob", "body": "direct"})
    alice.call("messages.send", {"to": "#lab", "body": "one"})
    alice.call("messages.send", {"to": "#lab", "body": "two"})
    got = []
    while len(got) < 2:
        note = sub.next_notification(timeout=15)
        got.append(note)
    assert [g["method"] for g in got] == ["message.received", "message.received"]
    assert [g["params"]["message"]["body"] for g in got] == ["one", "two"]
    assert all(g["params"]["message"]["room"]["name"] == "lab" for g in got)
    # A membership change reaches the room's subscribers.
    alice.call("rooms.remove", {"room": "#lab", "peer": "carol"})
    note = sub.next_notification(timeout=15)
    assert note["method"] == "room.updated" and len(note["params"]["room"]["members"]) == 2
    got.append(note)
    sub.close()
    # Room events are journaled under the room: each has an id, and a client resuming its
    # "#lab" subscription gets them back exactly as they were sent.
    ids = [g["params"].get("eventId") for g in got]
    assert all(isinstance(i, int) and i > start for i in ids) and ids == sorted(ids), ids
    again = bob.rpc(timeout=15)
    again.call("messages.subscribe", {"peer": "#lab", "since": start})
    replayed = [again.next_notification(timeout=15) for _ in got]
    again.close()
    assert [r["params"]["eventId"] for r in replayed] == ids
    assert replayed[2] == got[2], "a room update is replayed byte for byte"
    assert [r["params"]["message"]["body"] for r in replayed[:2]] == ["one", "two"]
    assert "could not store events" not in bob.log_path.read_text(errors="replace")

    wait_until(lambda: room(bob, "lab")["unread"] == 2, what="two unread in the room")
    assert bob.peer_info("alice")["unread"] == 1, "room messages are not counted in the direct conversation"
    out = bob.cli("read", "#lab").stdout
    assert "#lab alice: one" in out and "#lab alice: two" in out
    assert room(bob, "lab")["unread"] == 0
    assert bob.peer_info("alice")["unread"] == 1
    # No read receipts for room messages. Barrier: bob now reads the direct conversation;
    # its receipt travels after any the room reading sent, on the same session, so once
    # alice has it she would have had a (wrong) receipt for the room messages too.
    bob.cli("read", "alice")
    wait_until(lambda: [m["readAt"] for m in alice.messages("bob") if m["direction"] == "out"][0],
               what="alice has the receipt for the direct message")
    assert all(m["readAt"] is None for m in room_messages(alice, "lab"))


def test_a_room_takes_at_most_4096_membership_changes_and_says_so(cluster):
    """RoomLimits.maxOperationsPerRoom at the daemon: the create and 4,095 changes are
    accepted and reach the other member (each decided against the incremental resolution,
    not by replaying the room); the next change is refused with a clear error, nothing is
    half-applied, and the room still works. Most changes are renames: an add sends the
    newcomer the whole log (RoomDistribution), which would make this test about that."""
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob = n["alice"], n["bob"]
    alice.call("rooms.create", {"name": "churn", "members": ["bob"]})
    accept([bob], "churn")
    wait_until(lambda: joined_names(alice, "churn") == ["alice", "bob"], what="alice sees bob joined")
    rid = room(alice, "churn")["id"]
    r = alice.rpc(timeout=60)
    r.call("rooms.add", {"room": rid, "peer": "carol"})
    r.call("rooms.remove", {"room": rid, "peer": "carol"})
    for i in range(4092):  # create + join + 2 + 4,092 = 4,096 operations; ends named "churn"
        r.call("rooms.rename", {"room": rid, "name": "churn" if i % 2 else "churn2"})
    version = room(alice, "churn")["version"]
    with pytest.raises(RPCError) as e:
        r.call("rooms.add", {"room": rid, "peer": "carol"})
    r.close()
    assert e.value.code == -32006 and "4096 membership changes" in e.value.error["message"], e.value.error
    assert room(alice, "churn")["version"] == version, "the refused change was not applied"
    assert member_names(alice, "churn") == ["alice", "bob"]
    wait_until(lambda: view(bob, "churn") == view(alice, "churn"), timeout=120, what="bob resolved all 4,096 operations")
    alice.cli("send", "#churn", "still works", "--wait")
    wait_until(lambda: "still works" in [m["body"] for m in room_messages(bob, "churn")], what="room message arrives")


def test_room_context_in_the_hook_follow_and_export(cluster):
    """Issue 14, item 6: a room message names its room in the notification hook
    (PARLEY_ROOM), in `follow` and in both export formats."""
    from test_everyday import HOOK_ENV, config_file, hook_script, read_env
    out = cluster.dir / "hook-out"
    out.mkdir()
    script = hook_script(cluster, "hook.sh", HOOK_ENV)
    alice = cluster.node("alice", extra_args=config_file(cluster, "alice", f'notify_command = ["{script}", "{out}"]\n'))
    alice.start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="online")
    bob.call("rooms.create", {"name": "lab", "members": ["alice"]})
    accept([alice], "lab")
    wait_until(lambda: joined_names(bob, "lab") == ["alice", "bob"], what="bob sees alice joined")
    sent = bob.call("messages.send", {"to": "#lab", "body": "in the room", "wait": True})["message"]
    env_file = out / f"{sent['id']}.env"
    wait_until(env_file.exists, what="the hook ran")
    assert read_env(env_file)["PARLEY_ROOM"] == "#lab"
    lines = [json.loads(line) for line in alice.cli("export", "--format", "json").stdout.splitlines()]
    assert [(m["body"], m["room"]["name"]) for m in lines if m["room"]] == [("in the room", "lab")]
    text = alice.cli("export", "#lab").stdout
    assert "room #lab" in text.splitlines()[0] and "#lab bob: in the room" in text
    import subprocess
    from parley_harness import PARLEY
    follow = subprocess.Popen([PARLEY, "follow", "#lab", "--since", "0", "--socket", str(alice.socket)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        got, _ = follow.communicate(timeout=3)
    except subprocess.TimeoutExpired:
        follow.kill()
        got, _ = follow.communicate()
    assert "#lab bob: in the room" in got, got
    assert "#lab members:" in got or "#lab: you are invited" in got, got
