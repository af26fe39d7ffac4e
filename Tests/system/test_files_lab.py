"""Issue 18, files on a real (simulated) LAN: a transfer between two lab hosts survives a
link cut and heals. The receiver resumes from its last durable checkpoint (never from 0),
and the file arrives once, byte-identical, with the offered hash."""
import hashlib
import os
import re
import time

import pytest

import lab as lab_module
from parley_harness import wait_until

# Fast liveness so both sides notice the cut within seconds: ping after 1 s, dead after 3 s.
FAST = ["--ping-interval-ms", "1000", "--dead-after-ms", "3000"]
SIZE = 40 << 20
# The sender's link is shaped to this rate (tbf on its eth0) so the cut lands mid-transfer
# on any machine: 40 MiB at 100 Mbit/s is ~3.4 s of data.
RATE = "100mbit"
# Cut once this much is verified at the receiver: past a few checkpoints (every 4 MiB).
CUT_AFTER = 12 << 20
CHUNK = 65536


@pytest.fixture
def lab2(request):
    yield from lab_module.lab_for_test(request, hosts=2, log_lines=80)


def lab_node(lab, host):
    return lab.node(host, extra_args=FAST)


def transfer(node, tid):
    found = node.call("files.list", {"id": tid})["transfers"]
    return found[0] if found else None


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def test_link_cut_mid_transfer_resumes_from_a_verified_chunk_and_completes(lab2):
    t0 = time.monotonic()
    h1, h2 = lab_node(lab2, "h1").start(), lab_node(lab2, "h2").start()
    wait_until(lambda: h1.online("h2") and h2.online("h1"), timeout=30, what="h1 and h2 online")
    for a, b in ((h1, h2), (h2, h1)):
        a.call("trust.verify", {"peer": b.name, "fingerprint": b.whoami()["fingerprint"]})
    # A verified sender's file under 64 MiB is taken without asking.
    src = lab2.dir / "cut.bin"
    with open(src, "wb") as f:
        f.write(os.urandom(SIZE))
    lab2.exec("h1", ["tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", RATE, "burst", "64kb",
                     "latency", "100ms"])
    tid = h1.send_files("h2", [src])["transfers"][0]["id"]

    wait_until(lambda: ((transfer(h2, tid) or {}).get("bytesDone") or 0) >= CUT_AFTER, timeout=30,
               interval=0.02, what="h2 has verified a few checkpoints")
    lab2.lanlab("cut", "h2")
    cut_at = transfer(h2, tid)["bytesDone"]
    assert cut_at < SIZE, "the transfer ended before the cut: lower RATE"
    t_cut = time.monotonic()
    wait_until(lambda: not h1.online("h2") and not h2.online("h1"), timeout=15, what="both sides notice the cut")
    lab_module.record("files: both sides notice a link cut (ping 1 s, dead after 3 s)", time.monotonic() - t_cut)
    assert transfer(h1, tid)["state"] == "transferring" and transfer(h2, tid)["state"] == "transferring"
    lab2.lanlab("heal", "h2")
    t_heal = time.monotonic()

    done = wait_until(lambda: (lambda t: t if t and t["state"] != "transferring" else None)(transfer(h2, tid)),
                      timeout=40, what="the transfer ends at h2 after the heal")
    lab_module.record("files: heal -> 40 MiB transfer completed", time.monotonic() - t_heal)
    assert done["state"] == "completed", done
    sent = wait_until(lambda: (lambda t: t if t and t["state"] != "transferring" else None)(transfer(h1, tid)),
                      timeout=10, what="h1 hears the end")
    assert sent["state"] == "completed", sent
    data = src.read_bytes()
    chunk_hashes = b"".join(hashlib.blake2b(data[i:i + 65536], digest_size=32).digest()
                            for i in range(0, len(data), 65536))
    assert done["contentHash"] == sent["contentHash"] == hashlib.blake2b(chunk_hashes, digest_size=32).hexdigest()
    assert sha256(done["path"]) == sha256(src)
    # One file, no partial, no duplicate "cut (1).bin".
    assert sorted(os.listdir(h2.state_dir / "files")) == ["cut.bin"]

    # The sender's log names every fileWant: the accept from 0, then the resume from the
    # receiver's durable count, which is a checkpoint > 0 (not a restart from 0).
    wants = [(int(m.group(1)), m.group(2)) for m in
             re.finditer(r"file requested .*?from=(\d+) list=(\w+)", h1.log_path.read_text(errors="replace"))]
    assert wants[0] == (0, "true"), wants
    resumes = [f for f, _ in wants[1:]]
    assert resumes, f"no resume after the heal: {wants}"
    assert all(f > 0 and f % 64 == 0 for f in resumes), wants
    # The durable count lags what was verified by less than one checkpoint (64 chunks).
    assert resumes[0] * CHUNK >= CUT_AFTER - 64 * CHUNK, (resumes, cut_at)
    assert all(l == "false" for _, l in wants[1:]), "the verified hash list is kept across the cut"
    lab_module.record("files: lab link-cut test, total", time.monotonic() - t0)
