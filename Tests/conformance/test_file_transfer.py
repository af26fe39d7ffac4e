"""docs/PROTOCOL.md "Files" (records 0x30 ... 0x35, features bit 1), written from the
document alone: a file offered, accepted, listed, chunked, checkpointed and completed in
both directions between this client and a real parleyd, and a resume from the receiver's
durable count after the session was cut."""
import hashlib
import os
import struct

from conftest import wait_until
from parley_wire import PING, PONG, Identity, PeerClosed, Session, record

FEATURES_FIELD = 0x10
FILES_BIT = 1 << 1
FILE_OFFER, FILE_WANT, FILE_HASHES, FILE_CHUNK, FILE_HAVE, FILE_END = range(0x30, 0x36)
COMPLETED, REJECTED, CANCELLED, FAILED = 0, 1, 2, 3
WINDOW = 256          # chunks beyond the latest fileHave / fileWant "from"
CHECKPOINT = 64       # the receiver's fileHave at least every 64 chunks
MAX_HASHES = 2048     # per fileHashes record


def blake(data: bytes) -> bytes:
    """BLAKE2b-256, no key (libsodium crypto_generichash with a 32-byte output)."""
    return hashlib.blake2b(data, digest_size=32).digest()


def chunks_of(data: bytes, size: int):
    return [data[i:i + size] for i in range(0, len(data), size)]


def file_hash(data: bytes, chunk_size: int) -> bytes:
    """The file's hash (contentHash, equal to listHash): BLAKE2b-256 of its chunk hashes."""
    return blake(b"".join(blake(c) for c in chunks_of(data, chunk_size)))


def file_session(address, identity, card):
    return Session.established(address, identity, card=card,
                               extra_fields=[(FEATURES_FIELD, struct.pack(">I", FILES_BIT))])


def offer_record(transfer, data, chunk_size, name, media_type=b"", caption=b"", thumbnail=b"", room=bytes(16)):
    return record(FILE_OFFER, transfer + struct.pack(">QI", len(data), chunk_size) + file_hash(data, chunk_size)
                  + file_hash(data, chunk_size) + room + struct.pack(">H", len(name)) + name
                  + bytes([len(media_type)]) + media_type + struct.pack(">H", len(caption)) + caption
                  + struct.pack(">H", len(thumbnail)) + thumbnail)


def parse_offer(p: bytes) -> dict:
    transfer, (size, chunk_size) = p[:16], struct.unpack(">QI", p[16:28])
    content_hash, list_hash, room = p[28:60], p[60:92], p[92:108]
    i = 108
    n = struct.unpack(">H", p[i:i + 2])[0]
    name = p[i + 2:i + 2 + n]
    i += 2 + n
    n = p[i]
    media_type = p[i + 1:i + 1 + n]
    i += 1 + n
    n = struct.unpack(">H", p[i:i + 2])[0]
    caption = p[i + 2:i + 2 + n]
    i += 2 + n
    n = struct.unpack(">H", p[i:i + 2])[0]
    thumbnail = p[i + 2:i + 2 + n]
    i += 2 + n
    assert i == len(p), "no trailing bytes in a fileOffer"
    return {"transfer": transfer, "size": size, "chunkSize": chunk_size, "contentHash": content_hash,
            "listHash": list_hash, "room": room, "name": name, "mediaType": media_type,
            "caption": caption, "thumbnail": thumbnail}


def want(transfer, start, need_list):
    return record(FILE_WANT, transfer + struct.pack(">Q", start) + bytes([1 if need_list else 0]))


def have(transfer, verified):
    return record(FILE_HAVE, transfer + struct.pack(">Q", verified))


def end(transfer, outcome, text=b""):
    return record(FILE_END, transfer + bytes([outcome]) + text)


def file_records(s, timeout=10.0):
    """The next records, pings answered, only the file records returned."""
    out = []
    for t, p in s.recv_records(timeout=timeout):
        if t == PING:
            s.send_records(record(PONG, p))
        elif FILE_OFFER <= t <= FILE_END:
            out.append((t, p))
    return out


def listed(daemon, tid_hex):
    found = daemon.call("files.list", {"id": tid_hex})["transfers"]
    return found[0] if found else None


