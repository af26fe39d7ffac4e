"""Issue 15 in the LAN lab (network namespaces with their own avahi-daemon; root):
hundreds of fake `_parley._tcp` advertisements all naming one victim address (parleyd's
descriptors and threads stay bounded, the victim receives no more dials than the per-host
rate limit allows); thousands of fresh identities from many lab addresses and from one
IPv6 /64 (the session caps hold, known peers keep their sessions); what a bystander
learns from private presence. Honest nodes still find each other and chat in each."""
import os
import re
import subprocess
import time

import pytest

import lab as lab_module
from parley_harness import Node, wait_until

FAKE_ADVERTS = int(os.environ.get("PARLEY_FAKE_ADVERTS", "500"))
# DialRateLimit: 3 dials at once, then one per 30 s per host (NodeLimits).
DIAL_BURST, DIAL_INTERVAL_S = 3, 30

# A listener that accepts and never answers (a victim that is not a Parley node), counting
# the connections it gets.
SILENT_LISTENER = r'''
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 7744)); s.listen(1024)
held = []
n = 0
while True:
    c, a = s.accept(); n += 1; held.append(c)
    print(f"conn {n} from {a[0]}", flush=True)
'''


@pytest.fixture
def lab3(request):
    yield from lab_module.lab_for_test(request, hosts=3)


def lab_node(lab, host):
    return lab.node(host)


def fds_and_threads(node):
    fds = len(os.listdir(f"/proc/{node.proc.pid}/fd"))
    threads = next(int(l.split()[1]) for l in open(f"/proc/{node.proc.pid}/status") if l.startswith("Threads:"))
    return fds, threads


def test_fake_advertisements_are_bounded_and_dials_to_their_address_rate_limited(lab3):
    h1 = lab_node(lab3, "h1").start()
    h2 = lab_node(lab3, "h2").start()
    wait_until(lambda: h1.online("h2") and h2.online("h1"), timeout=30, what="honest discovery")
    h3_ip = lab3.ip("h3")
    listener = lab3.exec("h3", ["python3", "-c", SILENT_LISTENER], background=True)
    # The fake adverts: avahi-publish on h3, each naming h3 (the victim) at port 7744.
    script = (f"for i in $(seq {FAKE_ADVERTS}); do avahi-publish -s fake$i _parley._tcp 7744 v=1 "
              f">/dev/null 2>&1 & done; wait")
    lab3.exec("h3", ["sh", "-c", script], background=True)
    start = time.monotonic()
    peak_fds, peak_threads = fds_and_threads(h1)
    while time.monotonic() - start < 40:
        fds, threads = fds_and_threads(h1)
        peak_fds, peak_threads = max(peak_fds, fds), max(peak_threads, threads)
        time.sleep(1)  # the sampling period of a 40 s measurement (dials counted per window)
    from_h1 = [l for l in listener.lines() if l.endswith("from " + lab3.ip("h1"))]
    print(f"{FAKE_ADVERTS} fake adverts: h1 peak fds {peak_fds}, threads {peak_threads}; "
          f"h1 dialled the victim {len(from_h1)} times in 40 s; victim at {h3_ip}")
    allowed = DIAL_BURST + 40 // DIAL_INTERVAL_S + 1
    assert len(from_h1) <= allowed, f"{len(from_h1)} dials in 40 s (limit {allowed})"
    assert peak_fds < 1024 and peak_threads < 256, (peak_fds, peak_threads)
    assert h1.proc.poll() is None
    h2.cli("send", "h1", "through the advert storm", "--wait", timeout=30)
    assert "through the advert storm" in [m["body"] for m in h1.messages("h2")]


def online_count(node):
    return len([p for p in node.call("peers.list")["peers"] if p["online"]])


def attack_from(lab, host, count, sources, hold, target):
    """parley-adversary on `host`: `count` fresh identities from `sources` in turn (the
    host's own addresses), held `hold` s after the last. Its first line says when every
    connection was tried ("connected C failed F"), its last one what was still open."""
    return lab.exec(host, [lab_module.binary("parley-adversary"), "identities", target, str(count),
                           ",".join(sources), str(hold)], background=True)


