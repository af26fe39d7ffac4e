"""Issue 3: real parleyd processes on loopback with static peers."""
import json
import signal
import socket
import subprocess
import threading
import time

import pytest

from parley_harness import PARLEY, RPC, RPCError, journal_counts, wait_until


def pair(cluster, a="alice", b="bob"):
    na = cluster.node(a).start()
    nb = cluster.node(b, peers=[na.address]).start()
    wait_until(lambda: na.online(b) and nb.online(a), what=f"{a} and {b} online")
    return na, nb


def bodies(node, peer=None, direction=None):
    return [m["body"] for m in node.messages(peer) if direction is None or m["direction"] == direction]


def test_two_nodes_chat_both_ways_through_the_cli(cluster):
    alice, bob = pair(cluster)
    alice.cli("send", "bob", "hello bob", "--wait")
    bob.cli("send", "alice", "hi alice", "--wait")
    wait_until(lambda: bodies(bob, direction="in") == ["hello bob"], what="bob receives")
    wait_until(lambda: bodies(alice, direction="in") == ["hi alice"], what="alice receives")
    out = bob.cli("read", "alice").stdout
    assert "hello bob" in out and "hi alice" in out
    js = [json.loads(l) for l in bob.cli("read", "alice", "--json").stdout.splitlines() if l.strip()]
    assert js, "read --json printed nothing"
    sent = alice.messages("bob")
    assert [m["state"] for m in sent if m["direction"] == "out"] == ["delivered"]


def test_three_nodes_every_direction(cluster):
    a = cluster.node("a").start()
    b = cluster.node("b", peers=[a.address]).start()
    c = cluster.node("c", peers=[a.address, b.address]).start()
    nodes = {"a": a, "b": b, "c": c}
    for x in nodes:
        for y in nodes:
            if x != y:
                wait_until(lambda: nodes[x].online(y), what=f"{x} sees {y}")
    for x in nodes:
        for y in nodes:
            if x != y:
                nodes[x].cli("send", y, f"{x}->{y}")
    for y in nodes:
        expected = sorted(f"{x}->{y}" for x in nodes if x != y)
        wait_until(lambda: sorted(bodies(nodes[y], direction="in")) == expected, what=f"{y} receives all")


def test_message_to_a_peer_that_is_down_is_delivered_when_it_comes_up(cluster):
    alice, bob = pair(cluster)
    bob.stop()
    wait_until(lambda: not alice.online("bob"), what="alice sees bob offline")
    alice.cli("send", "bob", "while you were out")
    assert alice.peer_info("bob")["queued"] == 1
    bob.start()
    wait_until(lambda: bodies(bob, direction="in") == ["while you were out"], timeout=20, what="delivery after restart")
    wait_until(lambda: alice.peer_info("bob")["queued"] == 0, what="alice marks it delivered")


def burst(node, to, n, results, stop):
    """Sends n messages pipelined on one control connection; records ids the daemon accepted."""
    try:
        r = node.rpc(timeout=30)
        for i in range(n):
            if stop.is_set():
                break
            res = r.call("messages.send", {"to": to, "body": f"m{i:05d}"})
            results.append(res["message"]["id"])
        r.close()
    except (OSError, ConnectionError, RPCError):
        pass  # the sender was killed mid-burst


