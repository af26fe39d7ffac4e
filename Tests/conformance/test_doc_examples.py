"""Every `<!-- example:NAME -->` block of docs/PROTOCOL.md, derived again from the inputs
its text states, by this client's own encoders (issue 33 item 7). A block without a
derivation here fails `test_every_example_is_derived`, so a new example cannot go
unchecked; a derivation whose block is gone fails too.

Run as a script (`python3 Tests/conformance/test_doc_examples.py NAME...`) to print the
derived blocks, one field per line, for pasting into the document.
"""
import struct
import sys

import pytest

import protocol_doc as doc
from noise import x25519_public
from parley_wire import Identity, handshake_payload, record

ALICE, BOB, CAROL = doc.signing_key(0x00), doc.signing_key(0x40), doc.signing_key(0x60)
ALICE_KEY, BOB_KEY, CAROL_KEY = (bytes(k.verify_key) for k in (ALICE, BOB, CAROL))
T0 = 1767225600            # 2026-01-01T00:00:00Z
T0_MS = T0 * 1000
MINUTE_MS = 60_000
MSG_ID = bytes(range(0x00, 0x10))         # the chat example's message id
OTHER_ID = bytes(range(0xf0, 0x100))
RECORD_ID = bytes(range(0x10, 0x20))      # conversation records' own id
ROOM_NONCE = bytes(range(0xa0, 0xb0))
TRANSFER = bytes(range(0x20, 0x30))
FILE_DATA = b"hello"
CHUNK_SIZE = 65536
DIAL_NONCE = bytes(range(1, 9))
TAG_SALT = bytes(range(0xb0, 0xc0))
PRESENCE_NONCE = bytes(range(0xc0, 0xc8))
NETWORK_KEY = bytes(range(0x80, 0xa0))


def u64(n):
    return struct.pack(">Q", n)


def u32(n):
    return struct.pack(">I", n)


def u16(n):
    return struct.pack(">H", n)


def rec(rtype, *fields):
    """A record as fields: type, length, then the payload's fields."""
    payload = b"".join(fields)
    return [bytes([rtype]), u32(len(payload)), *fields]


def alice_card():
    alice = Identity(seed=doc.seed(0x00), noise_private=doc.seed(0x20))
    return alice.card(name="Alice", host="alice-laptop.local", issued_at=T0, sequence=1, expires_at=1798761600)


def room_ops():
    """The room example's history: create, Bob joins, Alice adds Carol, makes Bob an admin,
    Bob removes Carol, Bob leaves; each names the previous one as its parent."""
    create = doc.room_operation(ALICE, doc.CREATE, ROOM_NONCE, 1, T0_MS, name=b"lab", flags=0,
                                members=[ALICE_KEY, BOB_KEY])
    room = doc.room_operation_hash(create)[:16]
    ops = {"room-create": create}
    steps = [("room-join", BOB, doc.JOIN, {}),
             ("room-add", ALICE, doc.ADD, {"target": CAROL_KEY}),
             ("room-set-role", ALICE, doc.SET_ROLE, {"target": BOB_KEY, "role": 2}),
             ("room-remove", BOB, doc.REMOVE, {"target": CAROL_KEY}),
             ("room-leave", BOB, doc.REMOVE, {"target": BOB_KEY})]
    previous = create
    for i, (name, key, kind, extra) in enumerate(steps, start=1):
        previous = doc.room_operation(key, kind, room, i + 1, T0_MS + i * MINUTE_MS,
                                      parents=[doc.room_operation_hash(previous)], **extra)
        ops[name] = previous
    # The same removal with a cap (features bit 7): Bob had accepted Carol's messages up to
    # her room sequence 7. An alternative to room-remove, on the same parent.
    ops["room-remove-capped"] = doc.room_operation(
        BOB, doc.REMOVE, room, 5, T0_MS + 4 * MINUTE_MS, parents=[doc.room_operation_hash(ops["room-set-role"])],
        target=CAROL_KEY, cap=7)
    return ops


def room_op_fields(op: bytes):
    """Version, kind, room, sequence, createdAt, actor, parent count, each parent, the
    kind's own fields (one field), signature."""
    count = op[66]
    end = 67 + 32 * count
    fields = [op[0:1], op[1:2], op[2:18], op[18:26], op[26:34], op[34:66], op[66:67]]
    fields += [op[67 + 32 * i:99 + 32 * i] for i in range(count)]
    own = op[end:-64]
    if op[1] == doc.REMOVE and len(own) == 40:  # target, then the removal cap
        fields += [own[:32], own[32:]]
    elif own:
        fields.append(own)
    return fields + [op[-64:]]


