"""docs/PROTOCOL.md "Room sync" (features bit 3), from the document alone: this client is
a member that passes on a message signed by another member (the receiver takes it as the
author's, and drops an altered copy without closing the session), and a member that asks
the daemon, by an empty roomHave, for what it lacks (the daemon passes the author's signed
bytes on unchanged)."""
import hashlib
import os
import struct
import time

import protocol_doc as doc
from conftest import wait_until
from parley_wire import ACK, PING, PONG, ROOM_CHAT, ROOM_OPERATION, Identity, Session, parse_ids, record
from test_rooms import CREATE, JOIN, create_body, daemon_key, room_op  # noqa: F401 (fixtures below)
from test_rooms import daemon  # noqa: F401

ROOM_MESSAGE, ROOM_HAVE = 0x16, 0x17
FEATURES_ROOM_SYNC = [(0x10, struct.pack(">I", 1 << 3))]


def op_hash(op: bytes) -> bytes:
    return hashlib.sha256(b"parley-room-op-hash-v2\x00" + op[:-64]).digest()


def collect(session, until, timeout=10.0):
    """Every record until `until(records)` holds; pings answered."""
    got = []
    deadline = time.monotonic() + timeout
    while not until(got):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"gave up; got types {[hex(t) for t, _ in got]}")
        for t, p in session.recv_records(timeout=left):
            if t == PING:
                session.send_records(record(PONG, p))
            got.append((t, p))
    return got


def acked(records):
    return {i for t, p in records if t == ACK for i in parse_ids(p)}


def daemon_accepts(daemon, session, room):
    """The daemon, invited to `room`, accepts; its join comes to this client (a joined
    member), which acknowledges it. Returns the join operation (its hash is an anchor)."""
    wait_until(lambda: any(r["id"] == room.hex() and r["status"] == "invited"
                           for r in daemon.call("rooms.list")["rooms"]), what="the daemon is invited")
    daemon.call("rooms.accept", {"room": room.hex()})
    got = collect(session, lambda rs: any(t == ROOM_OPERATION and p[1] == JOIN for t, p in rs))
    join_d = next(p for t, p in got if t == ROOM_OPERATION and p[1] == JOIN)
    session.send_records(record(ACK, struct.pack(">H", 1) + op_hash(join_d)[:16]))
    return join_d


def test_a_member_passes_on_another_members_message_and_the_daemon_passes_it_on_again(daemon):  # noqa: F811
    me, author, other = Identity(), Identity(), Identity()
    session = Session.established(daemon.address, me, card=me.card(name="fwd" + os.urandom(4).hex()),
                                  extra_fields=FEATURES_ROOM_SYNC)
    name = b"sync" + os.urandom(3).hex().encode()
    members = [me.identity_key, author.identity_key, other.identity_key, daemon_key(daemon)]
    create, create_hash = room_op(me, CREATE, os.urandom(16), 1, body=create_body(name, members))
    room = create_hash[:16]
    # The author and the other member join; this client passes their joins on (any member may).
    join_a, ja = room_op(author, JOIN, room, 2, parents=[create_hash])
    join_o, jo = room_op(other, JOIN, room, 2, parents=[create_hash])
    session.send_records(record(ROOM_OPERATION, create), record(ROOM_OPERATION, join_a),
                         record(ROOM_OPERATION, join_o))
    collect(session, lambda rs: {create_hash[:16], ja[:16], jo[:16]} <= acked(rs))
    join_d = daemon_accepts(daemon, session, room)

    msg_id = os.urandom(16)
    msg = doc.room_message(author.signing, room, 1, msg_id, int(time.time() * 1000), [op_hash(join_d)],
                           b"written by the author, handed over by another member")
    altered = bytearray(msg)
    altered[-70] ^= 0x01  # a body byte: the author's signature no longer holds
    altered[58:74] = os.urandom(16)  # and another id, to tell the acks apart
    session.send_records(record(ROOM_MESSAGE, bytes(altered)), record(ROOM_MESSAGE, msg))
    got = collect(session, lambda rs: msg_id in acked(rs))
    assert bytes(altered[58:74]) not in acked(got), "an altered message is never acknowledged"

    shown = [m for m in daemon.messages("#" + name.decode()) if m["direction"] == "in"]
    assert [m["body"] for m in shown] == ["written by the author, handed over by another member"]
    assert shown[0]["from"] == doc.fingerprint(author.identity_key), "the author's, not the forwarder's"
    assert shown[0]["sequence"] == 1

    # The other member comes online and says it holds nothing: the daemon passes the
    # author's message on, byte for byte as the author signed it.
    second = Session.established(daemon.address, other, card=other.card(name="oth" + os.urandom(4).hex()),
                                 extra_fields=FEATURES_ROOM_SYNC)
    second.send_records(record(ROOM_HAVE, room + struct.pack(">H", 0)))
    got = collect(second, lambda rs: any(t == ROOM_MESSAGE for t, _ in rs), timeout=15)
    assert [p for t, p in got if t == ROOM_MESSAGE] == [msg]


