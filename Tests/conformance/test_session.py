"""docs/PROTOCOL.md on a running session: liveness (item 2), cardUpdate expiry (item 3),
display order (item 4), redialling (item 6), key change by address (item 11)."""
import os
import socket
import time

import pytest

from conftest import wait_until
from parley_wire import (ACK, CARD_UPDATE, CHAT, CLOSE, NORMAL, PING, PONG, Identity,
                         PeerClosed, Session, chat, close, parse_close, parse_ids, record)

PING_MS, DEAD_MS = 500, 1500


def test_silent_peer_gets_one_ping_per_interval_then_is_dropped_without_a_close(daemons):
    d = daemons(args=["--ping-interval-ms", str(PING_MS), "--dead-after-ms", str(DEAD_MS)])
    me = Identity()
    s = Session.established(d.address, me, card=me.card(name="pysilent"))
    start = time.monotonic()
    pings, got = [], []
    try:
        while True:
            for t, p in s.recv_records(timeout=5):
                got.append(t)
                if t == PING:
                    pings.append(time.monotonic() - start)
    except PeerClosed:
        closed_after = time.monotonic() - start
    assert CLOSE not in got, "a dead peer is dropped without a close record"
    assert pings, "no ping during the silence"
    assert PING_MS / 1000 * 0.8 <= pings[0] <= PING_MS / 1000 * 2, pings
    gaps = [b - a for a, b in zip(pings, pings[1:])]
    assert all(g >= PING_MS / 1000 * 0.8 for g in gaps), f"re-pinged faster than the interval: {pings}"
    assert DEAD_MS / 1000 * 0.9 <= closed_after <= DEAD_MS / 1000 + 1.0, closed_after


def test_a_peer_that_answers_pings_stays(daemons):
    d = daemons(args=["--ping-interval-ms", str(PING_MS), "--dead-after-ms", str(DEAD_MS)])
    me = Identity()
    s = Session.established(d.address, me, card=me.card(name="pyalive"))
    deadline = time.monotonic() + 3 * DEAD_MS / 1000
    while time.monotonic() < deadline:
        for t, p in s.recv_records(timeout=5):
            assert t != CLOSE
            if t == PING:
                s.send_records(record(PONG, p))
    msg_id = os.urandom(16)
    s.send_records(chat(b"still alive", msg_id=msg_id))
    assert parse_ids(s.wait_for(ACK)) == [msg_id]


def test_expired_card_update_is_not_pinned(daemon):
    """Item 3: an expired cardUpdate is ignored (the session goes on); pinning it would make
    the peer's later valid cards with a lower sequence look stale."""
    me = Identity()
    now = int(time.time())
    s = Session.established(daemon.address, me, card=me.card(name="pycard", sequence=1))
    expired = me.card(name="expired-name", sequence=5, issued_at=now - 100, expires_at=now - 10)
    msg_id = os.urandom(16)
    s.send_records(record(CARD_UPDATE, expired), chat(b"after the update", msg_id=msg_id))
    assert parse_ids(s.wait_for(ACK)) == [msg_id], "an expired card update is not a protocol error"
    assert [p["name"] for p in daemon.peers()] == ["pycard"]
    s.send_records(close(NORMAL))
    s.close_socket()
    wait_until(lambda: not daemon.peers()[0]["online"], what="offline")
    # A valid card with sequence 2 (lower than the expired update's 5) is still accepted.
    s2 = Session.established(daemon.address, me, card=me.card(name="pycard2", sequence=2))
    msg2 = os.urandom(16)
    s2.send_records(chat(b"with card 2", msg_id=msg2))
    assert parse_ids(s2.wait_for(ACK)) == [msg2]
    assert [p["name"] for p in daemon.peers()] == ["pycard2"]
    # And a valid update with a higher sequence is pinned.
    s2.send_records(record(CARD_UPDATE, me.card(name="pycard3", sequence=3)))
    wait_until(lambda: [p["name"] for p in daemon.peers()] == ["pycard3"], what="card update pinned")