def room_message_fields():
    """Alice's first message in the example room, anchored on Bob's join."""
    ops = room_ops()
    room = doc.room_operation_hash(ops["room-create"])[:16]
    m = doc.room_message(ALICE, room, 1, MSG_ID, T0_MS + MINUTE_MS, [doc.room_operation_hash(ops["room-join"])],
                         b"hi lab")
    cuts = [1, 1, 16, 32, 8, 16, 8, 1, 32, 6, 64]
    fields, i = [], 0
    for n in cuts:
        fields.append(m[i:i + n])
        i += n
    assert i == len(m)
    return rec(0x16, *fields)


def room_have_payload():
    room = doc.room_operation_hash(room_ops()["room-create"])[:16]
    return doc.room_have(room, {ALICE_KEY: [(1, 3)], CAROL_KEY: [(1, 1), (4, 5)]})


FILE_OFFER, FILE_WANT, FILE_HASHES, FILE_CHUNK, FILE_HAVE, FILE_END = range(0x30, 0x36)
ADDRESS_RECORD, CONTACT_TAGS, DIAL_BACK_REQUEST, DIAL_BACK_RESULT = range(0x21, 0x25)


def address_record_fields():
    r = doc.address_record(ALICE, T0_MS, [(bytes([192, 0, 2, 10]), 7744),
                                          (bytes.fromhex("20010db8000000000000000000000010"), 7744)])
    return rec(ADDRESS_RECORD, r[0:1], r[1:33], r[33:41], r[41:42], r[42:49], r[49:68], r[68:])


def file_offer_fields():
    p = doc.file_offer(TRANSFER, FILE_DATA, CHUNK_SIZE, b"hello.txt", media_type=b"text/plain",
                       caption=b"for Bob")
    cuts = [16, 8, 4, 32, 32, 16, 2, 9, 1, 10, 2, 7, 2]
    fields, i = [], 0
    for n in cuts:
        fields.append(p[i:i + n])
        i += n
    assert i == len(p)
    return rec(FILE_OFFER, *fields)