@pytest.mark.parametrize("victim", ["receiver", "sender", "both"])
def test_sigkill_mid_burst_loses_nothing_and_duplicates_nothing(cluster, victim):
    """Group commit (Store+GroupCommit.swift) answers sends and acknowledges chats only
    after their sync, with the next commits already made behind it: a SIGKILL at any point
    of a burst loses no answered send and shows no message twice."""
    alice, bob = pair(cluster)
    n = 1200
    accepted, stop = [], threading.Event()
    t = threading.Thread(target=burst, args=(alice, "bob", n, accepted, stop))
    t.start()
    wait_until(lambda: len(accepted) > 300, timeout=60, what="burst under way")
    targets = {"receiver": [bob], "sender": [alice], "both": [bob, alice]}[victim]
    for target in targets:
        target.kill(signal.SIGKILL)
    t.join(timeout=60)
    for target in targets:
        target.stop()
        target.start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), timeout=30, what="session back")
    if victim == "receiver":
        # The burst keeps going after the kill (alice is alive): finish it.
        assert len(accepted) == n
    accepted_set = set(accepted)
    def received_all():
        got = [m for m in bob.messages("alice") if m["direction"] == "in"]
        return got if {m["id"] for m in got} >= accepted_set else None
    got = wait_until(received_all, timeout=90, what="every accepted message received")
    ids = [m["id"] for m in got]
    assert len(ids) == len(set(ids)), "a message was shown twice"
    seqs = [m["sequence"] for m in got]
    assert seqs == sorted(seqs), "messages are not in per-sender order"
    # Everything the receiver has was really sent by alice (stored before the kill).
    sent_ids = {m["id"] for m in alice.messages("bob") if m["direction"] == "out"}
    assert set(ids) <= sent_ids
    assert accepted_set <= sent_ids, "a message whose send was answered is gone"
    wait_until(lambda: all(m["state"] == "delivered" for m in alice.messages("bob") if m["direction"] == "out"),
               timeout=60, what="all marked delivered")
    # The journal lost nothing either (issue 32: an event's row commits in its message's
    # transaction): a client resuming from the start gets a message.received event for
    # every stored message at bob, and a message.delivered for every delivery at alice.
    assert set(journal_counts(bob, "message.received")) >= set(ids)
    assert set(journal_counts(alice, "message.delivered")) >= sent_ids


@pytest.mark.parametrize("victim", ["sender", "both"])
def test_a_delivery_seen_before_a_sigkill_is_kept_and_the_message_shown_once(cluster, victim):
    """Issue 32 part 7: a delivery mark and its message.delivered row commit in one
    transaction without a sync of their own (Store.relaxedWrite under group commit), and
    the event is sent only after that commit. A client sees message.delivered and the
    daemon is SIGKILLed at once (with the receiver too): after the restart the message is
    delivered at once, its event is in the journal, the receiver shows it exactly once, and
    nothing is sent again."""
    alice, bob = pair(cluster)
    sub = alice.rpc(timeout=30)
    sub.call("messages.subscribe", {})
    sender = alice.rpc(timeout=30)
    ids = []
    for i in range(5):
        mid = sender.call("messages.send", {"to": "bob", "body": f"tick {i}"})["message"]["id"]
        for _ in range(50):  # a few notifications per message at most
            n = sub.next_notification(timeout=30)
            if n["method"] == "message.delivered" and n["params"]["id"] == mid:
                break
        else:
            raise AssertionError(f"no message.delivered for {mid}")
        ids.append(mid)
    # Right after the last message.delivered reached the client.
    targets = {"sender": [alice], "both": [alice, bob]}[victim]
    for target in targets:
        target.kill(signal.SIGKILL)
    sub.close()
    sender.close()
    for target in targets:
        target.stop()
        target.start()
    # Before any session is back: what the client saw is on disk.
    states = {m["id"]: m["state"] for m in alice.messages("bob") if m["direction"] == "out"}
    assert [states.get(mid) for mid in ids] == ["delivered"] * len(ids)
    assert set(journal_counts(alice, "message.delivered")) >= set(ids)
    wait_until(lambda: alice.online("bob") and bob.online("alice"), timeout=30, what="session back")
    # A sixth message goes through the same session after every earlier one would have been
    # resent (the outbox is sent again in sequence order at a new session): then bob shows
    # each message once.
    last = alice.call("messages.send", {"to": "bob", "body": "tick 5"})["message"]["id"]
    wait_until(lambda: last in {m["id"] for m in bob.messages("alice")}, timeout=30, what="bob gets the sixth")
    got = [m["id"] for m in bob.messages("alice") if m["direction"] == "in"]
    assert got == ids + [last], "a message is missing or shown twice at the receiver"
    wait_until(lambda: all(m["state"] == "delivered" for m in alice.messages("bob") if m["direction"] == "out"),
               timeout=30, what="the sixth delivered")


