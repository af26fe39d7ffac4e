"""Parley's wire protocol (docs/PROTOCOL.md, version 1), written from the document alone:
cards, the handshake payload, frames, the record stream, and a peer session over TCP.
"""
import os
import socket
import struct
import time

import nacl.signing

from noise import DecryptError, HandshakeState, x25519_public

PROLOGUE = b"parley/1 Noise_XX_25519_ChaChaPoly_SHA256"
XX = "Noise_XX_25519_ChaChaPoly_SHA256"
XXPSK0 = "Noise_XXpsk0_25519_ChaChaPoly_SHA256"
MAX_CHUNK = 65535 - 16
REKEY_EVERY = 65536

# Record types ("Record types").
CHAT, ACK, CARD_UPDATE, PING, PONG, CLOSE, READ_RECEIPT = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x08
# Sent by the daemon once, unasked, after the session is kept (PROTOCOL.md, listenPorts).
LISTEN_PORTS = 0x20
ROOM_OPERATION, ROOM_CHAT = 0x10, 0x11
# Close reasons.
NORMAL, DUPLICATE, PROTOCOL_ERROR, KEY_CHANGE_PENDING, NOT_TRUSTED = 0, 1, 2, 3, 4


class PeerClosed(Exception):
    """The daemon closed the TCP connection."""


# --- identity and cards ("Cards") ---

class Identity:
    """A node: an Ed25519 identity key and an X25519 Noise static key."""

    def __init__(self, seed: bytes = None, noise_private: bytes = None):
        self.signing = nacl.signing.SigningKey(seed or os.urandom(32))
        self.identity_key = bytes(self.signing.verify_key)
        self.noise_private = noise_private or os.urandom(32)
        self.noise_public = x25519_public(self.noise_private)

    def card(self, name="conformance", host="", issued_at=None, sequence=1, expires_at=0,
             noise_key=None, identity_key=None) -> bytes:
        name_b, host_b = name.encode(), host.encode()
        issued_at = int(time.time()) if issued_at is None else issued_at
        body = (bytes([1]) + (identity_key or self.identity_key) + (noise_key or self.noise_public)
                + bytes([len(name_b)]) + name_b + bytes([len(host_b)]) + host_b
                + struct.pack(">QQQ", issued_at, sequence, expires_at))
        signature = self.signing.sign(b"parley-card-v1\x00" + body).signature
        return body + signature


def handshake_payload(card: bytes, boot_id: bytes, extra_fields=()) -> bytes:
    """Fields `type u8 || length u16be || value`: card (0x01), boot id (0x02), then any extras."""
    out = b""
    for t, v in [(0x01, card), (0x02, boot_id), *extra_fields]:
        out += bytes([t]) + struct.pack(">H", len(v)) + v
    return out


def parse_handshake_payload(payload: bytes) -> dict:
    fields, i = {}, 0
    while i < len(payload):
        t, n = payload[i], struct.unpack(">H", payload[i + 1:i + 3])[0]
        fields.setdefault(t, payload[i + 3:i + 3 + n])
        i += 3 + n
    return fields


def parse_card(card: bytes) -> dict:
    i = 65
    name_len = card[i]
    name = card[i + 1:i + 1 + name_len].decode()
    i += 1 + name_len
    host_len = card[i]
    i += 1 + host_len
    issued, seq, expires = struct.unpack(">QQQ", card[i:i + 24])
    return {"identityKey": card[1:33], "noiseKey": card[33:65], "name": name,
            "issuedAt": issued, "sequence": seq, "expiresAt": expires}


# --- records ("Record stream", "Record types") ---

def record(rtype: int, payload: bytes) -> bytes:
    return bytes([rtype]) + struct.pack(">I", len(payload)) + payload


def chat(body: bytes, sequence=1, msg_id=None, created_at=None) -> bytes:
    msg_id = msg_id or os.urandom(16)
    created_at = int(time.time() * 1000) if created_at is None else created_at
    return record(CHAT, msg_id + struct.pack(">QQ", sequence, created_at) + body)


def id_list(rtype: int, ids) -> bytes:
    return record(rtype, struct.pack(">H", len(ids)) + b"".join(ids))


def close(reason=NORMAL, text=b"") -> bytes:
    return record(CLOSE, bytes([reason]) + text)


class Records:
    """Splits the decrypted chunk stream into (type, payload) records."""

    def __init__(self):
        self.buffer = b""

    def feed(self, chunk: bytes):
        self.buffer += chunk
        out = []
        while len(self.buffer) >= 5:
            n = struct.unpack(">I", self.buffer[1:5])[0]
            if len(self.buffer) < 5 + n:
                break
            out.append((self.buffer[0], self.buffer[5:5 + n]))
            self.buffer = self.buffer[5 + n:]
        return out


# --- a session over TCP ---

