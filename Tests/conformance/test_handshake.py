"""docs/PROTOCOL.md "Handshake": XX both ways, XXpsk0 with the network key, one chat each
way with its ack, and what a node on one side of a network key does and reveals."""
import os
import re
import socket
import struct
import time

import pytest

from conftest import wait_until, write_network_key
from noise import DecryptError, HandshakeState
from parley_wire import (ACK, CHAT, CLOSE, PROLOGUE, XX, XXPSK0, Identity, PeerClosed, Session, chat,
                         id_list, parse_card, parse_close, parse_ids)


def one_message_each_way(d, s: Session, name: str):
    # Client -> daemon: the ack comes once the message is stored, without waiting for more
    # ("Delivery": acks are batched per read, never delayed by a timer).
    msg_id = os.urandom(16)
    sent_at = time.monotonic()
    s.send_records(chat("hello from python".encode(), sequence=1, msg_id=msg_id))
    acked = parse_ids(s.wait_for(ACK, timeout=5))
    assert acked == [msg_id]
    assert time.monotonic() - sent_at < 2.0, "ack delayed"
    got = wait_until(lambda: [m for m in d.messages() if m["direction"] == "in"], what="stored message")
    assert got[0]["body"] == "hello from python"
    # CONTROL.md: message ids are 32 lower-case hex digits, the 16 bytes of the wire id.
    assert got[0]["id"] == msg_id.hex()
    # Daemon -> client: a chat record, which the client acknowledges.
    sent = d.call("messages.send", {"to": name, "body": "hello from parleyd"})["message"]
    assert re.fullmatch(r"[0-9a-f]{32}", sent["id"])
    payload = s.wait_for(CHAT, timeout=5)
    rid, seq, created = payload[:16], *struct.unpack(">QQ", payload[16:32])
    assert payload[32:].decode() == "hello from parleyd"
    assert rid.hex() == sent["id"] and seq == sent["sequence"]
    s.send_records(id_list(ACK, [rid]))
    wait_until(lambda: [m for m in d.messages() if m["id"] == sent["id"] and m["state"] == "delivered"],
               what="delivered")


def test_xx_client_initiates(daemon):
    me = Identity()
    s = Session.dial(daemon.address, me, card=me.card(name="pyclient"))
    assert len(s.hs.messages) == 3
    peer = s.handshake()
    assert peer["name"] == "daemon"
    whoami = daemon.call("node.whoami")
    assert peer["identityKey"].hex() == whoami["identityKey"]
    assert peer["noiseKey"].hex() == whoami["noiseKey"]
    one_message_each_way(daemon, s, "pyclient")


