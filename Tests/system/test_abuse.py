"""Issue 15: abuse resistance against a real parleyd on loopback. Every resource a hostile
peer can make the daemon keep or produce is bounded, and honest chat keeps flowing meanwhile.
The attacks come from parley-adversary (Sources/parley-adversary)."""
import os
import subprocess
import time

import pytest

from parley_harness import BIN, wait_until

ADVERSARY = str(BIN / "parley-adversary")
FLOOD_SECONDS = int(os.environ.get("PARLEY_FLOOD_SECONDS", "20"))


def rss_kib(node):
    for line in open(f"/proc/{node.proc.pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def start_attack(target, mode, *args, source=None):
    env = dict(os.environ)
    if source:
        env["PARLEY_ADVERSARY_BIND"] = source
    return subprocess.Popen([ADVERSARY, mode, target.address, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def finish(attack, timeout=120):
    out, err = attack.communicate(timeout=timeout)
    assert attack.returncode == 0, err
    return out.strip()


@pytest.fixture
def victim(cluster):
    """alice (the target) with an honest session to bob."""
    alice = cluster.node("alice").start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="honest session")
    return alice, bob


def honest_still_flows(alice, bob, text, timeout=30):
    bob.cli("send", "alice", text, "--wait", timeout=timeout)
    assert text in [m["body"] for m in alice.messages("bob")]


def test_non_reading_peer_flooding_pings_keeps_the_victims_memory_bounded(victim):
    """A peer with a 4 KiB receive buffer that never reads sends ~5,000 pings per frame for
    12 s. Before issue 15 every ping got a pong written whether or not the channel was
    writable: the victim's RSS grew by gigabytes. Now the pings of one read get one pong and
    the victim stops reading from a peer that does not take its answers."""
    alice, bob = victim
    before = rss_kib(alice)
    attack = start_attack(alice, "ping-flood", FLOOD_SECONDS)
    peak = before
    sent_during = 0
    deadline = time.monotonic() + FLOOD_SECONDS
    while time.monotonic() < deadline and attack.poll() is None:
        peak = max(peak, rss_kib(alice))
        if sent_during < 3:
            honest_still_flows(alice, bob, f"during the ping flood {sent_during}")
            sent_during += 1
        time.sleep(0.2)
    out = finish(attack)
    peak = max(peak, rss_kib(alice))
    print(f"victim RSS before {before} KiB, peak {peak} KiB, growth {peak - before} KiB; adversary: {out}")
    assert out.startswith("sent"), out
    assert sent_during == 3, "honest messages went through during the flood"
    assert alice.proc.poll() is None
    assert peak - before < 48 * 1024, (before, peak)
    honest_still_flows(alice, bob, "after the ping flood")
