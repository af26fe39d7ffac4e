"""Issue 18, files: real parleyd processes on loopback send files to a person and to a
room; resume after kill -9 of either side; reject and cancel from either side; chat stays
prompt while a large file moves. The hostile sender is in test_files_hostile.py."""
import hashlib
import os
import subprocess
import time

import pytest

from parley_harness import PARLEY, wait_until
from test_everyday import pair
from test_rooms import accept, mesh

# Several hundred MB in CI is the ask; PARLEY_FILES_MB lowers it on a slow machine.
BIG_MB = int(os.environ.get("PARLEY_FILES_MB", "200"))


def verify(node, other):
    node.call("trust.verify", {"peer": other.name, "fingerprint": other.whoami()["fingerprint"]})


def trusted_pair(cluster):
    """A pair whose files count against the verified receive quota (1 GiB; an unverified
    sender gets 64 MiB, so bigger offers from it are refused: see test_unverified...)."""
    alice, bob = pair(cluster)
    verify(bob, alice)
    verify(alice, bob)
    return alice, bob


def make_file(cluster, name, size):
    path = cluster.dir / name
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 4 << 20)
            f.write(os.urandom(n))
            left -= n
    return path


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def transfers(node):
    return node.call("files.list", {"limit": 100})["transfers"]


def transfer(node, tid):
    found = [t for t in transfers(node) if t["id"] == tid]
    return found[0] if found else None


def offered_to(node, tid, timeout=20):
    return wait_until(lambda: transfer(node, tid), timeout=timeout, what=f"{node.name} sees offer {tid[:8]}")


def final(node, tid, timeout=90):
    return wait_until(lambda: (lambda t: t if t and t["state"] not in ("offered", "transferring") else None)(
        transfer(node, tid)), timeout=timeout, what=f"transfer {tid[:8]} ends at {node.name}")


def send(node, to, path):
    return node.send_files(to, [path])["transfers"]


def no_partials(node):
    d = node.state_dir / "files"
    return not d.exists() or not [p for p in os.listdir(d) if p.endswith(".part")]


def test_large_file_arrives_byte_identical_while_chat_stays_prompt(cluster):
    alice, bob = trusted_pair(cluster)
    src = make_file(cluster, "big.bin", BIG_MB << 20)
    [t] = send(alice, "bob", src)
    assert t["state"] == "offered" and t["size"] == BIG_MB << 20
    offered_to(bob, t["id"])
    # Over the auto-accept size (64 MiB): bob is asked, nothing arrives before he accepts.
    assert transfer(bob, t["id"])["state"] == "offered"
    out = bob.cli("files", "accept", t["id"][:8]).stdout
    assert "transferring" in out

    # Chat both ways while the file moves: each message acknowledged within a bounded time.
    latencies = []
    during = 0
    for i in range(5):
        start = time.monotonic()
        alice.call("messages.send", {"to": "bob", "body": f"while the file moves {i}", "wait": True,
                                     "timeoutMs": 5000})
        bob.call("messages.send", {"to": "alice", "body": f"reply {i}", "wait": True, "timeoutMs": 5000})
        latencies.append(time.monotonic() - start)
        if transfer(bob, t["id"])["state"] == "transferring":
            during += 1
    assert during >= 1, "the transfer ended before chat was measured; raise PARLEY_FILES_MB"
    # Two acknowledged messages per sample, debug build, a CI machine shared with others:
    # "usable" is seconds at worst here; row 10b of the benchmark measures the real ratio.
    assert max(latencies) < 5.0, latencies

    done = final(bob, t["id"])
    assert done["state"] == "completed", done
    assert done["path"] == str(bob.state_dir / "files" / "big.bin")
    assert digest(done["path"]) == digest(src)
    assert oct(os.stat(done["path"]).st_mode & 0o777) == "0o600"
    assert final(alice, t["id"])["state"] == "completed"
    assert no_partials(bob)
    # The same name again: a second file, never overwriting the first.
    [t2] = send(alice, "bob", src)
    offered_to(bob, t2["id"])
    bob.call("files.accept", {"id": t2["id"]})
    assert final(bob, t2["id"])["path"] == str(bob.state_dir / "files" / "big (1).bin")


