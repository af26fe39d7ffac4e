"""Encodings docs/PROTOCOL.md specifies beyond what a session needs (fingerprints, safety
numbers, room operations, file records, address gossip, presence tokens), written from the
document alone, and a reader for its `<!-- example:NAME -->` blocks.
"""
import base64
import hashlib
import hmac
import pathlib
import re
import struct

import nacl.signing

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "PROTOCOL.md"


def examples(path=DOC) -> dict:
    """Every example: NAME -> the lines of the first fenced block after its marker."""
    lines = path.read_text().split("\n")
    out = {}
    for i, line in enumerate(lines):
        m = re.fullmatch(r"<!-- example:([A-Za-z0-9-]+) -->", line)
        if not m:
            continue
        assert m.group(1) not in out, f"example {m.group(1)} appears twice"
        start = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        stop = next(j for j in range(start + 1, len(lines)) if lines[j].startswith("```"))
        out[m.group(1)] = lines[start + 1:stop]
    return out


def hex_of(block_lines) -> bytes:
    return bytes.fromhex("".join("".join(block_lines).split()))


def seed(first: int) -> bytes:
    """The 32-byte seeds the examples use: `00 01 ... 1f`, `40 41 ... 5f`, ..."""
    return bytes(range(first, first + 32))


def signing_key(first: int) -> nacl.signing.SigningKey:
    return nacl.signing.SigningKey(seed(first))


# --- "Fingerprint", "Safety number" ---

def fingerprint(identity_key: bytes) -> str:
    digest = hashlib.sha256(b"parley-fingerprint-v1" + identity_key).digest()
    text = base64.b32encode(digest[:20]).decode().lower()
    return "-".join(text[i:i + 4] for i in range(0, 32, 4))


def safety_number(a: bytes, b: bytes) -> str:
    lo, hi = sorted([a, b])
    digest = hashlib.sha512(b"parley-safety-v1" + lo + hi).digest()
    return " ".join(f"{int.from_bytes(digest[5 * i:5 * i + 5], 'big') % 100000:05d}" for i in range(12))


# --- "Room operations" ---

CREATE, ADD, REMOVE, SET_ROLE, RENAME, SET_POLICY, JOIN = 1, 2, 3, 4, 5, 6, 7


def room_operation(key: nacl.signing.SigningKey, kind: int, room: bytes, sequence: int, created_at: int,
                   parents=(), name: bytes = None, flags: int = None, members=(), target: bytes = None,
                   role: int = None, cap: int = None) -> bytes:
    """Version 2: fields in the table's order, then the signature over the 18-byte prefix.
    `cap`: a remove's removal cap (features bit 7), after the target."""
    body = (bytes([2, kind]) + room + struct.pack(">QQ", sequence, created_at) + bytes(key.verify_key)
            + bytes([len(parents)]) + b"".join(sorted(parents)))
    if kind in (CREATE, RENAME):
        body += bytes([len(name)]) + name
    if kind in (CREATE, SET_POLICY):
        body += bytes([flags])
    if kind == CREATE:
        body += struct.pack(">H", len(members)) + b"".join(sorted(members))
    if kind in (ADD, REMOVE, SET_ROLE):
        body += target
    if kind == SET_ROLE:
        body += bytes([role])
    if cap is not None:
        assert kind == REMOVE, "only a remove carries a cap"
        body += struct.pack(">Q", cap)
    return body + key.sign(b"parley-room-op-v2\x00" + body).signature


def room_operation_hash(op: bytes) -> bytes:
    return hashlib.sha256(b"parley-room-op-hash-v2\x00" + op[:-64]).digest()


# --- "Room sync" ---

def room_message(key, room: bytes, room_sequence: int, msg_id: bytes, created_at: int, anchor, body: bytes,
                 reply_to: bytes = b"") -> bytes:
    """A signed room message (record 0x16's payload): version 1, kind 1 (chat) or 2 (reply)."""
    author = bytes(key.verify_key)
    heads = sorted(set(anchor))
    signed = (bytes([1, 2 if reply_to else 1]) + room + author + struct.pack(">Q", room_sequence) + msg_id
              + struct.pack(">Q", created_at) + bytes([len(heads)]) + b"".join(heads) + reply_to + body)
    return signed + key.sign(b"parley-room-msg-v1\x00" + signed).signature