class Session:
    """One TCP connection to a parleyd, either side of the handshake."""

    def __init__(self, sock: socket.socket, identity: Identity, initiator: bool, psk: bytes = None,
                 card: bytes = None, boot_id: bytes = None, extra_fields=()):
        self.sock = sock
        self.identity = identity
        self.initiator = initiator
        self.hs = HandshakeState(XXPSK0 if psk else XX, initiator, PROLOGUE, identity.noise_private, psk=psk)
        self.card = card or identity.card()
        self.boot_id = boot_id or os.urandom(16)
        self.extra_fields = extra_fields
        self.peer_card = None
        self.send_cs = self.recv_cs = None
        self.sent = self.received = 0
        self.records = Records()
        self.inbox = []
        self.rxbuf = b""

    @classmethod
    def dial(cls, address, identity, timeout=5.0, **kw):
        sock = socket.create_connection(address, timeout=timeout)
        return cls(sock, identity, True, **kw)

    @classmethod
    def established(cls, address, identity, attempts=10, **kw):
        """Dial and handshake; retried a few times, because a daemon refuses new connections
        from one address beyond a rate ("Limits": 5 per second, bursts of 20), and a suite
        opens many."""
        for attempt in range(attempts):
            s = cls.dial(address, identity, **kw)
            try:
                s.handshake()
                return s
            except PeerClosed:
                s.close_socket()
                if attempt == attempts - 1:
                    raise
                time.sleep(0.3)  # the daemon's per-address rate is in real time: back off (bounded by attempts)

    # frames ("Framing")
    def send_frame(self, payload: bytes):
        assert 1 <= len(payload) <= 65535
        self.sock.sendall(struct.pack(">H", len(payload)) + payload)

    def _read_exactly(self, n: int) -> bytes:
        while len(self.rxbuf) < n:
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                raise PeerClosed("the daemon closed the connection")
            self.rxbuf += data
        out, self.rxbuf = self.rxbuf[:n], self.rxbuf[n:]
        return out

    def recv_frame(self) -> bytes:
        n = struct.unpack(">H", self._read_exactly(2))[0]
        return self._read_exactly(n)

    # the handshake ("Handshake")
    def payload(self):
        return handshake_payload(self.card, self.boot_id, self.extra_fields)

    def handshake(self):
        """Runs all three messages; returns the peer's parsed card."""
        if self.initiator:
            self.send_frame(self.hs.write_message(b""))
            self._take_peer_payload(self.hs.read_message(self.recv_frame()))
            self.send_frame(self.hs.write_message(self.payload()))
        else:
            self.hs.read_message(self.recv_frame())
            self.send_frame(self.hs.write_message(self.payload()))
            self._take_peer_payload(self.hs.read_message(self.recv_frame()))
        self.send_cs, self.recv_cs = self.hs.split()
        return parse_card(self.peer_card)

    def _take_peer_payload(self, payload):
        fields = parse_handshake_payload(payload)
        self.peer_card = fields[0x01]
        assert len(fields[0x02]) == 16
        assert parse_card(self.peer_card)["noiseKey"] == self.hs.rs, "card does not name the proven key"

    # transport ("Transport messages": rekey every 65,536 messages per direction)
    def send_records(self, *records: bytes):
        stream = b"".join(records)
        for i in range(0, len(stream), MAX_CHUNK):
            self.send_chunk(stream[i:i + MAX_CHUNK])

    def send_chunk(self, chunk: bytes):
        self.send_frame(self.send_cs.encrypt_with_ad(b"", chunk))
        self.sent += 1
        if self.sent % REKEY_EVERY == 0:
            self.send_cs.rekey()

    def recv_records(self, timeout=5.0):
        """Waits for at least one record; returns every record decoded so far."""
        self.sock.settimeout(timeout)
        while not self.inbox:
            chunk = self.recv_cs.decrypt_with_ad(b"", self.recv_frame())
            self.received += 1
            if self.received % REKEY_EVERY == 0:
                self.recv_cs.rekey()
            self.inbox.extend(self.records.feed(chunk))
        out, self.inbox = self.inbox, []
        return out

    def wait_for(self, rtype, timeout=5.0, answer_pings=True):
        """The first record of `rtype`; pings are answered, other records kept in `seen`."""
        deadline = time.monotonic() + timeout
        self.seen = getattr(self, "seen", [])
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no record of type {rtype:#x}")
            for t, p in self.recv_records(timeout=left):
                if t == PING and answer_pings and rtype != PING:
                    self.send_records(record(PONG, p))
                if t == rtype:
                    return p
                self.seen.append((t, p))

    def read_until_closed(self, timeout=5.0):
        """Every record until the daemon closes TCP; (records, seconds it took)."""
        start = time.monotonic()
        got = []
        try:
            while True:
                left = timeout - (time.monotonic() - start)
                if left <= 0:
                    raise TimeoutError("the daemon did not close the connection")
                got.extend(self.recv_records(timeout=left))
        except PeerClosed:
            return got, time.monotonic() - start

    def close_socket(self):
        try:
            self.sock.close()
        except OSError:
            pass


def parse_close(payload: bytes):
    return payload[0], payload[1:].decode("utf-8", "replace")


def parse_ids(payload: bytes):
    n = struct.unpack(">H", payload[:2])[0]
    return [payload[2 + 16 * i:18 + 16 * i] for i in range(n)]