def test_signed_edits_only_the_authors_and_a_forged_one_refused_without_closing(daemon):  # noqa: F811
    """Edits in rooms are signed by their author ("Room sync", kinds 3 ... 5): this client
    hands the daemon the author's message, then three edits of it: one in the author's
    name that the author did not sign (forged: dropped, not acknowledged, the session goes
    on), one signed under the message domain instead of the change domain (the same), one
    this client (a member, not the author) signs itself (acknowledged, refused: only the
    author edits), and the author's own (applied)."""
    me, author = Identity(), Identity()
    session = Session.established(daemon.address, me, card=me.card(name="fwd" + os.urandom(4).hex()),
                                  extra_fields=FEATURES_ROOM_SYNC)
    name = b"edit" + os.urandom(3).hex().encode()
    members = [me.identity_key, author.identity_key, daemon_key(daemon)]
    create, create_hash = room_op(me, CREATE, os.urandom(16), 1, body=create_body(name, members))
    room = create_hash[:16]
    join_a, ja = room_op(author, JOIN, room, 2, parents=[create_hash])
    session.send_records(record(ROOM_OPERATION, create), record(ROOM_OPERATION, join_a))
    collect(session, lambda rs: {create_hash[:16], ja[:16]} <= acked(rs))
    join_d = daemon_accepts(daemon, session, room)
    anchor = [op_hash(join_d)]
    now = int(time.time() * 1000)
    msg_id = os.urandom(16)
    msg = doc.room_message(author.signing, room, 1, msg_id, now, anchor, b"meet at 3")
    session.send_records(record(ROOM_MESSAGE, msg))
    collect(session, lambda rs: msg_id in acked(rs))

    forged_id, undomained_id, mine_id, real_id = (os.urandom(16) for _ in range(4))
    # In the author's name, signed by this client.
    forged = bytearray(doc.room_change(me.signing, doc.EDIT, room, 2, forged_id, now, anchor, msg_id, b"forged"))
    forged[18:50] = author.identity_key
    undomained = doc.room_change(author.signing, doc.EDIT, room, 2, undomained_id, now, anchor, msg_id,
                                 b"message domain", domain=b"parley-room-msg-v1\x00")
    mine = doc.room_change(me.signing, doc.EDIT, room, 1, mine_id, now, anchor, msg_id, b"not my message")
    real = doc.room_change(author.signing, doc.EDIT, room, 2, real_id, now, anchor, msg_id, b"meet at 4")
    session.send_records(record(ROOM_MESSAGE, bytes(forged)), record(ROOM_MESSAGE, undomained),
                         record(ROOM_MESSAGE, mine), record(ROOM_MESSAGE, real))
    got = collect(session, lambda rs: {mine_id, real_id} <= acked(rs))
    assert forged_id not in acked(got) and undomained_id not in acked(got), "bad signatures are not acknowledged"
    shown = [m for m in daemon.messages("#" + name.decode()) if m["direction"] == "in"]
    assert [m["body"] for m in shown] == ["meet at 4"], shown
    assert shown[0]["editedAt"] is not None and shown[0]["from"] == doc.fingerprint(author.identity_key)
    # The session survived all of it.
    session.send_records(record(PING, struct.pack(">Q", 7)))
    collect(session, lambda rs: any(t == PONG for t, _ in rs))