def kill_mid_transfer(cluster, victim_is_receiver):
    alice, bob = trusted_pair(cluster)
    src = make_file(cluster, "resume.bin", BIG_MB << 20)
    [t] = send(alice, "bob", src)
    offered_to(bob, t["id"])
    bob.call("files.accept", {"id": t["id"]})
    # Past the first checkpoints (4 MiB each), well before the end.
    wait_until(lambda: transfer(bob, t["id"])["bytesDone"] > (BIG_MB << 20) // 4, timeout=120,
               interval=0.02, what="a quarter of the file at bob")
    victim = bob if victim_is_receiver else alice
    victim.kill()
    if victim_is_receiver:
        victim.start()
        # Resumed, not restarted: what was durable before the kill is still counted.
        kept = transfer(bob, t["id"])["bytesDone"]
        assert kept > 0, "the receiver forgot its verified chunks"
    else:
        # Nothing to wait for: the receiver keeps its state while the sender is down.
        kept = transfer(bob, t["id"])["bytesDone"]
        victim.start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), timeout=30, what="the pair is back")
    done = final(bob, t["id"])
    assert done["state"] == "completed", done
    assert digest(done["path"]) == digest(src)
    assert final(alice, t["id"])["state"] == "completed"
    assert no_partials(bob)
    log = bob.log_path.read_text()
    return kept, log


def test_receiver_killed_mid_transfer_resumes_and_completes(cluster):
    kept, _ = kill_mid_transfer(cluster, victim_is_receiver=True)
    assert kept >= 4 << 20


def test_sender_killed_mid_transfer_resumes_and_completes(cluster):
    kept, _ = kill_mid_transfer(cluster, victim_is_receiver=False)
    assert kept > 0


def test_room_file_reaches_every_member_once(cluster):
    n = mesh(cluster, "alice", "bob", "carol")
    alice, bob, carol = n["alice"], n["bob"], n["carol"]
    alice.call("rooms.create", {"name": "lab", "members": ["bob", "carol"]})
    accept([bob, carol], "lab")
    wait_until(lambda: len([m for m in alice.call("rooms.list")["rooms"][0]["members"] if m["joined"]]) == 3,
               what="alice sees both join")
    src = make_file(cluster, "notes.pdf", 3 << 20)
    sent = send(alice, "#lab", src)
    assert len(sent) == 2 and len({t["id"] for t in sent}) == 2
    for member in (bob, carol):
        wait_until(lambda: [t for t in transfers(member) if t["direction"] == "in"], what=f"{member.name} offered")
        [t] = [t for t in transfers(member) if t["direction"] == "in"]
        assert t["room"] is not None and t["mediaType"] == "application/pdf"
        member.call("files.accept", {"id": t["id"]})
        done = final(member, t["id"])
        assert done["state"] == "completed" and digest(done["path"]) == digest(src)
    for t in sent:
        assert final(alice, t["id"])["state"] == "completed"
    # Once each: a restart of everyone re-offers nothing already answered.
    for node in (bob, carol):
        node.stop()
        node.start()
    wait_until(lambda: alice.online("bob") and alice.online("carol"), timeout=30, what="back online")
    alice.cli("send", "bob", "barrier", "--wait")
    alice.cli("send", "carol", "barrier", "--wait")
    for member in (bob, carol):
        assert len([t for t in transfers(member) if t["direction"] == "in"]) == 1
        assert sorted(os.listdir(member.state_dir / "files")) == ["notes.pdf"]


