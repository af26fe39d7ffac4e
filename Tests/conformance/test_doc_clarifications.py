"""Issue 33: the places where an implementation written from docs/PROTOCOL.md and
docs/CONTROL.md alone had to guess, each checked against a real parleyd as the documents
now say it: options and their ranges (item 1), reply order (2), contact tags (3), address
gossip records without feature bit 2 (4), CONTROL.md's removed member and peers.connect
(6), the record types reserved for experiments (8), the address-record signing prefix (9),
what a keyless node hands anyone who connects (10)."""
import os
import socket
import struct
import subprocess
import threading
import time

import pytest

import protocol_doc as doc
from conftest import PARLEYD, wait_until
from parley_wire import (ACK, CHAT, CLOSE, PING, PONG, PROTOCOL_ERROR, ROOM_OPERATION, Identity, PeerClosed,
                         Session, chat, id_list, parse_card, parse_close, parse_ids, record)

FEATURES_FIELD = 0x10
CONVERSATION_BIT, FILES_BIT, GOSSIP_BIT = 1 << 0, 1 << 1, 1 << 2
REPLY = 0x09
ADDRESS_RECORD, CONTACT_TAGS = 0x21, 0x22
RESERVED_FOR_EXPERIMENTS = range(0xF0, 0x100)


def features(bits):
    return [(FEATURES_FIELD, struct.pack(">I", bits))]


def named(name_prefix):
    return name_prefix + os.urandom(4).hex()


def session(daemon, identity=None, name=None, bits=0, sequence=1):
    """A kept session; a later session of the same identity needs a higher card `sequence`
    (or the same card bytes): "Trust: a peer is its key"."""
    me = identity or Identity()
    s = Session.established(daemon.address, me, card=me.card(name=name or named("py"), sequence=sequence),
                            extra_fields=features(bits) if bits else ())
    return me, s


def assert_still_up(s):
    """A chat after whatever was sent is acknowledged: the session was not closed."""
    msg_id = os.urandom(16)
    s.send_records(chat(b"still up", msg_id=msg_id))
    assert parse_ids(s.wait_for(ACK)) == [msg_id]


def assert_closed_with_protocol_error(s):
    records, _ = s.read_until_closed(timeout=5)
    assert [parse_close(p)[0] for t, p in records if t == CLOSE] == [PROTOCOL_ERROR], records


# --- item 1: options, their file and their ranges ("Running parleyd as a test peer") ---

def run_parleyd(workdir, *args):
    state = workdir / "refused-state"
    out = subprocess.run([PARLEYD, "--state-dir", str(state), "--no-mdns", *args],
                         capture_output=True, text=True, timeout=30)
    return out, state


@pytest.mark.parametrize("line, expected", [
    ("ping_interval_ms = 5", "from 10 to 3600000"),
    ("dead_after_ms = 3600001", "from 10 to 3600000"),
    ("quota_peer_messages = 0", "from 1 to 100000000"),
    ("max_sessions = 65537", "at most 65536"),
    ("unused_identity_lifetime_s = 0", "from 1 to 315360000"),
])
def test_a_value_out_of_its_range_in_the_config_file_stops_parleyd_with_status_78(workdir, line, expected):
    config = workdir / "parleyd.toml"
    config.write_text(f"[parleyd]\n{line}\n")
    out, state = run_parleyd(workdir, "--config", str(config))
    assert out.returncode == 78, out
    assert f"{config}:2:" in out.stderr and line.split()[0] in out.stderr and expected in out.stderr, out.stderr
    assert not state.exists(), "refused before it opens anything"


def test_a_flag_out_of_its_range_stops_parleyd_with_status_78(workdir):
    config = workdir / "empty.toml"
    config.write_text("")
    out, _ = run_parleyd(workdir, "--config", str(config), "--dead-after-ms", "9")
    assert out.returncode == 78, out
    assert "dead_after_ms" in out.stderr and "10" in out.stderr and "3600000" in out.stderr, out.stderr


def test_the_config_file_sets_the_timers_and_a_flag_wins_over_it(workdir, daemons):
    """ping_interval_ms from --config (the file says 400 ms); dead_after_ms from the file
    (60 s) overridden by the flag (1,200 ms): the silent client is pinged after about 0.4 s
    and dropped about 1.2 s after that ping, far sooner than the defaults (10 min, 15 s)."""
    config = workdir / "timers.toml"
    config.write_text("[parleyd]\nping_interval_ms = 400\ndead_after_ms = 60000\n")
    d = daemons(args=["--config", str(config), "--dead-after-ms", "1200"])
    _, s = session(d, name="pytimers")
    start = time.monotonic()
    first_ping = None
    with pytest.raises(PeerClosed):
        while time.monotonic() - start < 10:
            for t, _ in s.recv_records(timeout=10):
                if t == PING and first_ping is None:
                    first_ping = time.monotonic() - start
    closed = time.monotonic() - start
    assert first_ping is not None and 0.3 <= first_ping <= 1.5, first_ping
    assert 1.0 <= closed - first_ping <= 3.0, (first_ping, closed)