def test_a_member_without_bit_3_gets_the_old_room_chat(daemon):  # noqa: F811
    """Older nodes keep working: to a member that did not announce bit 3 the daemon sends
    its own room message as `roomChat` (0x11), never a `roomMessage` it would skip."""
    old = Identity()
    session = Session.established(daemon.address, old, card=old.card(name="old" + os.urandom(4).hex()))
    name = b"old" + os.urandom(3).hex().encode()
    create, create_hash = room_op(old, CREATE, os.urandom(16), 1,
                                  body=create_body(name, [old.identity_key, daemon_key(daemon)]))
    room = create_hash[:16]
    session.send_records(record(ROOM_OPERATION, create))
    collect(session, lambda rs: create_hash[:16] in acked(rs))
    join_d = daemon_accepts(daemon, session, room)
    wait_until(lambda: any(r["id"] == room.hex() and r["status"] == "joined"
                           for r in daemon.call("rooms.list")["rooms"]), what="the daemon joined")
    daemon.call("messages.send", {"to": "#" + name.decode(), "body": "to an old member"})
    got = collect(session, lambda rs: any(t == ROOM_CHAT for t, _ in rs))
    chat = next(p for t, p in got if t == ROOM_CHAT)
    assert chat[16:32] == room and chat[48:] == b"to an old member"
    assert not any(t in (ROOM_MESSAGE, ROOM_HAVE) for t, _ in got), "nothing of room sync to a node without bit 3"


def test_a_removed_members_back_dated_message_above_the_removal_cap_is_refused(daemon):  # noqa: F811
    """docs/PROTOCOL.md "Removal caps" (features bit 7): this client, the room's owner,
    removes eve with a cap of 1 (it had accepted her message 1). Eve then signs message 2
    anchored before her removal, and this client, as a member that had not yet received the
    removal would, passes on her 1 (late) and her 2: the daemon takes 1 and refuses 2
    (acknowledged, final, not shown)."""
    me, eve = Identity(), Identity()
    session = Session.established(daemon.address, me, card=me.card(name="own" + os.urandom(4).hex()),
                                  extra_fields=[(0x10, struct.pack(">I", (1 << 3) | (1 << 7)))])
    name = b"cap" + os.urandom(3).hex().encode()
    create, create_hash = room_op(me, CREATE, os.urandom(16), 1,
                                  body=create_body(name, [me.identity_key, eve.identity_key, daemon_key(daemon)]))
    room = create_hash[:16]
    join_e, je = room_op(eve, JOIN, room, 2, parents=[create_hash])
    session.send_records(record(ROOM_OPERATION, create), record(ROOM_OPERATION, join_e))
    collect(session, lambda rs: {create_hash[:16], je[:16]} <= acked(rs))
    join_d = daemon_accepts(daemon, session, room)
    before = [op_hash(join_d)]  # the heads before the removal (the daemon's join follows eve's)
    now = int(time.time() * 1000)
    one = doc.room_message(eve.signing, room, 1, os.urandom(16), now, before, b"eve, before her removal")
    back_dated = doc.room_message(eve.signing, room, 2, os.urandom(16), now, before, b"eve, after her removal")

    sequence = struct.unpack(">Q", join_d[18:26])[0] + 1
    removal = doc.room_operation(me.signing, doc.REMOVE, room, sequence, now, parents=before,
                                 target=eve.identity_key, cap=1)
    session.send_records(record(ROOM_OPERATION, removal))
    collect(session, lambda rs: op_hash(removal)[:16] in acked(rs))
    wait_until(lambda: [len(r["members"]) for r in daemon.call("rooms.list")["rooms"] if r["id"] == room.hex()]
               == [2], what="eve removed")

    session.send_records(record(ROOM_MESSAGE, one), record(ROOM_MESSAGE, back_dated))
    collect(session, lambda rs: {one[58:74], back_dated[58:74]} <= acked(rs))
    shown = [m["body"] for m in daemon.messages("#" + name.decode()) if m["direction"] == "in"]
    assert shown == ["eve, before her removal"], "at or below the cap stands; above it is refused"