def result_of(attack, timeout=120):
    _, _, line = attack.wait_for(lambda l: l.startswith("established "), timeout=timeout)
    return [int(x) for x in line.split()[1::2]]  # established, refused, failed


@pytest.fixture
def lab4(request):
    yield from lab_module.lab_for_test(request, hosts=4)


# The victim keeps silent sybils as long as the attack runs: no ping for 60 s, dead after
# 120 s (the defaults, 5 s and 15 s, would drop them while the test counts them).
PATIENT_VICTIM = "ping_interval_ms = 60000\ndead_after_ms = 120000\n"


def test_two_thousand_fresh_identities_from_many_lab_addresses_fill_only_free_slots(lab4):
    """Issue 15.3 across a real LAN: two attacking hosts (h3, h4), each with 50 addresses
    of the lab's /24, open 1,000 connections each with fresh identities. h1 allows 64
    sessions: the sybils take the free ones and no more; bob (h2, known: they exchanged
    messages) keeps his session, chats meanwhile, and after a restart into the full table
    gets a session again by evicting a stranger."""
    config = lab4.dir / "h1.toml"
    config.write_text("max_sessions = 64\n" + PATIENT_VICTIM)
    h1 = lab_node(lab4, "h1")
    h1.extra_args += ["--config", str(config)]
    h1.start()
    h2 = lab_node(lab4, "h2").start()
    wait_until(lambda: h1.online("h2") and h2.online("h1"), timeout=30, what="honest discovery")
    h2.cli("send", "h1", "before the sybils", "--wait", timeout=30)  # h2 is now known to h1
    target = f"{lab4.ip('h1')}:7744"
    attacks = []
    for host, first in (("h3", 100), ("h4", 150)):
        sources = [f"10.79.0.{first + k}" for k in range(50)]
        lab4.add_addresses(host, sources)
        attacks.append(attack_from(lab4, host, 1000, sources, 60, target))
    connected = [int(a.wait_for(lambda l: l.startswith("connected "), timeout=150)[2].split()[1]) for a in attacks]
    peak = online_count(h1)
    print(f"sybils connected from h3, h4: {connected}; peak sessions at h1: {peak}")
    assert peak == 64, "the sybils filled the table, and no more"
    assert "session limit reached" in h1.log_path.read_text(), "the rest were refused at the cap"
    assert h1.online("h2") and h2.online("h1"), "the known peer kept its session"
    h2.cli("send", "h1", "while the table is full", "--wait", timeout=30)
    assert "while the table is full" in [m["body"] for m in h1.messages("h2")]
    h2.stop()
    wait_until(lambda: not h1.online("h2"), timeout=20, what="h1 sees h2 leave")
    # A stranger takes the slot bob left (fresh identities from a new address of h3).
    lab4.add_addresses("h3", ["10.79.0.99"])
    filler = attack_from(lab4, "h3", 3, ["10.79.0.99"], 60, target)
    wait_until(lambda: online_count(h1) >= 64, timeout=30, what="bob's slot taken by a stranger")
    h2.start()
    wait_until(lambda: h1.online("h2") and h2.online("h1"), timeout=30, what="bob back by evicting a stranger")
    assert online_count(h1) <= 64
    h2.cli("send", "h1", "after the restart into a full table", "--wait", timeout=30)
    assert "stranger closed to make room" in h1.log_path.read_text()
    for a in attacks + [filler]:
        a.stop()
    assert h1.proc.poll() is None


