"""docs/PROTOCOL.md "Room operations" and graph rule 2 (issue 33, item 5): what a decoder
rejects (a malformed record: close(protocolError)) and what only the graph can reject (a
sequence that is not one more than its parents' highest: acknowledged, then excluded for
good). Room operations are built here from the document alone."""
import hashlib
import os
import struct
import time

import pytest

from conftest import wait_until
from parley_wire import ACK, CLOSE, PROTOCOL_ERROR, ROOM_OPERATION, Identity, Session, parse_close, parse_ids, record

CREATE, ADD, JOIN = 1, 2, 7


def room_op(identity, kind, room, sequence, parents=(), body=b""):
    """A signed room operation (version 2) and its hash."""
    parents = sorted(parents)
    signed = (bytes([2, kind]) + room + struct.pack(">QQ", sequence, int(time.time() * 1000))
              + identity.identity_key + bytes([len(parents)]) + b"".join(parents) + body)
    signature = identity.signing.sign(b"parley-room-op-v2\x00" + signed).signature
    return signed + signature, hashlib.sha256(b"parley-room-op-hash-v2\x00" + signed).digest()


def create_body(name: bytes, members, flags=0):
    members = sorted(set(members))
    return bytes([len(name)]) + name + bytes([flags]) + struct.pack(">H", len(members)) + b"".join(members)


@pytest.fixture
def daemon(module_daemon):
    return module_daemon


@pytest.fixture
def me():
    return Identity()


@pytest.fixture
def session(daemon, me):
    return Session.established(daemon.address, me, card=me.card(name="py" + os.urandom(6).hex()))


def daemon_key(daemon):
    return bytes.fromhex(daemon.call("node.whoami")["identityKey"])


def a_create(me, daemon, sequence=1):
    name = b"conf" + os.urandom(3).hex().encode()
    return room_op(me, CREATE, os.urandom(16), sequence, body=create_body(name, [me.identity_key, daemon_key(daemon)]))


@pytest.mark.parametrize("case", ["create with sequence 2", "add with sequence 1"])
def test_a_sequence_the_decoder_can_check_is_a_protocol_error(daemon, me, session, case):
    if case == "create with sequence 2":
        op, _ = a_create(me, daemon, sequence=2)
    else:
        op, _ = room_op(me, ADD, os.urandom(16), 1, parents=[os.urandom(32)], body=os.urandom(32))
    session.send_records(record(ROOM_OPERATION, op))
    records, _ = session.read_until_closed(timeout=5)
    closes = [parse_close(p) for t, p in records if t == CLOSE]
    assert closes and closes[0][0] == PROTOCOL_ERROR, records


def test_a_sequence_that_breaks_graph_rule_2_is_acknowledged_and_excluded_for_good(daemon, me, session):
    create, create_hash = a_create(me, daemon)
    room_id = create_hash[:16]
    session.send_records(record(ROOM_OPERATION, create))
    assert create_hash[:16] in parse_ids(session.wait_for(ACK))

    def info():
        return next((r for r in daemon.call("rooms.list")["rooms"] if r["id"] == room_id.hex()), None)

    wait_until(lambda: info() is not None, what="the invitation is stored")
    assert len(info()["members"]) == 2

    # An add after the create must have sequence 2; this one says 5. It decodes, so it is
    # acknowledged (a resend would change nothing), and the graph excludes it.
    wrong, wrong_hash = room_op(me, ADD, room_id, 5, parents=[create_hash], body=os.urandom(32))
    session.send_records(record(ROOM_OPERATION, wrong))
    assert wrong_hash[:16] in parse_ids(session.wait_for(ACK))
    right, right_hash = room_op(me, ADD, room_id, 2, parents=[create_hash], body=os.urandom(32))
    session.send_records(record(ROOM_OPERATION, right))
    assert right_hash[:16] in parse_ids(session.wait_for(ACK))
    wait_until(lambda: len(info()["members"]) == 3, what="the rightly sequenced add applies")
    assert info()["version"] == 2, "the wrongly sequenced add (sequence 5) was not applied"

    # Not stored either: a child of it (sequence 6, right for that parent) finds no parent
    # held, so it waits (acknowledged too) and never applies.
    child, child_hash = room_op(me, ADD, room_id, 6, parents=[wrong_hash], body=os.urandom(32))
    session.send_records(record(ROOM_OPERATION, child))
    assert child_hash[:16] in parse_ids(session.wait_for(ACK))
    assert len(info()["members"]) == 3 and info()["version"] == 2
    assert "badSequence" in daemon.log()
