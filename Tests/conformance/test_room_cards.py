"""docs/PROTOCOL.md "Room cards" (record 0x18, features bit 4), from the document alone:
this client is a member that passes on another member's card (the daemon keeps it only
once it has joined, refuses a forged one without closing the session, never lets one
change a key it knows), and a member to which the daemon passes on the card of an
operation's actor (its own, right after its create)."""
import os
import struct

import nacl.signing
from conftest import wait_until
from parley_wire import PING, PONG, ROOM_OPERATION, Identity, Session, record
from test_room_sync import acked, collect, daemon_accepts
from test_rooms import CREATE, JOIN, create_body, daemon_key, room_op  # noqa: F401 (fixtures below)
from test_rooms import daemon  # noqa: F401

ROOM_CARD = 0x18
FEATURES_ROOM_CARDS = [(0x10, struct.pack(">I", (1 << 3) | (1 << 4)))]


def peer(daemon, key):
    return next((p for p in daemon.call("peers.list")["peers"] if p["identityKey"] == key.hex()), None)


def alive(session):
    session.send_records(record(PING, struct.pack(">Q", 9)))
    collect(session, lambda rs: any(t == PONG for t, _ in rs))


def test_a_members_card_passed_on_is_kept_once_the_daemon_joined_and_a_forged_one_is_refused(daemon):  # noqa: F811
    me, carol = Identity(), Identity()
    session = Session.established(daemon.address, me, card=me.card(name="fwd" + os.urandom(4).hex()),
                                  extra_fields=FEATURES_ROOM_CARDS)
    name = b"cards" + os.urandom(3).hex().encode()
    members = [me.identity_key, carol.identity_key, daemon_key(daemon)]
    create, create_hash = room_op(me, CREATE, os.urandom(16), 1, body=create_body(name, members))
    room = create_hash[:16]
    join_c, jc = room_op(carol, JOIN, room, 2, parents=[create_hash])
    carol_name = "carol" + os.urandom(3).hex()
    real = carol.card(name=carol_name)
    # Signed by this client, with carol's key put in: the signature does not hold.
    forged = bytearray(me.card(name="not-carol"))
    forged[1:33] = carol.identity_key
    session.send_records(record(ROOM_OPERATION, create), record(ROOM_OPERATION, join_c),
                         record(ROOM_CARD, room + bytes(forged)), record(ROOM_CARD, room + real))
    collect(session, lambda rs: {create_hash[:16], jc[:16]} <= acked(rs))
    alive(session)  # a forged card is refused, not a protocol error
    # Invited: nothing an invitation carries is kept before the daemon's person accepts.
    assert peer(daemon, carol.identity_key) is None
    daemon_accepts(daemon, session, room)
    wait_until(lambda: peer(daemon, carol.identity_key) is not None, what="the daemon keeps carol's card")
    p = peer(daemon, carol.identity_key)
    assert p["name"] == carol_name and p["trust"] == "pinned", p
    members_shown = next(r for r in daemon.call("rooms.list")["rooms"] if r["id"] == room.hex())["members"]
    assert {"name": carol_name, "verified": False} == {
        k: v for m in members_shown if m["fingerprint"] == p["fingerprint"] for k, v in m.items()
        if k in ("name", "verified")}
    # A card never changes a key the daemon knows: one of this client's own, newer, renamed.
    session.send_records(record(ROOM_CARD, room + me.card(name="renamed", sequence=2)))
    # And a stranger's valid card is not taken (not a member).
    stranger = Identity()
    session.send_records(record(ROOM_CARD, room + stranger.card(name="stranger")))
    alive(session)
    assert peer(daemon, stranger.identity_key) is None
    assert peer(daemon, me.identity_key)["name"].startswith("fwd")


def test_the_daemon_passes_on_its_own_card_after_its_create(daemon):  # noqa: F811
    me = Identity()
    my_name = "mem" + os.urandom(4).hex()
    session = Session.established(daemon.address, me, card=me.card(name=my_name), extra_fields=FEATURES_ROOM_CARDS)
    wait_until(lambda: peer(daemon, me.identity_key) is not None, what="the daemon pins this client")
    name = "own" + os.urandom(3).hex()
    created = daemon.call("rooms.create", {"name": name, "members": [my_name]})["room"]
    got = collect(session, lambda rs: any(t == ROOM_CARD for t, _ in rs))
    types = [t for t, _ in got if t in (ROOM_OPERATION, ROOM_CARD)]
    assert types[:2] == [ROOM_OPERATION, ROOM_CARD], "the actor's card right after its operation"
    payload = next(p for t, p in got if t == ROOM_CARD)
    assert payload[:16].hex() == created["id"], "the room id, not the create's nonce"
    card = payload[16:]
    key = daemon_key(daemon)
    assert card[1:33] == key
    nacl.signing.VerifyKey(key).verify(b"parley-card-v1\x00" + card[:-64], card[-64:])
    n = card[65]
    assert card[66:66 + n].decode() == daemon.call("node.whoami")["name"]


def test_no_room_card_to_a_member_without_bit_4(daemon):  # noqa: F811
    old = Identity()
    old_name = "old" + os.urandom(4).hex()
    session = Session.established(daemon.address, old, card=old.card(name=old_name))
    wait_until(lambda: peer(daemon, old.identity_key) is not None, what="the daemon pins this client")
    daemon.call("rooms.create", {"name": "old" + os.urandom(3).hex(), "members": [old_name]})
    got = collect(session, lambda rs: any(t == ROOM_OPERATION for t, _ in rs))
    # A ping after it: its pong comes after anything sent with the operation.
    session.send_records(record(PING, struct.pack(">Q", 3)))
    got += collect(session, lambda rs: any(t == PONG for t, _ in rs))
    assert not any(t == ROOM_CARD for t, _ in got)
