"""Issue 18, thumbnails of pictures sent as files: real parleyd processes on loopback. The
sender makes a JPEG thumbnail (at most 160x160, at most 32 KiB) in a bounded, sandboxed
child; the receiver stores it and hands it to clients by `files.thumbnail` without ever
decoding it. Attacks: a decompression bomb, a file named .png that is not a picture, a
missing tool, and a hostile peer whose offer carries 32 KiB of garbage as its thumbnail."""
import base64
import os
import shutil
import struct
import subprocess
import time
import zlib

import pytest

from parley_harness import RPCError, bin_dir, wait_until
from test_everyday import pair
from test_files import offered_to, send, transfer

ADVERSARY = str(bin_dir() / "parley-adversary")


def png(path, width, height, rows):
    """A PNG written by hand: 8-bit RGB, each row from `rows(y)` (3 * width bytes)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + rows(y) for y in range(height))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
    return path


def bomb(path, side=30000):
    """A small PNG (about 100 KiB) declaring side x side 1-bit pixels: 900 megapixels."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    c = zlib.compressobj(9)
    row = b"\x00" * (1 + (side + 7) // 8)
    body = b"".join(c.compress(row * 1000) for _ in range(side // 1000)) + c.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0))
                     + chunk(b"IDAT", body) + chunk(b"IEND", b""))
    return path


def jpeg_size(data):
    """(width, height) from a JPEG's SOF marker, parsed here, not by the code under test."""
    assert data[:3] == b"\xff\xd8\xff"
    i = 2
    while i + 4 <= len(data):
        assert data[i] == 0xFF, f"no marker at {i}"
        marker = data[i + 1]
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    raise AssertionError("no SOF marker")


def thumbnail(node, tid):
    r = node.call("files.thumbnail", {"id": tid})
    assert r["id"] == tid
    return r["mediaType"], base64.b64decode(r["data"])


def rpc_error(node, method, params):
    with pytest.raises(RPCError) as e:
        node.call(method, params)
    return e.value


def test_a_png_and_a_jpeg_arrive_with_small_jpeg_thumbnails(cluster):
    alice, bob = pair(cluster)
    # A noisy picture (a flat one would make a thumbnail of a few hundred bytes).
    noise = os.urandom(600 * 3)
    picture = png(cluster.dir / "photo.png", 600, 450, lambda y: noise[y % 7:] + noise[:y % 7])
    photo_jpg = cluster.dir / "photo.jpg"
    subprocess.run(["vips", "copy", str(picture), f"{photo_jpg}[Q=95]"], check=True)
    for path, expect in ((picture, (160, 120)), (photo_jpg, (160, 120))):
        [t] = send(alice, "bob", path)
        # The sender's own offer lists its thumbnail, and files.thumbnail gives it back too.
        assert t["thumbnailBytes"] > 0, t
        mine = thumbnail(alice, t["id"])
        got = offered_to(bob, t["id"])
        assert got["thumbnailBytes"] == t["thumbnailBytes"]
        media, data = thumbnail(bob, t["id"])
        assert (media, data) == mine
        assert media == "image/jpeg" and len(data) <= 32768 and len(data) == t["thumbnailBytes"]
        assert jpeg_size(data) == expect
        assert b"Exif" not in data[:200]  # `strip`: no metadata of the sender's picture

    # The CLI: the list says so; `files thumbnail` writes a new 0600 file, never over one.
    listing = bob.cli("files").stdout
    assert "thumbnail " in listing, listing
    out = cluster.dir / "thumb.jpg"
    bob.cli("files", "thumbnail", t["id"][:8], "--to", str(out))
    assert out.read_bytes() == data
    assert oct(os.stat(out).st_mode & 0o777) == "0o600"
    again = bob.cli("files", "thumbnail", t["id"][:8], "--to", str(out), check=False)
    assert again.returncode != 0 and out.read_bytes() == data


def test_a_decompression_bomb_is_offered_promptly_without_a_thumbnail(cluster):
    alice, bob = pair(cluster)
    path = bomb(cluster.dir / "bomb.png")
    start = time.monotonic()
    [t] = send(alice, "bob", path)
    # Refused from its header (900 megapixels), long before the 5 s the offer may wait.
    assert time.monotonic() - start < 4.0
    assert "thumbnailBytes" not in t
    got = offered_to(bob, t["id"])
    assert "thumbnailBytes" not in got
    assert "no thumbnail" in rpc_error(bob, "files.thumbnail", {"id": t["id"]}).error["message"]
    assert "no thumbnail" in rpc_error(alice, "files.thumbnail", {"id": t["id"]}).error["message"]
    wait_until(lambda: "pixels is over" in alice.log_path.read_text(), timeout=5, what="the bomb's debug line")
    # Still healthy: chat goes through both ways.
    alice.call("messages.send", {"to": "bob", "body": "after the bomb", "wait": True, "timeoutMs": 5000})
    bob.call("messages.send", {"to": "alice", "body": "still here", "wait": True, "timeoutMs": 5000})


def test_a_file_named_png_that_is_not_a_picture_has_no_thumbnail(cluster):
    alice, bob = pair(cluster)
    fake = cluster.dir / "fake.png"
    fake.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(20000))
    [t] = send(alice, "bob", fake)
    assert "thumbnailBytes" not in t and t["mediaType"] == "image/png"
    assert "thumbnailBytes" not in offered_to(bob, t["id"])
    assert alice.call("node.status")


def test_without_vipsthumbnail_on_path_offers_go_out_without_thumbnails(cluster):
    # vipsheader and vipsthumbnail are looked up on parleyd's PATH.
    alice = cluster.node("alice", env={"PATH": "/nonexistent"}).start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="alice and bob online")
    picture = png(cluster.dir / "small.png", 64, 48, lambda y: bytes([y * 5 % 256]) * (64 * 3))
    [t] = send(alice, "bob", picture)
    assert "thumbnailBytes" not in t
    assert "thumbnailBytes" not in offered_to(bob, t["id"])
    assert "no thumbnails for pictures sent" in alice.log_path.read_text()