def test_messages_stored_before_a_sigkill_are_found_by_search_after_it(cluster):
    """The search index is fed in batches (SearchIndexFeed): bodies waiting for the next
    batch when both daemons are killed are indexed after the restart, none lost."""
    alice, bob = pair(cluster)
    words = [f"kumquat{i:03d}" for i in range(40)]
    r = alice.rpc(timeout=30)
    ids = [r.call("messages.send", {"to": "bob", "body": f"fruit {w}"})["message"]["id"] for w in words]
    r.close()
    wait_until(lambda: {m["id"] for m in bob.messages("alice")} >= set(ids), timeout=60, what="bob stores all")
    for node in (alice, bob):
        node.kill(signal.SIGKILL)
        node.stop()
    for node in (alice, bob):
        node.start()
        for w, mid in zip(words, ids):
            hits = node.call("messages.search", {"query": w})["hits"]
            assert [h["message"]["id"] for h in hits] == [mid], (node.name, w, hits)
        assert len(node.call("messages.search", {"query": "fruit", "limit": 200})["hits"]) == len(words), node.name


def test_a_search_right_after_a_burst_finds_every_message(cluster):
    """Issue 32: bodies are indexed in batches of 256 (SearchIndexFeed) and committed by
    group commit; a search right after a burst still finds every message on both sides,
    those waiting for the next batch included."""
    alice, bob = pair(cluster)
    n = 300  # one batch of 256 fed, 44 waiting
    r = alice.rpc(timeout=30)
    ids = [r.call("messages.send", {"to": "bob", "body": f"burst{i:03d} pomelo"})["message"]["id"] for i in range(n)]
    r.close()
    wait_until(lambda: {m["id"] for m in bob.messages("alice")} >= set(ids), timeout=60, what="bob stores all")
    for node in (alice, bob):
        for i in (0, 255, 256, n - 1):
            hits = node.call("messages.search", {"query": f"burst{i:03d}"})["hits"]
            assert [h["message"]["id"] for h in hits] == [ids[i]], (node.name, i, hits)
        found = set()
        for k in range(n // 100):  # every message, by its hundreds digit (a prefix query)
            hits = node.call("messages.search", {"query": f"burst{k}", "limit": 200})["hits"]
            found |= {h["message"]["id"] for h in hits}
        assert found == set(ids), (node.name, len(found))


def test_verify_by_fingerprint_and_safety_number_is_symmetric(cluster):
    alice, bob = pair(cluster)
    bob_fp = bob.whoami()["fingerprint"]
    with pytest.raises(RPCError) as e:
        alice.call("trust.verify", {"peer": "bob", "fingerprint": "aaaa-bbbb-cccc-dddd-eeee-ffff-2222-3333"})
    assert e.value.code == -32009
    # A correct but partial fingerprint is "too short", not a possible impersonation.
    with pytest.raises(RPCError) as e:
        alice.call("trust.verify", {"peer": "bob", "fingerprint": bob_fp[:9]})
    assert e.value.code == -32602 and "part of a fingerprint" in e.value.error["message"]
    alice.cli("trust", "bob", "--fingerprint", bob_fp)
    assert alice.peer_info("bob")["trust"] == "verified"
    assert alice.peer_info("bob")["safetyNumber"] == bob.peer_info("alice")["safetyNumber"]
    # A fingerprint prefix names a peer too.
    alice.cli("send", bob_fp[:9], "by prefix", "--wait")


def test_control_socket_hostile_input(cluster):
    node = cluster.node("solo").start()
    r = node.rpc()
    r.send_raw(b"{not json\n")
    assert r.read_line()["error"]["code"] == -32700
    r.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"messages.send","params":{"to":5,"body":[]}}\n')
    assert r.read_line()["error"]["code"] == -32602
    r.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"no.such.method"}\n')
    assert r.read_line()["error"]["code"] == -32601
    r.send_raw(b'[1,2,3]\n')
    assert r.read_line()["error"]["code"] == -32600
    r.send_raw(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "messages.send",
                           "params": {"to": "nobody", "body": "x"}}).encode() + b"\n")
    assert r.read_line()["error"]["code"] == -32001
    r.close()

    # A client that connects and never speaks does not block others.
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(str(node.socket))
    assert node.call("node.status")["name"] == "solo"

    # A 100 MB line: answered with lineTooLong and closed; the daemon keeps working.
    big = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    big.settimeout(10)
    big.connect(str(node.socket))
    chunk = b"x" * (1 << 20)
    sent = 0
    try:
        while sent < 100 * (1 << 20):
            big.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    data = b""
    try:
        while b"\n" not in data:
            c = big.recv(65536)
            if not c:
                break
            data += c
    except OSError:
        pass
    assert b"-32007" in data, f"no lineTooLong error, got {data[:200]!r} after {sent} bytes"
    big.close()

    # 100 clients at once: all are answered (up to the limit) or told the daemon is full.
    socks = []
    for _ in range(100):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        for _attempt in range(50):  # a full accept queue says EAGAIN: retry briefly
            try:
                s.connect(str(node.socket))
                break
            except BlockingIOError:
                time.sleep(0.02)  # back-off of a bounded retry (50 attempts) on a full accept queue
        socks.append(s)
    answered = refused = 0
    for i, s in enumerate(socks):
        try:
            s.sendall(json.dumps({"jsonrpc": "2.0", "id": i, "method": "node.status"}).encode() + b"\n")
            line = s.makefile("rb").readline()
            msg = json.loads(line)
            if "result" in msg:
                answered += 1
            elif msg["error"]["code"] == -32011:
                refused += 1
        except (OSError, ValueError):
            refused += 1
    for s in socks:
        s.close()
    silent.close()
    assert answered >= 60 and answered + refused == 100, (answered, refused)
    assert node.call("node.status")["name"] == "solo"
    assert node.proc.poll() is None


