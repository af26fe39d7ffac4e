"""Issue 19 on loopback: address gossip among contacts (no mDNS, no --peer after a move)
and the refusal of a relayed address its owner did not sign. The routed lab tests are in
test_lab_subnets.py."""

import re

from parley_harness import wait_until
from test_rooms import mesh


def moved(node):
    """Restart `node` on a new port with no --peer: its contacts' memories are stale."""
    node.peers = []
    node.listen_arg, node.fixed_listen = "127.0.0.1:0", False
    # A daemon listening on port 0 asks for the port it had before (listen-port in its
    # state): forgetting it is what moves it.
    (node.state_dir / "listen-port").unlink(missing_ok=True)


def acquainted(n):
    """A message each way per pair: a key pinned by a handshake alone is a stranger to
    gossip; a contact is verified or was written to (docs/PROTOCOL.md "Address gossip")."""
    for a in n:
        for b in n:
            if a != b:
                n[a].cli("send", b, f"hello {b}", "--wait")


def test_a_contact_who_moved_is_found_through_a_common_contact(cluster):
    n = mesh(cluster, "alice", "bob", "carol")
    acquainted(n)
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    old = {"bob": bob.port, "carol": carol.port}
    bob.stop()
    carol.stop()
    wait_until(lambda: not alice.online("bob") and not alice.online("carol"), what="both gone")
    moved(carol)
    moved(bob)
    carol.start()
    wait_until(lambda: alice.online("carol"), what="carol redials alice from memory", timeout=30)
    bob.start()
    assert bob.port != old["bob"] and carol.port != old["carol"]
    wait_until(lambda: bob.online("alice"), what="bob redials alice from memory", timeout=30)
    # Neither knows where the other is now; alice, their common contact, relays the
    # records each signed for itself.
    wait_until(lambda: bob.online("carol") and carol.online("bob"), what="bob and carol through alice", timeout=30)
    assert f"127.0.0.1:{carol.port}" in bob.peer_info("carol")["addresses"] or \
        f"127.0.0.1:{bob.port}" in carol.peer_info("bob")["addresses"]
    # The address came from alice (the relay), not from carol's own session.
    relayed = [m for node, other in ((bob, carol), (carol, bob))
               for m in re.finditer(r"learned addresses addresses=(\S+) from=(\S+) peer=(\S+)",
                                    node.log_path.read_text(errors="replace"))
               if m.group(2) != m.group(3) and f":{other.port}" in m.group(1)]
    assert relayed, "bob or carol learned the other's new address from a relay"


def test_a_relayed_address_not_signed_by_its_owner_is_refused(cluster):
    from test_hostile import attack
    n = mesh(cluster, "alice", "bob")
    alice, bob = n["alice"], n["bob"]
    victim = alice.whoami()["identityKey"]
    out = attack(bob, "forge-address", victim, "127.0.0.1:9")
    assert out == "closed", out
    assert "127.0.0.1:9" not in (bob.peer_info("alice")["addresses"] or [])
    assert bob.online("alice"), "the honest session is untouched"


def test_dial_back_reaches_only_the_requester_and_is_rate_limited(cluster):
    """A peer can only make the node dial the peer's own host (the request has no host
    field), once per minute: three requests give one connection to our listener."""
    import socket
    import threading
    from test_hostile import attack
    bob = cluster.node("bob").start()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(20)
    accepted = []

    def accept():
        try:
            while True:
                conn, _ = listener.accept()
                accepted.append(conn)
        except OSError:
            pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    out = attack(bob, "dial-back", listener.getsockname()[1], 3)
    assert out == "connected refused refused", out
    # "connected" means bob's TCP handshake completed, which the kernel does before our
    # accept thread runs: wait for the accept (under load it can lag) before closing the
    # listener, or a connection still in the backlog is thrown away uncounted.
    wait_until(lambda: accepted, what="bob's dial-back accepted")
    listener.close()
    t.join(5)
    assert len(accepted) == 1, accepted


