"""docs/PROTOCOL.md "Application records": a malformed record of a known type, or one over
the size limit, gets close(protocolError) and then the TCP connection closes (item 1);
unknown types are skipped; nothing after a close is read; a message that fails to decrypt
is answered with nothing."""
import os
import struct

import pytest

from parley_wire import (LISTEN_PORTS, ACK, CARD_UPDATE, CHAT, CLOSE, NORMAL, PING, PONG, PROTOCOL_ERROR, READ_RECEIPT,
                         ROOM_CHAT, ROOM_OPERATION, Identity, Session, chat, close, id_list, parse_close,
                         parse_ids, record)

ID = bytes(range(16))
EXPERIMENT = 0xF0   # reserved for tests and experiments: never assigned


def oversize_header():
    # 5-byte header + 131,068 bytes = 131,073 > 131,072: refused on the header alone.
    return bytes([EXPERIMENT]) + struct.pack(">I", 131_068)


MALFORMED = {
    "ack, id cut short": record(ACK, struct.pack(">H", 1) + ID[:15]),
    "ack, extra byte": record(ACK, struct.pack(">H", 1) + ID + b"\x00"),
    "ack, 1001 ids": record(ACK, struct.pack(">H", 1001) + ID * 1001),
    "ack, no count": record(ACK, b"\x00"),
    "ping of 7 bytes": record(PING, b"\x00" * 7),
    "ping of 9 bytes": record(PING, b"\x00" * 9),
    "pong of 7 bytes": record(PONG, b"\x00" * 7),
    "chat of 31 bytes": record(CHAT, b"\x00" * 31),
    "chat, body not UTF-8": chat(b"\xff\xfe"),
    "chat, body of 65,537 bytes": chat(b"a" * 65_537),
    "empty close": record(CLOSE, b""),
    "readReceipt, id cut short": record(READ_RECEIPT, struct.pack(">H", 2) + ID + ID[:3]),
    "readReceipt, 1001 ids": record(READ_RECEIPT, struct.pack(">H", 1001) + ID * 1001),
    "roomOperation, garbage": record(ROOM_OPERATION, b"\x01\x01" + b"\x00" * 40),
    "roomChat of 47 bytes": record(ROOM_CHAT, b"\x00" * 47),
    "roomChat, body not UTF-8": record(ROOM_CHAT, b"\x00" * 48 + b"\xc0\x80"),
    "cardUpdate, not a card": record(CARD_UPDATE, b"\x01" + b"\x00" * 40),
    "record over 131,072 bytes (unknown type)": oversize_header(),
    "record over 131,072 bytes (chat)": bytes([CHAT]) + struct.pack(">I", 131_068),
}


@pytest.fixture
def daemon(module_daemon):
    return module_daemon


@pytest.fixture
def session(daemon):
    me = Identity()
    return Session.established(daemon.address, me, card=me.card(name="py" + os.urandom(6).hex()))


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_record_gets_close_protocol_error_then_tcp_close(daemon, session, name):
    session.send_records(MALFORMED[name])
    records, _ = session.read_until_closed(timeout=5)
    closes = [parse_close(p) for t, p in records if t == CLOSE]
    assert closes, f"no close record before TCP closed; got {records!r}"
    assert closes[0][0] == PROTOCOL_ERROR, closes
    assert records[-1][0] == CLOSE, "nothing may follow the close record"


def test_decryption_failure_is_answered_with_nothing(daemon, session):
    session.send_frame(os.urandom(40))
    records, _ = session.read_until_closed(timeout=5)
    # The daemon's own listenPorts announcement may be in flight already; nothing else.
    assert [r for r in records if r[0] != LISTEN_PORTS] == []


def test_unknown_record_type_is_skipped(daemon, session):
    msg_id = os.urandom(16)
    # 0x7e: not assigned yet; EXPERIMENT: never assigned ("Record types", 0xF0 ... 0xFF);
    # 0x09 (reply) from a peer that did not announce the conversation feature.
    session.send_records(record(0x7e, b"future" * 100), record(EXPERIMENT, b"experiment"), record(0x09, b""),
                         chat(b"still here", msg_id=msg_id))
    assert parse_ids(session.wait_for(ACK)) == [msg_id]


def test_records_after_close_are_ignored(daemon, session):
    body = "after the close " + os.urandom(4).hex()
    session.send_records(close(NORMAL, b"bye"), chat(body.encode()))
    records, _ = session.read_until_closed(timeout=5)
    assert [t for t, _ in records if t == CLOSE] == [], "a close must not be answered with a close"
    assert [m for m in daemon.messages() if m["body"] == body] == []


def test_ping_is_answered_with_the_same_value(daemon, session):
    session.send_records(record(PING, struct.pack(">Q", 0x0102030405060708)))
    assert session.wait_for(PONG) == struct.pack(">Q", 0x0102030405060708)


def test_largest_body_is_accepted(daemon, session):
    msg_id = os.urandom(16)
    session.send_records(chat("é".encode() * 32_768, msg_id=msg_id))
    assert parse_ids(session.wait_for(ACK)) == [msg_id]


def test_zero_length_frame_after_the_handshake_is_answered_with_nothing(daemon, session):
    session.sock.sendall(b"\x00\x00")
    records, _ = session.read_until_closed(timeout=5)
    assert [r for r in records if r[0] != LISTEN_PORTS] == []


def test_the_daemon_announces_the_port_it_listens_on(daemon, session):
    payload = session.wait_for(LISTEN_PORTS)
    count = payload[0]
    ports = list(struct.unpack(f">{count}H", payload[1:]))
    assert 1 <= count <= 8 and len(payload) == 1 + 2 * count
    assert daemon.port in ports