def test_card_update_for_another_identity_is_a_protocol_error(daemon):
    me, other = Identity(), Identity()
    s = Session.established(daemon.address, me, card=me.card(name="pyother"))
    s.send_records(record(CARD_UPDATE, other.card(name="someone")))
    records, _ = s.read_until_closed()
    assert [parse_close(p)[0] for t, p in records if t == CLOSE] == [2]


def test_messages_are_shown_in_arrival_order(daemon):
    """Item 4: a receiver lists a sender's messages in the order they arrived (the cursor
    order of CONTROL.md), which for a sender following the document is `sequence` order;
    `sequence` does not reorder what has already been shown."""
    me = Identity()
    s = Session.established(daemon.address, me, card=me.card(name="pyorder"))
    s.send_records(chat(b"sequence 100", sequence=100))
    s.wait_for(ACK)
    s.send_records(chat(b"sequence 50", sequence=50))
    s.wait_for(ACK)
    listed = daemon.messages("pyorder")
    assert [(m["body"], m["sequence"]) for m in listed] == [("sequence 100", 100), ("sequence 50", 50)]
    assert listed[0]["cursor"] < listed[1]["cursor"]


def accept_handshake(listener, identity, name):
    conn, _ = listener.accept()
    s = Session(conn, identity, initiator=False, card=identity.card(name=name))
    s.handshake()
    return s


def test_redial_after_close_normal_backs_off(daemons):
    """Item 6: after a session ends, even by the peer's close(normal), the node redials its
    configured address with backoff: 0.25-0.5 s, then 0.5-1 s, 1-2 s, 2-4 s (each attempt
    that fails doubles the wait; jitter halves it at most)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(15)
    d = daemons(args=["--peer", f"127.0.0.1:{listener.getsockname()[1]}"])
    me = Identity()
    s = accept_handshake(listener, me, "pygoodbye")
    s.send_records(close(NORMAL, b"restarting"))
    # The daemon read the close record once it closes its end (closing ours first, with its
    # bytes unread, could reset the connection before the record is read).
    s.sock.settimeout(10)
    while s.sock.recv(65536):
        pass
    s.close_socket()
    ended = time.monotonic()
    times = []
    for _ in range(4):
        conn, _ = listener.accept()
        times.append(time.monotonic())
        conn.close()  # this attempt fails: the next waits longer
    gaps = [times[0] - ended] + [b - a for a, b in zip(times, times[1:])]
    # Lower bounds from the document's ranges (minus scheduling slack); upper bounds with
    # room for a loaded machine.
    assert 0.2 <= gaps[0] <= 1.0, gaps
    assert 0.45 <= gaps[1] <= 1.6, gaps
    assert 0.9 <= gaps[2] <= 2.8, gaps
    assert 1.9 <= gaps[3] <= 5.0, gaps
    listener.close()


def test_a_new_key_answering_at_a_pinned_peers_address_is_a_new_peer(daemons):
    """PROTOCOL.md "Trust: a peer is its key": the decision depends only on the identity key
    the handshake proved, never on the address. A new key answering where a pinned peer was
    reached is a peer of its own (pinned on first use); the first key keeps its pin."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(15)
    d = daemons(args=["--peer", f"127.0.0.1:{listener.getsockname()[1]}"])
    s = accept_handshake(listener, Identity(), "pyfirst")
    wait_until(lambda: [p for p in d.peers() if p["name"] == "pyfirst" and p["online"]], what="pinned")
    s.send_records(close(NORMAL))
    s.close_socket()
    s2 = accept_handshake(listener, Identity(), "pysecond")
    wait_until(lambda: [p for p in d.peers() if p["name"] == "pysecond" and p["online"]],
               what="the second key is its own peer, with a session")
    first = [p for p in d.peers() if p["name"] == "pyfirst"]
    assert len(first) == 1 and first[0]["trust"] == "pinned" and not first[0]["online"]
    log = d.log()
    assert "KEY CHANGED" not in log
    s2.close_socket()
    listener.close()