def test_a_file_sent_to_parleyd_is_accepted_verified_and_saved(daemon):
    me = Identity()
    s = file_session(daemon.address, me, me.card(name="pyfilesender"))
    chunk_size = 4096
    # 300 chunks: more than the window, several checkpoints, a short last chunk.
    data = os.urandom(300 * chunk_size - 123)
    chunks = chunks_of(data, chunk_size)
    hashes = [blake(c) for c in chunks]
    transfer = os.urandom(16)
    s.send_records(offer_record(transfer, data, chunk_size, b"conformance.bin", b"application/octet-stream",
                                "a caption".encode()))
    # A stranger's file waits for the local user.
    t = wait_until(lambda: listed(daemon, transfer.hex()), what="the offer listed")
    assert (t["direction"], t["state"], t["name"], t["size"]) == ("in", "offered", "conformance.bin", len(data))
    assert t["contentHash"] == file_hash(data, chunk_size).hex()
    daemon.call("files.accept", {"id": transfer.hex()})

    got = []
    while not got:
        got = [p for t, p in file_records(s) if t == FILE_WANT]
    p = got[0]
    assert len(p) == 25 and p[:16] == transfer
    assert struct.unpack(">Q", p[16:24])[0] == 0 and p[24] == 1, "the accept: from 0, the list wanted"
    # The list in two records, in order from 0.
    s.send_records(record(FILE_HASHES, transfer + struct.pack(">Q", 0) + b"".join(hashes[:100])),
                   record(FILE_HASHES, transfer + struct.pack(">Q", 100) + b"".join(hashes[100:])))
    sent, verified, haves, outcome = 0, 0, [], None
    while outcome is None:
        limit = min(len(chunks), verified + WINDOW)
        if sent < limit:
            s.send_records(*[record(FILE_CHUNK, transfer + struct.pack(">Q", i) + chunks[i])
                             for i in range(sent, limit)])
            sent = limit
        for t, p in file_records(s):
            assert p[:16] == transfer
            if t == FILE_HAVE:
                v = struct.unpack(">Q", p[16:24])[0]
                assert v >= verified, "fileHave never decreases"
                verified = v
                haves.append(v)
            elif t == FILE_END:
                outcome, text = p[16], p[17:]
    assert outcome == COMPLETED, text
    assert haves and haves[0] <= CHECKPOINT and all(b - a <= CHECKPOINT for a, b in zip([0] + haves, haves)), haves
    done = wait_until(lambda: (x := listed(daemon, transfer.hex())) and x["state"] == "completed" and x,
                      what="completed at parleyd")
    assert done["bytesDone"] == len(data)
    with open(done["path"], "rb") as f:
        assert f.read() == data
    assert os.path.basename(done["path"]) == "conformance.bin"
    assert oct(os.stat(done["path"]).st_mode & 0o777) == oct(0o600)


def test_a_file_from_parleyd_is_received_and_resumed_after_a_cut(daemon, workdir):
    me = Identity()
    # One card for both sessions: a second card with the same sequence would be refused.
    card = me.card(name="pyfilereceiver")
    s = file_session(daemon.address, me, card)
    wait_until(lambda: [p for p in daemon.peers() if p["name"] == "pyfilereceiver" and p["online"]],
               what="the session listed")
    data = os.urandom(5 * 65536 * 100 // 10 + 777)   # 51 chunks of 64 KiB
    src = workdir / "from-parleyd.bin"
    src.write_bytes(data)
    sent = daemon.send_file("pyfilereceiver", src, caption="for python")
    tid = sent["transfers"][0]["id"]

    offers = []
    while not offers:
        offers = [p for t, p in file_records(s) if t == FILE_OFFER]
    o = parse_offer(offers[0])
    assert o["transfer"].hex() == tid
    assert (o["size"], o["name"], o["caption"], o["room"]) == (len(data), b"from-parleyd.bin", b"for python", bytes(16))
    assert o["chunkSize"] & (o["chunkSize"] - 1) == 0 and 4096 <= o["chunkSize"] <= 65536
    assert o["contentHash"] == o["listHash"] == file_hash(data, o["chunkSize"])
    count = -(-o["size"] // o["chunkSize"])
    transfer = o["transfer"]

    # Accept: the list first, then chunks in order; take 20 chunks, confirm 16, cut.
    s.send_records(want(transfer, 0, True))
    hashes, received = [], {}
    while len(received) < 20:
        for t, p in file_records(s):
            if t == FILE_HASHES:
                first = struct.unpack(">Q", p[16:24])[0]
                assert first == len(hashes) and (len(p) - 24) % 32 == 0 and 1 <= (len(p) - 24) // 32 <= MAX_HASHES
                hashes += [p[24 + 32 * i:56 + 32 * i] for i in range((len(p) - 24) // 32)]
            elif t == FILE_CHUNK:
                assert len(hashes) == count, "the hash list comes before the chunks"
                index = struct.unpack(">Q", p[16:24])[0]
                assert index == len(received), "chunks in order from the want's `from`"
                received[index] = p[24:]
    assert blake(b"".join(hashes)) == o["listHash"]
    for i, c in received.items():
        assert blake(c) == hashes[i]
    s.send_records(have(transfer, 16))
    s.close_socket()

    # A new session: the offer is not repeated (we answered it); we resume at 16, no list.
    s = file_session(daemon.address, me, card)
    s.send_records(want(transfer, 16, False))
    chunks, outcome = {i: received[i] for i in range(16)}, None
    while len(chunks) < count:
        for t, p in file_records(s):
            assert t not in (FILE_OFFER, FILE_HASHES), "nothing but chunks after a resume without the list"
            if t == FILE_CHUNK:
                index = struct.unpack(">Q", p[16:24])[0]
                assert index == len(chunks), f"resumed at {index}, expected {len(chunks)}"
                assert index < 16 + WINDOW
                assert blake(p[24:]) == hashes[index]
                chunks[index] = p[24:]
                if index % CHECKPOINT == CHECKPOINT - 1:
                    s.send_records(have(transfer, index + 1))
    whole = b"".join(chunks[i] for i in range(count))
    assert file_hash(whole, o["chunkSize"]) == o["contentHash"] and whole == data
    s.send_records(have(transfer, count), end(transfer, COMPLETED))
    done = wait_until(lambda: (x := listed(daemon, tid)) and x["state"] == "completed" and x,
                      what="completed at the sender")
    assert done["direction"] == "out" and done["bytesDone"] == len(data)
    # A finished transfer's want is answered with the same fileEnd.
    s.send_records(want(transfer, 0, False))
    ends = []
    while not ends:
        ends = [p for t, p in file_records(s) if t == FILE_END]
    assert ends[0][:17] == transfer + bytes([COMPLETED])
    try:
        s.close_socket()
    except PeerClosed:
        pass