EDIT, DELETE, REACTION = 3, 4, 5


def room_change(key, kind: int, room: bytes, room_sequence: int, change_id: bytes, created_at: int, anchor,
                target: bytes, body: bytes = b"", added: int = None, domain: bytes = b"parley-room-change-v1\x00"
                ) -> bytes:
    """A signed room change (record 0x16's payload): kind 3 edit (body: the new text), 4
    delete (no body), 5 reaction (added byte, then the reaction text)."""
    author = bytes(key.verify_key)
    heads = sorted(set(anchor))
    signed = (bytes([1, kind]) + room + author + struct.pack(">Q", room_sequence) + change_id
              + struct.pack(">Q", created_at) + bytes([len(heads)]) + b"".join(heads) + target
              + (bytes([added]) if kind == REACTION else b"") + body)
    return signed + key.sign(domain + signed).signature


def room_have(room: bytes, holding) -> bytes:
    """A roomHave payload (0x17): holding maps author key -> [(first, last), ...]."""
    out = room + struct.pack(">H", len(holding))
    for author in sorted(holding):
        ranges = holding[author]
        out += author + bytes([len(ranges)]) + b"".join(struct.pack(">QQ", f, l) for f, l in ranges)
    return out


# --- "Files" ---

def blake2b_256(data: bytes) -> bytes:
    """libsodium crypto_generichash, 32-byte output, no key."""
    return hashlib.blake2b(data, digest_size=32).digest()


def chunk_hashes(data: bytes, chunk_size: int):
    return [blake2b_256(data[i:i + chunk_size]) for i in range(0, len(data), chunk_size)]


def list_hash(data: bytes, chunk_size: int) -> bytes:
    return blake2b_256(b"".join(chunk_hashes(data, chunk_size)))


def file_offer(transfer: bytes, data: bytes, chunk_size: int, name: bytes, media_type=b"", caption=b"",
               thumbnail=b"", room=bytes(16)) -> bytes:
    h = list_hash(data, chunk_size)
    return (transfer + struct.pack(">QI", len(data), chunk_size) + h + h + room
            + struct.pack(">H", len(name)) + name + bytes([len(media_type)]) + media_type
            + struct.pack(">H", len(caption)) + caption + struct.pack(">H", len(thumbnail)) + thumbnail)


# --- "Address gossip" ---

ADDRESS_RECORD_SIGNING_PREFIX = b"parley address record v1"   # no NUL: see the document


def address_record(key: nacl.signing.SigningKey, issued_at_ms: int, endpoints, prefix=ADDRESS_RECORD_SIGNING_PREFIX):
    """endpoints: (address bytes (4 or 16), port)."""
    body = bytes([1]) + bytes(key.verify_key) + struct.pack(">Q", issued_at_ms) + bytes([len(endpoints)])
    for address, port in endpoints:
        body += bytes([4 if len(address) == 4 else 6]) + address + struct.pack(">H", port)
    return body + key.sign(prefix + body).signature


def contact_tag(salt: bytes, identity_key: bytes) -> bytes:
    return hashlib.sha256(b"parley contact tag v1" + salt + identity_key).digest()[:16]


def contact_tags(salt: bytes, identity_keys) -> bytes:
    tags = sorted(contact_tag(salt, k) for k in identity_keys)
    return salt + struct.pack(">H", len(tags)) + b"".join(tags)


# --- "Private presence" ---

def presence_token(identity_key: bytes, unix_seconds: int, nonce: bytes, network_key: bytes = b"") -> bytes:
    key = hashlib.sha256(b"parley presence v1" + identity_key + network_key).digest()
    return hmac.new(key, struct.pack(">Q", unix_seconds // 3600) + nonce, hashlib.sha256).digest()[:12]