def test_cli_errors_are_clear(cluster):
    node = cluster.node("solo").start()
    p = node.cli("send", "nobody", "hi", check=False)
    assert p.returncode != 0 and "nobody" in p.stderr
    import subprocess
    from parley_harness import PARLEY
    p = subprocess.run([PARLEY, "status", "--socket", str(cluster.dir / "missing.sock")], capture_output=True, text=True)
    assert p.returncode == 3 and "parleyd" in p.stderr


def established_between(a, b):
    """TCP connections in state ESTABLISHED between the two daemons' listening ports."""
    out = subprocess.run(["ss", "-Htn", "state", "established"], capture_output=True, text=True).stdout
    listening = {str(a.port), str(b.port)}
    n = 0
    for line in out.splitlines():
        local, peer = line.split()[-2:]
        # A connection to a listening port, seen from either end.
        if local.rsplit(":", 1)[1] in listening or peer.rsplit(":", 1)[1] in listening:
            n += 1
    return n


def test_simultaneous_dial_leaves_exactly_one_session(cluster):
    # Both know each other's address and dial at once, five times over.
    a = cluster.node("a").start()
    b = cluster.node("b", peers=[a.address]).start()
    wait_until(lambda: a.online("b"), what="first session")
    for round_ in range(5):
        a.stop(); b.stop()
        a.peers = [b.address]
        b.peers = [a.address]
        a.start(wait=False); b.start(wait=False)
        a.wait_ready(); b.wait_ready()
        wait_until(lambda: a.online("b") and b.online("a"), what="session after simultaneous dial")
        # Each side counts its sockets to the other: one connection, seen from both ends = 2
        # lines. The losing dial's socket closes once its handshake ends: wait for that.
        wait_until(lambda: established_between(a, b) == 2, timeout=10,
                   what=f"round {round_}: one connection left")
        a.cli("send", "b", f"round {round_}", "--wait")
        # Still one after a message went through it (no second session came up meanwhile).
        conns = established_between(a, b)
        assert conns == 2, f"round {round_}: {conns} socket ends established, expected one connection"


def test_follow_prints_one_json_object_per_event(cluster):
    alice, bob = pair(cluster)
    # From the newest event now: what follows is printed whenever follow gets to subscribe.
    since = bob.call("messages.subscribe", {})["lastEventId"]
    follow = subprocess.Popen([PARLEY, "follow", "--json", "--since", str(since), "--socket", str(bob.socket)],
                              stdout=subprocess.PIPE, text=True)
    try:
        alice.cli("send", "bob", "watch this", "--wait")
        line = follow.stdout.readline()
        ev = json.loads(line)
        assert ev["event"] == "message.received" and ev["message"]["body"] == "watch this", ev
    finally:
        follow.send_signal(signal.SIGINT)
        assert follow.wait(timeout=10) == 0