def test_reject_and_cancel_from_either_side(cluster):
    alice, bob = pair(cluster)  # not verified yet: offers wait for bob
    small = make_file(cluster, "small.txt", 100_000)
    # The receiver rejects: the sender is told.
    [t] = send(alice, "bob", small)
    offered_to(bob, t["id"])
    assert "rejected" in bob.cli("files", "reject", t["id"][:6]).stdout
    assert final(alice, t["id"])["state"] == "rejected"
    # The sender cancels an offer: the receiver's offer ends, nothing is written.
    [t] = send(alice, "bob", small)
    offered_to(bob, t["id"])
    alice.cli("files", "cancel", t["id"][:8])
    assert final(bob, t["id"])["state"] == "cancelled"
    # The receiver cancels mid-transfer: no partial file stays, the sender stops.
    verify(bob, alice)
    big = make_file(cluster, "cancel.bin", BIG_MB << 20)
    [t] = send(alice, "bob", big)
    offered_to(bob, t["id"])
    bob.call("files.accept", {"id": t["id"]})
    wait_until(lambda: transfer(bob, t["id"])["bytesDone"] > 0, interval=0.02, what="bytes arrive")
    bob.call("files.cancel", {"id": t["id"]})
    assert final(alice, t["id"])["state"] == "cancelled"
    assert final(bob, t["id"])["state"] == "cancelled"
    assert no_partials(bob)
    assert not (bob.state_dir / "files" / "cancel.bin").exists()
    # The sender cancels mid-transfer.
    [t] = send(alice, "bob", big)
    offered_to(bob, t["id"])
    bob.call("files.accept", {"id": t["id"]})
    wait_until(lambda: transfer(bob, t["id"])["bytesDone"] > 0, interval=0.02, what="bytes arrive")
    alice.call("files.cancel", {"id": t["id"]})
    assert final(bob, t["id"])["state"] == "cancelled"
    assert no_partials(bob)


def test_verified_peer_small_file_is_auto_accepted_and_cli_waits(cluster):
    alice, bob = trusted_pair(cluster)
    src = make_file(cluster, "photo.png", 2 << 20)
    out = alice.cli("send", "bob", "--attach", str(src), "--wait").stdout
    assert "completed" in out and "photo.png" in out
    [t] = [t for t in transfers(bob) if t["direction"] == "in"]
    assert t["state"] == "completed" and t["mediaType"] == "image/png"
    assert digest(t["path"]) == digest(src)
    listing = bob.cli("files").stdout
    assert "photo.png" in listing and "completed" in listing
    # Both sides show the file's hash, and `parley files hash` computes it from the bytes
    # alone (no daemon): what two people compare out of band.
    [out_t] = [t for t in transfers(alice) if t["direction"] == "out"]
    assert t["contentHash"] == out_t["contentHash"]
    for path in (t["path"], str(src)):
        out = subprocess.run([PARLEY, "files", "hash", path], capture_output=True, text=True, check=True).stdout
        assert out.split() == [t["contentHash"], path]
    # parley get --to writes it out (as the caller, from the descriptor files.open hands
    # over), without replacing an existing file.
    dest = cluster.dir / "inbox"
    dest.mkdir()
    (dest / "photo.png").write_bytes(b"mine")
    moved = bob.cli("get", t["id"][:8], "--to", str(dest)).stdout
    assert str(dest / "photo (1).png") in moved
    assert (dest / "photo.png").read_bytes() == b"mine"
    assert digest(dest / "photo (1).png") == digest(src)


def test_the_daemon_never_opens_a_path_a_client_names(cluster):
    """Issue 28 (confused deputy): files.send with a path is refused on the control socket,
    whatever the path; only descriptors the client opened are sent, and only regular files."""
    alice, bob = pair(cluster)
    from parley_harness import RPCError
    for params in ({"to": "bob", "path": str(alice.state_dir / "identity.key")},
                   {"to": "bob", "files": [{"name": "identity.key"}]}):
        with pytest.raises(RPCError) as e:
            alice.call("files.send", params)
        assert e.value.code == -32600 and "descriptor socket" in str(e.value)
    # A directory passed as a descriptor is not a file.
    fd = os.open(str(cluster.dir), os.O_RDONLY)
    try:
        from parley_harness import descriptor_call
        with pytest.raises(RPCError) as e:
            descriptor_call(alice.socket, "files.send", {"to": "bob", "files": [{"name": "d"}]}, [fd])
        assert e.value.code == -32041 and "not a regular file" in str(e.value)
    finally:
        os.close(fd)
    # A count of descriptors that does not match the list is refused, nothing sent.
    src = make_file(cluster, "two.bin", 1000)
    fd = os.open(str(src), os.O_RDONLY)
    try:
        with pytest.raises(RPCError) as e:
            descriptor_call(alice.socket, "files.send", {"to": "bob", "files": [{"name": "a"}, {"name": "b"}]}, [fd])
        assert e.value.code == -32602
    finally:
        os.close(fd)
    assert transfers(bob) == [] and transfers(alice) == []