# --- item 2: a reply is shown in arrival order, like a chat ---

def test_a_reply_is_shown_in_arrival_order_not_by_sequence(daemon):
    me, s = session(daemon, name="pyreply", bits=CONVERSATION_BIT)
    first, reply_id = os.urandom(16), os.urandom(16)
    s.send_records(chat(b"sequence 100", sequence=100, msg_id=first))
    assert parse_ids(s.wait_for(ACK)) == [first]
    s.send_records(record(REPLY, reply_id + struct.pack(">QQ", 50, int(time.time() * 1000)) + first
                          + b"reply with sequence 50"))
    assert parse_ids(s.wait_for(ACK)) == [reply_id]
    listed = daemon.messages("pyreply")
    assert [(m["body"], m["sequence"]) for m in listed] == [("sequence 100", 100), ("reply with sequence 50", 50)]
    assert listed[0]["cursor"] < listed[1]["cursor"]


# --- items 3 and 4: address gossip ---

def make_contact(daemon, identity, name):
    """A contact of the daemon: pinned by a handshake and written to by its user."""
    _, s = session(daemon, identity, name=name)
    fingerprint = doc.fingerprint(identity.identity_key)
    daemon.call("messages.send", {"to": fingerprint, "body": "hello " + name})
    msg = s.wait_for(CHAT)
    s.send_records(id_list(ACK, [msg[:16]]))
    return s


def test_contact_tags_leave_out_the_receiver_and_go_only_to_a_gossiping_contact(daemon):
    me, other = Identity(), Identity()
    make_contact(daemon, other, named("pyother")).close_socket()
    s = make_contact(daemon, me, named("pyme"))
    s.close_socket()
    wait_until(lambda: not [p for p in daemon.peers() if p["identityKey"] == me.identity_key.hex() and p["online"]],
               what="the first session gone")
    # Without bit 2 the daemon sends neither its address record nor tags.
    _, plain = session(daemon, me, name="pyme-plain", sequence=2)
    assert_still_up(plain)
    assert [t for t, _ in getattr(plain, "seen", []) if t in (ADDRESS_RECORD, CONTACT_TAGS)] == []
    plain.close_socket()
    wait_until(lambda: not [p for p in daemon.peers() if p["identityKey"] == me.identity_key.hex() and p["online"]],
               what="the plain session gone")
    # With bit 2: tags of its contacts, the other one's among them, the receiver's own not.
    _, s = session(daemon, me, name="pyme-gossip", bits=GOSSIP_BIT, sequence=3)
    payload = s.wait_for(CONTACT_TAGS)
    salt, count = payload[:16], struct.unpack(">H", payload[16:18])[0]
    tags = [payload[18 + 16 * i:34 + 16 * i] for i in range(count)]
    assert len(payload) == 18 + 16 * count
    assert doc.contact_tag(salt, other.identity_key) in tags
    assert doc.contact_tag(salt, me.identity_key) not in tags, "the receiver's own identity is left out"
    assert tags == sorted(tags), "parleyd writes the tags in ascending order"
    assert ADDRESS_RECORD in [t for t, _ in s.seen], "its own address record comes first"


def test_gossip_records_from_a_peer_without_bit_2_are_skipped_even_malformed(daemon):
    _, s = session(daemon, bits=CONVERSATION_BIT | FILES_BIT)
    s.send_records(record(ADDRESS_RECORD, b"\x07garbage"), record(CONTACT_TAGS, b"\x00"),
                   record(0x23, b""), record(0x24, b"\xff"))
    assert_still_up(s)


def test_the_same_malformed_gossip_record_from_a_peer_with_bit_2_is_a_protocol_error(daemon):
    _, s = session(daemon, bits=GOSSIP_BIT)
    s.send_records(record(ADDRESS_RECORD, b"\x07garbage"))
    assert_closed_with_protocol_error(s)


# --- item 9: the address-record signing prefix has no NUL ---

def own_address_record(identity, prefix):
    return doc.address_record(identity.signing, int(time.time() * 1000), [(bytes([127, 0, 0, 1]), 7744)],
                              prefix=prefix)


def test_an_address_record_signed_without_a_nul_is_taken(daemon):
    me, s = session(daemon, bits=GOSSIP_BIT)
    s.send_records(record(ADDRESS_RECORD, own_address_record(me, b"parley address record v1")))
    assert_still_up(s)


@pytest.mark.parametrize("prefix", [b"parley address record v1\x00", b"parley-address-record-v1\x00"])
def test_an_address_record_signed_with_a_nul_terminated_prefix_is_refused(daemon, prefix):
    me, s = session(daemon, bits=GOSSIP_BIT)
    s.send_records(record(ADDRESS_RECORD, own_address_record(me, prefix)))
    assert_closed_with_protocol_error(s)


# --- item 8: record types reserved for tests and experiments ---