DERIVATIONS = {
    # "Identity and fingerprints", "Cards", "Framing", "Handshake payload"
    "alice-identity-public": lambda: [ALICE_KEY],
    "bob-identity-public": lambda: [BOB_KEY],
    "card-fingerprint": lambda: doc.fingerprint(ALICE_KEY),
    "safety-number": lambda: doc.safety_number(ALICE_KEY, BOB_KEY),
    "alice-noise-public": lambda: [x25519_public(doc.seed(0x20))],
    "card": lambda: [alice_card()],
    "frame": lambda: [u16(2), b"hi", u16(1), b"!"],
    "handshake-payload": lambda: [handshake_payload(alice_card(), bytes(range(0xa0, 0xb0)))],
    # "Record types"
    "chat-record": lambda: rec(0x01, MSG_ID, u64(1), u64(T0_MS), b"Hi Bob"),
    "ack-record": lambda: rec(0x02, u16(2), MSG_ID, OTHER_ID),
    "read-receipt-record": lambda: rec(0x08, u16(1), MSG_ID),
    "refused-record": lambda: rec(0x07, bytes([1]), u16(1), MSG_ID),
    "listen-ports-record": lambda: rec(0x20, bytes([2]), u16(7744), u16(7745)),
    # "Rooms"
    "room-create": lambda: room_op_fields(room_ops()["room-create"]),
    "room-create-hash": lambda: [doc.room_operation_hash(room_ops()["room-create"])],
    "room-join": lambda: room_op_fields(room_ops()["room-join"]),
    "room-add": lambda: room_op_fields(room_ops()["room-add"]),
    "room-set-role": lambda: room_op_fields(room_ops()["room-set-role"]),
    "room-remove": lambda: room_op_fields(room_ops()["room-remove"]),
    "room-leave": lambda: room_op_fields(room_ops()["room-leave"]),
    "room-remove-capped": lambda: room_op_fields(room_ops()["room-remove-capped"]),
    "room-chat-record": lambda: rec(0x11, MSG_ID, ROOM_NONCE, u64(1), u64(T0_MS), b"hi lab"),
    # "Room sync"
    "room-message-record": room_message_fields,
    "room-have-record": lambda: rec(0x17, room_have_payload()),
    # "Conversation records"
    "reply-record": lambda: rec(0x09, RECORD_ID, u64(2), u64(T0_MS + MINUTE_MS), MSG_ID, b"Hi Bob!"),
    "edit-record": lambda: rec(0x0A, RECORD_ID, u64(2), u64(T0_MS + MINUTE_MS), MSG_ID, b"Hi Bob, again"),
    "delete-record": lambda: rec(0x0B, RECORD_ID, u64(2), u64(T0_MS + MINUTE_MS), MSG_ID),
    "reaction-record": lambda: rec(0x0C, RECORD_ID, u64(2), u64(T0_MS + MINUTE_MS), MSG_ID, b"\x01",
                                   "\U0001F44D".encode()),
    "room-delete-record": lambda: rec(0x14, ROOM_NONCE, RECORD_ID, u64(2), u64(T0_MS + MINUTE_MS), MSG_ID),
    "status-record": lambda: rec(0x0D, b"in a meeting"),
    # "Files"
    "file-offer-record": file_offer_fields,
    "file-want-record": lambda: rec(FILE_WANT, TRANSFER, u64(0), b"\x01"),
    "file-hashes-record": lambda: rec(FILE_HASHES, TRANSFER, u64(0), *doc.chunk_hashes(FILE_DATA, CHUNK_SIZE)),
    "file-chunk-record": lambda: rec(FILE_CHUNK, TRANSFER, u64(0), FILE_DATA),
    "file-have-record": lambda: rec(FILE_HAVE, TRANSFER, u64(1)),
    "file-end-completed-record": lambda: rec(FILE_END, TRANSFER, b"\x00"),
    "file-end-cancelled-record": lambda: rec(FILE_END, TRANSFER, b"\x02", b"changed my mind"),
    # "Address gossip"
    "address-record": address_record_fields,
    "contact-tags-record": lambda: rec(CONTACT_TAGS, TAG_SALT, u16(2),
                                       *sorted(doc.contact_tag(TAG_SALT, k) for k in (BOB_KEY, CAROL_KEY))),
    "dial-back-request-record": lambda: rec(DIAL_BACK_REQUEST, DIAL_NONCE, u16(7744)),
    "dial-back-result-record": lambda: rec(DIAL_BACK_RESULT, DIAL_NONCE, b"\x00"),
    # "Private presence"
    "presence-token": lambda: [PRESENCE_NONCE, doc.presence_token(ALICE_KEY, T0, PRESENCE_NONCE)],
    "presence-token-network-key": lambda: [PRESENCE_NONCE,
                                           doc.presence_token(ALICE_KEY, T0, PRESENCE_NONCE, NETWORK_KEY)],
}


def block_lines(derived):
    """The derived value as the document prints it: text as is; bytes one field per line,
    fields over 32 bytes split into lines of 32."""
    if isinstance(derived, str):
        return [derived]
    out = []
    for field in derived:
        out += [field[i:i + 32].hex() for i in range(0, len(field), 32)] or [""]
    return out


def test_every_example_is_derived():
    assert sorted(doc.examples()) == sorted(DERIVATIONS)


@pytest.mark.parametrize("name", sorted(DERIVATIONS))
def test_example_matches_its_derivation(name):
    block = doc.examples().get(name)
    assert block is not None, f"docs/PROTOCOL.md has no example '{name}'"
    derived = DERIVATIONS[name]()
    if isinstance(derived, str):
        assert "\n".join(block) == derived
    else:
        assert doc.hex_of(block).hex() == b"".join(derived).hex()


def test_the_room_examples_form_one_history():
    """Each room example names the previous one's hash as its only parent, with the sequence
    one above it, in the create's room: a valid history under the graph rules."""
    ops = room_ops()
    names = ["room-create", "room-join", "room-add", "room-set-role", "room-remove", "room-leave"]
    room = doc.room_operation_hash(ops["room-create"])[:16]
    for before, after in zip(names, names[1:]):
        op = ops[after]
        assert op[2:18] == room
        assert op[66] == 1 and op[67:99] == doc.room_operation_hash(ops[before])
        assert struct.unpack(">Q", op[18:26])[0] == struct.unpack(">Q", ops[before][18:26])[0] + 1


if __name__ == "__main__":
    for name in sys.argv[1:] or sorted(DERIVATIONS):
        print(f"<!-- example:{name} -->\n```")
        print("\n".join(block_lines(DERIVATIONS[name]())))
        print("```\n")