def test_an_ipv6_64_full_of_fresh_identities_holds_at_most_its_cap_and_known_peers_keep_theirs(lab4):
    """Issue 15.3, IPv6: one host (h3) takes 300 addresses of the LAN's /64 (a host may
    use any address in its /64, so a cap per address alone bounds nothing) and opens 600
    connections with fresh identities, two per address. h1 keeps at most 256 sessions from
    one /64 (NodeLimits.maxSessionsPerNetwork), whatever the addresses; bob (h2), known and
    talking to h1 over IPv6 from the same /64, keeps his session, and after a restart gets
    one again by evicting a stranger of that /64."""
    config = lab4.dir / "h1.toml"
    config.write_text(PATIENT_VICTIM)
    h1_v6, h2_v6 = lab4.ip6("h1"), lab4.ip6("h2")
    h1 = lab_node(lab4, "h1")
    h1.extra_args += ["--config", str(config), "--listen", f"[{h1_v6}]:7744"]
    h1.start()
    h2 = Node("h2", lab4.dir, launcher=[str(lab_module.LANLAB), "exec", "h2"], listen="0.0.0.0:7744",
              env=lab4.env, state_dir=lab4.dir / "h2-state", peers=[f"[{h1_v6}]:7744"])
    h2.socket = lab4.dir / "h2-h2.sock"
    lab4.nodes.append(h2)
    h2.start()
    wait_until(lambda: h1.online("h2") and h2.online("h1"), timeout=30, what="session over IPv6")
    h2.cli("send", "h1", "before the sybils", "--wait", timeout=30)
    sources = [f"fd79::a:{k:x}" for k in range(1, 301)]
    lab4.add_addresses("h3", sources)
    target = f"[{h1_v6}]:7744"
    attack = attack_from(lab4, "h3", 600, sources, 60, target)
    _, _, line = attack.wait_for(lambda l: l.startswith("connected "), timeout=150)
    sessions = online_count(h1)
    print(f"sybils from one /64: {line}; sessions at h1: {sessions}")
    assert sessions == 256, "bob and 255 sybils: the /64's cap, not the per-address one (2 each)"
    assert h1.online("h2"), "the known peer kept its session"
    assert "session limit reached" in h1.log_path.read_text()
    h2.cli("send", "h1", "while the /64 is full", "--wait", timeout=30)
    h2.stop()
    wait_until(lambda: not h1.online("h2"), timeout=20, what="h1 sees h2 leave")
    lab4.add_addresses("h3", ["fd79::b:1"])
    filler = attack_from(lab4, "h3", 3, ["fd79::b:1"], 60, target)
    wait_until(lambda: online_count(h1) >= 256, timeout=30, what="bob's slot taken by a stranger")
    h2.start()
    wait_until(lambda: h1.online("h2") and h2.online("h1"), timeout=30, what="bob back by evicting a stranger")
    assert online_count(h1) == 256
    h2.cli("send", "h1", "after the restart into a full /64", "--wait", timeout=30)
    assert "stranger closed to make room" in h1.log_path.read_text()
    for a in (attack, filler):
        a.stop()
    assert h1.proc.poll() is None


def current_instance(node, not_this=None):
    """The mDNS instance name `node` advertises now: random per start, the last one its
    log names (`not_this`: the one of its previous start, so a restart's is awaited)."""
    def instance():
        names = re.findall(r"advertised on mDNS.*?instance[=:]\s*\"?(parley-[^\s\"]+)", node.log_path.read_text())
        return names[-1] if names and names[-1] != not_this else None
    return wait_until(instance, timeout=20, what=f"{node.name}'s advertised instance")


def write_network_key(path, byte):
    path.write_text(bytes([byte]).hex() * 32 + "\n")
    os.chmod(path, 0o600)
    return str(path)


