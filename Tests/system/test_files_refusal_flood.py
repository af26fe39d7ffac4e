"""Issue 18 leftover: a hostile peer floods offers the receiver refuses at once (here 2^63
bytes, over every limit). Each is answered with a failed `fileEnd`, but refusals become
stored rows (and `file.failed` events) only at RefusalRecordLimit's rate per sender: a
burst of 8, then one per 6 s (Sources/ParleyNodeCore/Files/RefusalRecordLimit.swift), so
the flood costs a handful of store writes, not one per offer. The daemon stays responsive
and the flooder's own chat still arrives."""
import subprocess
import time

from parley_harness import bin_dir

ADVERSARY = str(bin_dir() / "parley-adversary")
OFFERS = 400
# RefusalRecordLimit's defaults.
BURST = 8
INTERVAL_SECONDS = 6
# Node.maxRefusedOffersKeptPerPeer: without the rate bound, the flood would leave this many.
KEPT_PER_PEER = 32


def test_a_flood_of_refused_offers_is_answered_but_listed_only_at_the_bound(cluster):
    victim = cluster.node("victim").start()
    t0 = time.monotonic()
    p = subprocess.run([ADVERSARY, "offer-flood", victim.address, str(OFFERS)], capture_output=True,
                       text=True, timeout=120)
    took = time.monotonic() - t0
    assert p.returncode == 0, p.stdout + p.stderr
    # Every offer was refused and the sender told; the session survived and carried a chat.
    assert p.stdout.splitlines() == [f"ended {OFFERS}", "chat acked"], p.stdout + p.stderr

    # The daemon answers at once after the flood.
    t1 = time.monotonic()
    victim.call("node.status")
    assert time.monotonic() - t1 < 2

    refused = [t for t in victim.call("files.list", {"limit": 1000})["transfers"]
               if t["direction"] == "in" and t["state"] == "failed"]
    bound = BURST + int(took // INTERVAL_SECONDS) + 1
    print(f"{OFFERS} refused offers answered in {took:.2f} s: {len(refused)} listed (bound {bound})")
    assert 1 <= len(refused) <= bound, (len(refused), bound, took)
    # The bound is the rate limit's, not the per-peer row cap's.
    assert bound < KEPT_PER_PEER, f"the flood took {took:.1f} s: too slow to tell the two bounds apart"
    assert all(t["name"].startswith("flood-") and t["error"] for t in refused), refused

    # The flooder's chat arrived.
    bodies = [m["body"] for m in victim.call("messages.list", {"limit": 10})["messages"]]
    assert "still here after the flood" in bodies, bodies

    # One log line for the run of dropped refusals, not one per offer.
    log = victim.log_path.read_text(errors="replace")
    assert log.count("refused file offers from this peer arrive too fast") == 1, victim.log_tail(20)