def test_pipelined_sends_are_answered_in_order_after_storing(cluster):
    alice, bob = pair(cluster)
    r = alice.rpc(timeout=30)
    n = 500
    reqs = b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "messages.send",
                                "params": {"to": "bob", "body": f"p{i}"}}).encode() + b"\n" for i in range(n))
    # One bad request in the middle fails alone.
    reqs += json.dumps({"jsonrpc": "2.0", "id": n, "method": "messages.send",
                        "params": {"to": "nobody", "body": "x"}}).encode() + b"\n"
    r.send_raw(reqs)
    answers = [r.read_line() for _ in range(n + 1)]
    r.close()
    assert [a["id"] for a in answers] == list(range(n + 1))
    assert all("result" in a for a in answers[:n]) and answers[n]["error"]["code"] == -32001
    seqs = [a["result"]["message"]["sequence"] for a in answers[:n]]
    assert seqs == sorted(seqs) and len(set(seqs)) == n
    wait_until(lambda: len([m for m in bob.messages("alice") if m["direction"] == "in"]) == n, timeout=30,
               what="all pipelined messages delivered")
    got = [m["body"] for m in bob.messages("alice") if m["direction"] == "in"]
    assert got == [f"p{i}" for i in range(n)]


def test_a_subscriber_that_never_reads_is_cut_off_with_a_notice(cluster):
    alice, bob = pair(cluster)
    # 12,000 messages from one peer: more than an unverified peer's receive quota (10,000).
    bob.call("trust.verify", {"peer": "alice", "fingerprint": alice.whoami()["fingerprint"]})
    lazy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    lazy.connect(str(bob.socket))
    lazy.sendall(b'{"jsonrpc":"2.0","id":1,"method":"messages.subscribe"}\n')
    # 12,000 messages to bob: more notifications than the backlog limit (10,000).
    r = alice.rpc(timeout=60)
    batch = 500
    for start in range(0, 12000, batch):
        reqs = b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "messages.send",
                                    "params": {"to": "bob", "body": f"n{i}"}}).encode() + b"\n"
                        for i in range(start, start + batch))
        r.send_raw(reqs)
        for _ in range(batch):
            r.read_line()
    r.close()
    wait_until(lambda: "too slow" in bob.log_path.read_text(), timeout=60, what="bob cuts the subscriber off")
    # The subscriber finds the notice at the end of what it was sent, then EOF.
    lazy.settimeout(10)
    data = b""
    while True:
        chunk = lazy.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    last = json.loads(data.strip().split(b"\n")[-1])
    assert last["method"] == "subscription.closed" and last["params"]["code"] == -32012, last
    assert bob.proc.poll() is None
    wait_until(lambda: len([m for m in bob.messages("alice") if m["direction"] == "in"]) == 12000, timeout=60,
               what="every message still delivered and stored")


def test_a_client_that_never_reads_its_answers_is_paused_not_buffered(cluster):
    """Requests pipelined by a client that reads nothing back: the daemon stops reading
    them once its answers would pile up, so its memory stays bounded, other clients are
    served, and once the client reads, every request is answered in order."""
    alice = cluster.node("alice").start()
    rss = lambda: int(next(l for l in open(f"/proc/{alice.proc.pid}/status") if l.startswith("VmRSS:")).split()[1])
    before = rss()
    n = 100_000  # ~5 MB of requests, ~40 MB of answers if they were all buffered
    hog = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    hog.connect(str(alice.socket))
    payload = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"node.whoami"}\n' % i for i in range(n))
    writer = threading.Thread(target=hog.sendall, args=(payload,), daemon=True)
    writer.start()
    # An absence over time, kept as one: the daemon must not read on. Unpaused it reads all
    # ~5 MB in well under a second (and the writer ends); nothing the daemon emits says it
    # paused, and a blocked writer looks the same whether it paused or is slow.
    time.sleep(3)
    assert writer.is_alive(), "the daemon kept reading a client that takes no answers"
    assert rss() - before < 24 * 1024, f"daemon grew by {rss() - before} KiB"
    assert alice.whoami()["name"] == "alice", "other clients are still served"
    f = hog.makefile("rb")
    for i in range(n):
        assert json.loads(f.readline())["id"] == i
    writer.join(timeout=30)
    assert not writer.is_alive()
    hog.close()