def test_tools_outside_usr_are_still_made_under_rlimits_and_seccomp(cluster):
    # Copies of the tools outside /usr: Landlock lets the child execute below /usr only and
    # bubblewrap shows only /usr, so the child runs with its rlimits, the seccomp filter and
    # a cleared environment only, and the log says so once.
    tools = cluster.dir / "tools"
    tools.mkdir()
    for name in ("vipsthumbnail", "vipsheader"):
        shutil.copy(f"/usr/bin/{name}", tools / name)
    alice = cluster.node("alice", env={"PATH": str(tools)}).start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="alice and bob online")
    picture = png(cluster.dir / "wide.png", 320, 80, lambda y: bytes(range(256))[: 3 * 80] * 4)
    [t] = send(alice, "bob", picture)
    assert t["thumbnailBytes"] > 0
    offered_to(bob, t["id"])
    media, data = thumbnail(bob, t["id"])
    assert media == "image/jpeg" and jpeg_size(data) == (160, 40)
    assert alice.log_path.read_text().count("made with rlimits and seccomp only") == 1


def test_thumbnails_are_made_under_landlock_where_the_kernel_has_it(cluster):
    # The tools under /usr on a kernel with Landlock (CI's): the child is confined by
    # Landlock and seccomp, says the log once, and still makes the thumbnail.
    alice = cluster.node("alice").start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="alice and bob online")
    picture = png(cluster.dir / "small [1].png", 64, 48, lambda y: bytes([y * 5 % 256]) * (64 * 3))
    [t] = send(alice, "bob", picture)
    assert t["thumbnailBytes"] > 0
    offered_to(bob, t["id"])
    media, data = thumbnail(bob, t["id"])
    assert media == "image/jpeg" and jpeg_size(data) == (160, 120)
    assert alice.log_path.read_text().count("confined by Landlock") == 1


def test_a_peers_garbage_thumbnail_is_stored_but_never_handed_on_as_a_picture(cluster):
    victim = cluster.node("victim").start()
    p = subprocess.Popen([ADVERSARY, "file", victim.address, "garbage-thumbnail"], stdout=subprocess.PIPE, text=True)
    try:
        t = wait_until(lambda: next((x for x in victim.call("files.list", {})["transfers"] if x["direction"] == "in"),
                                    None), timeout=20, what="the adversary's offer")
        assert t["thumbnailBytes"] == 32768 and t["mediaType"] == "image/jpeg"
        err = rpc_error(victim, "files.thumbnail", {"id": t["id"]})
        assert "not a JPEG or PNG" in err.error["message"]
        out = victim.cli("files", "thumbnail", t["id"][:8], "--to", str(victim.state_dir.parent / "x.jpg"),
                         check=False)
        assert out.returncode != 0 and not (victim.state_dir.parent / "x.jpg").exists()
        # Unaffected: the transfer itself still completes.
        victim.call("files.accept", {"id": t["id"]})
        out, _ = p.communicate(timeout=60)
        assert out.splitlines()[-1].startswith("end completed"), out
        assert victim.call("node.status")
    finally:
        if p.poll() is None:
            p.kill()


def test_files_thumbnail_refuses_bad_ids(cluster):
    victim = cluster.node("victim").start()
    for bad in ["", "xyz", "ABCD", "a" * 33, "../..", "abcd\n"]:
        rpc_error(victim, "files.thumbnail", {"id": bad})
    assert "no file transfer" in rpc_error(victim, "files.thumbnail", {"id": "abcd"}).error["message"]