def test_xx_daemon_initiates(daemons):
    """The daemon dials a static peer: this client is the responder."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)
    d = daemons(args=["--peer", f"127.0.0.1:{listener.getsockname()[1]}"])
    conn, _ = listener.accept()
    me = Identity()
    s = Session(conn, me, initiator=False, card=me.card(name="pyresponder"))
    peer = s.handshake()
    assert peer["identityKey"].hex() == d.call("node.whoami")["identityKey"]
    one_message_each_way(d, s, "pyresponder")
    listener.close()


def test_xxpsk0_with_the_network_key(daemons, workdir):
    key = os.urandom(32)
    d = daemons(args=["--network-key", write_network_key(workdir / "office.key", key)])
    me = Identity()
    s = Session.dial(d.address, me, psk=key, card=me.card(name="pykeyed"))
    first = s.hs.write_message(b"")
    assert len(first) == 48, "XXpsk0 message 1: e plus the tag of the empty payload"
    s.send_frame(first)
    s._take_peer_payload(s.hs.read_message(s.recv_frame()))
    s.send_frame(s.hs.write_message(s.payload()))
    s.send_cs, s.recv_cs = s.hs.split()
    one_message_each_way(d, s, "pykeyed")


def test_keyed_responder_sends_nothing_to_a_keyless_initiator(daemons, workdir):
    d = daemons(args=["--network-key", write_network_key(workdir / "office.key", os.urandom(32))])
    s = Session.dial(d.address, Identity())
    s.send_frame(s.hs.write_message(b""))  # 32 bytes, plain XX
    with pytest.raises(PeerClosed):
        s.recv_frame()
    assert s.rxbuf == b"", "the keyed responder sent bytes to a node without the key"
    assert d.peers() == []


def test_keyless_responder_answers_a_keyed_initiator_and_reveals_only_its_own_card(daemon):
    """Item 5: a keyless responder reads a 48-byte message 1 as XX (e, then a payload it
    ignores) and answers with message 2. The keyed initiator cannot read it (its hash mixed
    the psk) and closes; what was exposed is the responder's own card, which any keyless
    XX initiator gets anyway. The initiator revealed only an ephemeral key."""
    me = Identity()
    s = Session.dial(daemon.address, me, psk=os.urandom(32))
    first = s.hs.write_message(b"")
    assert len(first) == 48
    s.send_frame(first)
    second = s.recv_frame()
    with pytest.raises(DecryptError):
        s.hs.read_message(second)
    # Read as plain XX with the same ephemeral key, message 2 opens: the responder's card.
    plain = HandshakeState(XX, True, PROLOGUE, me.noise_private, e=s.hs.e)
    plain.write_message(first[32:])  # XX message 1 = e || payload (here: the 16 bytes of tag)
    payload = plain.read_message(second)
    card = parse_card(payload[3:3 + struct.unpack(">H", payload[1:3])[0]])
    assert card["identityKey"].hex() == daemon.call("node.whoami")["identityKey"]
    s.close_socket()
    # Message 2 shows the daemon had read all the keyed initiator ever sent. Barrier: a plain
    # XX peer completes a handshake after it, and once the daemon lists that one, anything it
    # had recorded of the first would be listed too.
    other = Identity()
    barrier = Session.established(daemon.address, other, card=other.card(name="barrier"))
    wait_until(lambda: daemon.peers(), what="the daemon records the barrier peer")
    barrier.close_socket()
    assert [p["identityKey"] for p in daemon.peers()] == [other.identity_key.hex()], \
        "the daemon learnt something about the keyed initiator"


def test_different_network_keys_never_complete(daemons, workdir):
    d = daemons(args=["--network-key", write_network_key(workdir / "office.key", os.urandom(32))])
    s = Session.dial(d.address, Identity(), psk=os.urandom(32))
    s.send_frame(s.hs.write_message(b""))
    with pytest.raises(PeerClosed):
        s.recv_frame()
    assert s.rxbuf == b""


def test_repeated_unknown_payload_field_is_skipped(daemon):
    """Item 8: "each field at most once" is about the card and the boot id; fields of
    unknown types are skipped however often they appear."""
    me = Identity()
    s = Session.dial(daemon.address, me, card=me.card(name="pyfields"),
                     extra_fields=[(0x7f, b"a"), (0x7f, b"bb"), (0x03, b"")])
    s.handshake()
    s.send_records(chat(b"after unknown fields"))
    s.wait_for(ACK)


@pytest.mark.parametrize("what", ["card twice", "boot id twice", "no boot id", "boot id of 15 bytes"])
def test_malformed_payload_fails_the_handshake_without_a_byte(daemon, what):
    me = Identity()
    card, boot = me.card(name="pybad"), os.urandom(16)
    fields = {"card twice": [(0x01, card), (0x01, card), (0x02, boot)],
              "boot id twice": [(0x01, card), (0x02, boot), (0x02, boot)],
              "no boot id": [(0x01, card)],
              "boot id of 15 bytes": [(0x01, card), (0x02, boot[:15])]}[what]
    s = Session.dial(daemon.address, me)
    s.send_frame(s.hs.write_message(b""))
    s.hs.read_message(s.recv_frame())
    payload = b"".join(bytes([t]) + struct.pack(">H", len(v)) + v for t, v in fields)
    s.send_frame(s.hs.write_message(payload))
    s.sock.settimeout(5)
    with pytest.raises(PeerClosed):
        s.recv_frame()
    assert s.rxbuf == b"", "a failed handshake must not be answered"
    assert daemon.peers() == []