def test_unverified_sender_over_its_quota_is_refused_and_told(cluster):
    alice, bob = pair(cluster)
    src = make_file(cluster, "huge.bin", 70 << 20)  # over the 64 MiB kept from an unverified peer
    [t] = send(alice, "bob", src)
    done = final(alice, t["id"], timeout=20)
    assert done["state"] == "failed" and "quota" in done["error"], done
    # Bob's side lists the refusal too (docs/CONTROL.md "Files"), with the same reason.
    refused = wait_until(lambda: transfer(bob, t["id"]), timeout=10, what="the refusal listed at bob")
    assert (refused["direction"], refused["state"], refused["bytesDone"]) == ("in", "failed", 0), refused
    assert refused["error"] == done["error"].removeprefix("the other side says: "), (refused, done)
    assert no_partials(bob)
    # A small one from the same unverified sender is offered, and waits for bob.
    small = make_file(cluster, "small.txt", 1000)
    [t] = send(alice, "bob", small)
    assert offered_to(bob, t["id"])["state"] == "offered"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs (CI runs as root)")
def test_disk_full_at_the_receiver_is_a_clear_error_and_the_sender_keeps_its_file(cluster):
    from test_everyday import config_file
    downloads = cluster.dir / "downloads"
    downloads.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(downloads)], check=True)
    try:
        # No disk floor, and the space is taken only after bob accepted (alice offline
        # meanwhile): the 8 MiB file system fills mid-transfer.
        conf = config_file(cluster, "bob", f'[parleyd]\ndownload_dir = "{downloads}"\ndisk_floor_mib = 0\n')
        alice = cluster.node("alice").start()
        bob = cluster.node("bob", peers=[alice.address], extra_args=conf).start()
        wait_until(lambda: alice.online("bob") and bob.online("alice"), what="online")
        src = make_file(cluster, "too-big.bin", 6 << 20)
        before = digest(src)
        [t] = send(alice, "bob", src)
        offered_to(bob, t["id"])
        alice.stop()
        bob.call("files.accept", {"id": t["id"]})
        with open(downloads / "filler", "wb") as f:
            f.write(b"\0" * (5 << 20))
        alice.start()
        done = final(bob, t["id"], timeout=60)
        assert done["state"] == "failed", done
        out = final(alice, t["id"], timeout=30)
        assert out["state"] == "failed" and "disk is full" in out["error"], out
        assert os.listdir(downloads) == ["filler"], "the partial file is removed"
        assert digest(src) == before, "the sender's file is untouched"
        assert bob.call("node.status")["name"] == "bob"
        # With the default floor (256 MiB) the free-space check refuses the offer before a byte moves.
        bob.stop()
        conf = config_file(cluster, "bob2", f'[parleyd]\ndownload_dir = "{downloads}"\n')
        bob.extra_args = conf
        bob.start()
        wait_until(lambda: alice.online("bob"), timeout=30, what="bob back")
        [t] = send(alice, "bob", make_file(cluster, "small.bin", 1 << 20))
        out = final(alice, t["id"], timeout=30)
        assert out["state"] == "failed" and "disk space" in out["error"], out
    finally:
        for n in cluster.nodes:
            n.stop()
        subprocess.run(["umount", "-l", str(downloads)])


def test_files_send_offers_several_files_in_one_call_or_none(cluster):
    """`parley files send` passes every file's descriptor in one files.send: one transfer
    per file; a missing file among them and nothing is offered."""
    alice, bob = pair(cluster)
    one, two = make_file(cluster, "one.txt", 1000), make_file(cluster, "two.bin", 70_000)
    p = alice.cli("files", "send", "bob", str(one), str(cluster.dir / "missing.bin"), check=False)
    assert p.returncode != 0 and "missing.bin" in p.stderr and "nothing was sent" in p.stderr
    assert transfers(alice) == []
    out = alice.cli("files", "send", "bob", str(one), str(two), "--caption", "both").stdout
    assert out.count("→ offered") == 2
    names = wait_until(lambda: (lambda n: n if len(n) == 2 else None)(
        sorted(t["name"] for t in transfers(bob) if t["direction"] == "in")), what="both offers at bob")
    assert names == ["one.txt", "two.bin"]
    assert {t["caption"] for t in transfers(bob)} == {"both"}