@pytest.mark.parametrize("bits", [0, CONVERSATION_BIT | FILES_BIT | GOSSIP_BIT | 0xFFFF0000])
def test_reserved_record_types_are_skipped_whatever_the_peer_announced(daemon, bits):
    _, s = session(daemon, bits=bits)
    s.send_records(*[record(t, os.urandom(t - 0xF0)) for t in RESERVED_FOR_EXPERIMENTS],
                   record(0xFF, b"\x00" * (131_072 - 5)))
    assert_still_up(s)
    assert [t for t, _ in getattr(s, "seen", []) if t in RESERVED_FOR_EXPERIMENTS] == [], "never answered"


def test_a_reserved_record_over_the_size_limit_is_still_a_protocol_error(daemon):
    _, s = session(daemon)
    s.send_records(bytes([0xF0]) + struct.pack(">I", 131_068))
    assert_closed_with_protocol_error(s)


# --- item 6: CONTROL.md, a removed member's room status; peers.connect's peer ---

def room_id_hex(create):
    return doc.room_operation_hash(create)[:16].hex()


def test_a_member_removed_by_an_owner_shows_the_room_as_left(daemon):
    me, s = session(daemon, name=named("pyowner"))
    daemon_key = parse_card(s.peer_card)["identityKey"]
    now = int(time.time() * 1000)
    create = doc.room_operation(me.signing, doc.CREATE, os.urandom(16), 1, now, name=b"removal",
                                flags=0, members=[me.identity_key, daemon_key])
    s.send_records(record(ROOM_OPERATION, create))
    assert parse_ids(s.wait_for(ACK)) == [doc.room_operation_hash(create)[:16]]
    room = room_id_hex(create)

    def info():
        return [r for r in daemon.call("rooms.list")["rooms"] if r["id"] == room]
    assert wait_until(info, what="the invitation")[0]["status"] == "invited"
    daemon.call("rooms.accept", {"room": room})
    join = s.wait_for(ROOM_OPERATION)
    s.send_records(id_list(ACK, [doc.room_operation_hash(join)[:16]]))
    assert join[1] == doc.JOIN and join[34:66] == daemon_key
    assert info()[0]["status"] == "joined"
    remove = doc.room_operation(me.signing, doc.REMOVE, bytes.fromhex(room), 3, now + 1,
                                parents=[doc.room_operation_hash(join)], target=daemon_key)
    s.send_records(record(ROOM_OPERATION, remove))
    assert parse_ids(s.wait_for(ACK)) == [doc.room_operation_hash(remove)[:16]]
    removed = wait_until(lambda: [r for r in info() if not r["member"]], what="the removal")[0]
    assert removed["status"] == "left" and "role" in removed and removed["role"] is None, removed
    assert [m for m in removed["members"] if m["you"]] == []


def accept_as(listener, identity, name):
    conn, _ = listener.accept()
    s = Session(conn, identity, initiator=False, card=identity.card(name=name))
    s.handshake()
    return s


def test_peers_connect_reports_the_identity_that_answered(daemon):
    """An address names no identity: peers.connect reports whichever key completed the
    handshake there, also when another key answers at an address that led to someone else."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(15)
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    first, second = Identity(), Identity()
    results = []
    for identity in (first, second):
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("r", daemon.call(
            "peers.connect", {"address": address, "wait": True, "timeoutMs": 10000})))
        t.start()
        s = accept_as(listener, identity, named("pyanswer"))
        # The dialler answers `wait` only once the peer shows it kept the session (its trust
        # decision comes after the handshake): it pings, and a conforming node pongs.
        value = s.wait_for(PING, timeout=10)
        s.send_records(record(PONG, value))
        t.join(15)
        results.append(box["r"])
        s.send_records(record(CLOSE, b"\x00"))
        s.close_socket()
        wait_until(lambda: not [p for p in daemon.peers()
                                if p["identityKey"] == identity.identity_key.hex() and p["online"]],
                   what="session gone")
    listener.close()
    assert [r["status"] for r in results] == ["connected", "connected"]
    assert results[0]["peer"]["identityKey"] == first.identity_key.hex()
    assert results[1]["peer"]["identityKey"] == second.identity_key.hex()
    assert results[1]["peer"]["fingerprint"].replace("-", "") == doc.fingerprint(second.identity_key).replace("-", "")


# --- item 10: without a network key, anyone who connects gets the card ---

def test_without_a_network_key_anyone_who_connects_learns_name_fingerprint_and_host(daemon):
    """PROTOCOL.md "What a bystander still learns": the advertisement hides the identity
    only from those who do not connect; a stranger's handshake gets the card."""
    whoami = daemon.call("node.whoami")
    _, s = session(daemon)
    card = s.peer_card
    parsed = parse_card(card)
    host_len = card[66 + card[65]]
    host = card[67 + card[65]:67 + card[65] + host_len].decode()
    assert parsed["name"] == "daemon" and host == whoami["host"] and host
    assert parsed["identityKey"].hex() == whoami["identityKey"]
    assert doc.fingerprint(parsed["identityKey"]) == whoami["fingerprint"]