@pytest.mark.parametrize("with_network_key", [False, True])
def test_a_bystander_browsing_learns_no_fingerprint_and_no_name_while_contacts_find_each_other(lab3, with_network_key):
    """Private presence: h3, a bystander, browses and resolves `_parley._tcp` (avahi-browse
    -r shows instance names and TXT records). Before issue 15 it read each node's
    fingerprint and display name; now only random instance names and tokens. h1 and h2
    still find each other and their session comes up within row 8's time."""
    extra = []
    if with_network_key:
        extra = ["--network-key", write_network_key(lab3.dir / "office.key", 0x5A)]
    h1 = lab_node(lab3, "h1")
    h1.extra_args += extra
    h2 = lab_node(lab3, "h2")
    h2.extra_args += extra
    h1.start()
    h2.start()
    t0 = time.monotonic()
    wait_until(lambda: h1.online("h2") and h2.online("h1"), timeout=30, interval=0.05, what="contacts find each other")
    found = time.monotonic() - t0
    # Once more after a restart of h2: now they are contacts, recognised by the token alone.
    h2_before = current_instance(h2)
    h2.stop()
    h2.start()
    t1 = time.monotonic()
    wait_until(lambda: h1.online("h2") and h2.online("h1"), timeout=30, interval=0.05, what="contacts again")
    again = time.monotonic() - t1
    # What the bystander sees: h3 browses and resolves until it has resolved the instance
    # each node advertises now. Not `avahi-browse -rt`: with -t it exits only once every
    # resolve it started has ended, and when an instance is removed while being resolved
    # (h2's instance from before the restart, still in h3's cache until the goodbye's
    # 1 s TTL runs out) avahi-browse frees that resolver without counting it as ended
    # (avahi-browse.c, remove_service), so it never exits. Without -t, we stop it.
    instances = [current_instance(h1), current_instance(h2, not_this=h2_before)]
    browser = lab3.exec("h3", ["avahi-browse", "-rp", "_parley._tcp"], background=True)
    for instance in instances:
        browser.wait_for(lambda l, i=instance: l.startswith("=;") and f";{i};" in l, timeout=30)
    browser.stop()
    seen = "\n".join(browser.lines())
    print(f"network key: {with_network_key}; first session {found:.2f} s, after restart {again:.2f} s; "
          f"bystander saw:\n{seen}")
    assert "_parley._tcp" in seen and "=;" in seen, "the bystander does see that Parley nodes are there"
    for node in (h1, h2):
        fp = node.whoami()["fingerprint"]
        for secret in (fp, fp.replace("-", ""), fp.replace("-", "").lower()):
            assert secret not in seen, f"{node.name}'s fingerprint is readable by a bystander"
        assert f";{node.name};" not in seen and f"\"{node.name}" not in seen, f"{node.name}'s name is readable"
    assert '"fp=' not in seen
    assert again < 10 and found < 10


REPLAY_SECONDS = int(os.environ.get("PARLEY_REPLAY_SECONDS", "25"))


def test_a_replayed_presence_advertisement_draws_no_dial_while_its_peer_is_connected(lab3):
    """Issue 29 (M3): h3, a bystander, reads h2's current advertisement (its `n` and `t`) and
    re-advertises it under another instance name at h3's own address, where a listener that
    never answers counts connections. Before the fix h1 (h2's contact, in session with it)
    dialled the replayed address 6 times in 40 s, unbounded: a known peer's advertisements
    were not rate-limited, and one 'from elsewhere' was dialled although the session was up.
    Now: no dial at all while h1's session with h2 is up, and the replay is logged."""
    h1 = lab_node(lab3, "h1").start()
    h2 = lab_node(lab3, "h2").start()
    wait_until(lambda: h1.online("h2") and h2.online("h1"), timeout=30, what="contacts in session")
    instance = current_instance(h2)
    browser = lab3.exec("h3", ["avahi-browse", "-rp", "_parley._tcp"], background=True)
    _, _, line = browser.wait_for(lambda l: l.startswith("=;") and f";{instance};" in l and ";IPv4;" in l, timeout=30)
    browser.stop()
    txt = dict(kv.split("=", 1) for kv in re.findall(r'"([^"]*)"', line.split(";", 9)[9]))
    assert {"v", "n", "t"} <= txt.keys(), line
    listener = lab3.exec("h3", ["python3", "-c", SILENT_LISTENER], background=True)
    lab3.exec("h3", ["avahi-publish", "-s", "parley-replay", "_parley._tcp", "7744",
                     f"v={txt['v']}", f"n={txt['n']}", f"t={txt['t']}"], background=True)
    # h1 sees the replay (it resolves it: the log names it once it was judged).
    wait_until(lambda: "presence token was advertised again" in h1.log_path.read_text(), timeout=30,
               what="h1 notices the replayed token")
    start = time.monotonic()
    while time.monotonic() - start < REPLAY_SECONDS:
        assert h1.online("h2")
        time.sleep(1)  # the sampling period of a REPLAY_SECONDS measurement (dials counted per window)
    from_h1 = [l for l in listener.lines() if l.endswith("from " + lab3.ip("h1"))]
    print(f"replayed advertisement of h2 at {lab3.ip('h3')}: h1 dialled it {len(from_h1)} times in {REPLAY_SECONDS} s")
    assert from_h1 == [], from_h1
    h2.cli("send", "h1", "still here", "--wait", timeout=30)