def test_a_stranger_who_knows_a_key_and_sends_a_chat_is_told_no_address(cluster):
    """Mallory completes a handshake with bob (pinned on first use), sends him a chat, and
    claims with contact tags to hold alice's key: bob holds alice's record but tells a
    stranger nothing (the pong comes back, no address record before it)."""
    from test_hostile import attack
    n = mesh(cluster, "alice", "bob")
    acquainted(n)
    alice, bob = n["alice"], n["bob"]
    bob.stop()
    bob.start()  # a new session: alice's record reaches bob again, now as a contact's
    wait_until(lambda: bob.online("alice"), what="alice and bob back", timeout=30)
    wait_until(lambda: "learned addresses" in bob.log_path.read_text(errors="replace").split("shutting down")[-1],
               what="bob holds alice's record")
    out = attack(bob, "tags-probe", alice.whoami()["identityKey"])
    assert out == "nothing", out


def learned(node, since=0):
    """(addresses, from, peer) of each "learned addresses" line of node's log after `since`."""
    text = node.log_path.read_text(errors="replace")[since:]
    return [m.groups() for m in re.finditer(r"learned addresses addresses=(\S+) from=(\S+) peer=(\S+)", text)]


def test_a_relay_passes_on_a_kept_record_after_its_own_restart_but_not_a_stale_one(cluster):
    """Alice (the relay) holds carol's signed record in her store. Alice restarts while
    carol is away; bob comes back: alice passes carol's record on from her store (carol is
    not running, so nobody else can have told him). A record older than 24 h
    (docs/PROTOCOL.md "Address gossip") planted in alice's store is not passed on."""
    import sqlite3
    import subprocess
    import time
    from test_hostile import ADVERSARY
    n = mesh(cluster, "alice", "bob", "carol")
    acquainted(n)
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    carol_id = carol.whoami()["identityKey"]
    bob.stop()
    carol.stop()
    moved(carol)
    carol.start()  # a new port: only alice (whom carol redials from memory) learns it
    wait_until(lambda: alice.online("carol"), what="carol redials alice", timeout=30)
    wait_until(lambda: any(f":{carol.port}" in a for a, _, _ in learned(alice)), what="alice holds carol's record")
    carol.stop()
    alice.stop()
    alice.start()  # same port; carol's record only in alice's store now
    mark = len(bob.log_path.read_text(errors="replace")) if bob.log_path.exists() else 0
    bob.start()
    wait_until(lambda: bob.online("alice"), what="bob redials alice", timeout=30)
    wait_until(lambda: any(f":{carol.port}" in a and f != p for a, f, p in learned(bob, mark)),
               what="bob learns carol's new address from alice's kept record", timeout=20)
    assert f"127.0.0.1:{carol.port}" in bob.peer_info("carol")["addresses"]

    # Expiry: a record carol signed 25 h ago (with carol's own key, so only its age is
    # wrong) replaces the good one in alice's store; after alice's restart bob gets nothing.
    stale_ms = int(time.time() * 1000) - 25 * 3600 * 1000
    stale = subprocess.run([ADVERSARY, "sign-address", "127.0.0.1:9", str(carol.state_dir / "identity.key"),
                            str(stale_ms)], capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    alice.stop()
    bob.stop()
    c = sqlite3.connect(alice.state_dir / "parley.sqlite")
    try:
        changed = c.execute("UPDATE address_record SET record = ?, issued_at = ? WHERE identity = ?",
                            (bytes.fromhex(stale), stale_ms, carol_id)).rowcount
        c.commit()
    finally:
        c.close()
    assert changed == 1
    alice.start()
    mark = len(bob.log_path.read_text(errors="replace"))
    bob.start()
    wait_until(lambda: bob.online("alice"), what="bob redials alice", timeout=30)
    # In-order delivery: alice relays on bob's contact tags, which precede this chat on the
    # session, so once alice has acknowledged it any relayed record has reached bob.
    bob.cli("send", "alice", "after the restart", "--wait")
    assert not any("127.0.0.1:9" in a for a, _, _ in learned(bob, mark)), learned(bob, mark)
    assert "127.0.0.1:9" not in (bob.peer_info("carol")["addresses"] or [])
