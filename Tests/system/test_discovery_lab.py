"""mDNS discovery across real hosts: parley-mdns (ParleyDiscovery) in a scripts/lanlab lab,
each host with its own avahi-daemon, multicast crossing a bridge between namespaces."""
import secrets
import signal
import tempfile
import time
from pathlib import Path

from lab import binary, parse_found, record, unescape

# mDNS needs about a second (avahi probes a name 3 x 250 ms before announcing it, and the
# browser's query is answered within ~100 ms); ten times that is a hang, not slowness.
DISCOVERY_TIMEOUT = 15
# Goodbye packets (TTL 0) are sent at once on withdrawal; the browser reports within ~1 s.
WITHDRAW_TIMEOUT = 10
# After avahi comes back: the retry interval (2 s) plus registration and discovery.
RECOVERY_TIMEOUT = 20
FINGERPRINT = "0123456789abcdefghijklmnopqrstuv"  # compact fingerprint form: 32 characters


def unique(name: str) -> str:
    return f"{name}-{secrets.token_hex(2)}"


def mdns(*args: str) -> list:
    return [binary("parley-mdns"), *args]


def is_found(name):
    return lambda line: line.startswith("found ") and parse_found(line)["name"] == name


def test_advertisement_is_found_with_address_and_txt(lab):
    name = unique("alice")
    browser = lab.exec("h2", mdns("browse"), background=True)
    # The browser is up (so the time measured is the advertisement's) once it reports a
    # warm-up advertisement of h1.
    warm = unique("warm")
    lab.exec("h1", mdns("advertise", warm, "7099", "v=1"), background=True)
    browser.wait_for(is_found(warm), DISCOVERY_TIMEOUT)
    advertiser = lab.exec("h1", mdns("advertise", name, "7000", "v=1", f"fp={FINGERPRINT}"),
                          background=True)

    _, registered_at, line = advertiser.wait_for(lambda l: l.startswith("registered "), DISCOVERY_TIMEOUT)
    assert line == f"registered {name}"
    _, found_at, line = browser.wait_for(is_found(name), DISCOVERY_TIMEOUT)
    peer = parse_found(line)
    assert peer["host"] == "h1.local"
    assert peer["port"] == 7000
    assert peer["addresses"] == [lab.ip("h1")]
    assert peer["txt"] == {"v": "1", "fp": FINGERPRINT}
    record("advertise on h1 -> registered", registered_at - advertiser.started)
    record("advertise on h1 -> found with address on h2", found_at - advertiser.started)


def test_advertisement_is_withdrawn_on_sigterm(lab):
    name = unique("bob")
    advertiser = lab.exec("h1", mdns("advertise", name, "7001", "v=1"), background=True)
    browser = lab.exec("h2", mdns("browse"), background=True)
    found_index, _, _ = browser.wait_for(is_found(name), DISCOVERY_TIMEOUT)

    advertiser.signal(signal.SIGTERM)
    advertiser.wait_for(lambda l: l == "withdrawn", WITHDRAW_TIMEOUT)
    assert advertiser.wait(WITHDRAW_TIMEOUT) == 0
    signalled = time.monotonic()
    _, lost_at, _ = browser.wait_for(lambda l: l == f"lost {name}", WITHDRAW_TIMEOUT, after=found_index)
    record("SIGTERM on h1 -> lost on h2", lost_at - signalled)


def test_advertiser_survives_avahi_restart(lab):
    name = unique("carol")
    advertiser = lab.exec("h1", mdns("advertise", name, "7002", "v=1"), background=True)
    browser = lab.exec("h2", mdns("browse"), background=True)
    advertiser.wait_for(lambda l: l == f"registered {name}", DISCOVERY_TIMEOUT)
    browser.wait_for(is_found(name), DISCOVERY_TIMEOUT)
    seen = len(browser.lines())
    seen_by_advertiser = len(advertiser.lines())

    lab.lanlab("restart-avahi", "h1")
    restarted = time.monotonic()

    i, _, _ = advertiser.wait_for(lambda l: l.startswith("unavailable "), RECOVERY_TIMEOUT, after=seen_by_advertiser)
    i, _, _ = advertiser.wait_for(lambda l: l == "available", RECOVERY_TIMEOUT, after=i + 1)
    advertiser.wait_for(lambda l: l == f"registered {name}", RECOVERY_TIMEOUT, after=i + 1)
    # h2 saw the goodbyes of the stopping avahi, then the new announcement.
    lost_index, _, _ = browser.wait_for(lambda l: l == f"lost {name}", RECOVERY_TIMEOUT, after=seen)
    _, found_at, _ = browser.wait_for(is_found(name), RECOVERY_TIMEOUT, after=lost_index + 1)
    assert advertiser.proc.poll() is None, "the advertiser must not have needed a restart"
    record("avahi restarted on h1 -> found again on h2", found_at - restarted)


def test_advertiser_waits_for_avahi_to_start(lab):
    lab.lanlab("stop-avahi", "h1")
    name = unique("dave")
    advertiser = lab.exec("h1", mdns("advertise", name, "7003", "v=1"), background=True)
    browser = lab.exec("h2", mdns("browse"), background=True)
    _, _, line = advertiser.wait_for(lambda l: l.startswith("unavailable "), DISCOVERY_TIMEOUT)
    assert "avahi-daemon" in line, line
    assert not any(l.startswith("registered") for l in advertiser.lines())

    lab.lanlab("start-avahi", "h1")
    started = time.monotonic()
    i, _, _ = advertiser.wait_for(lambda l: l == "available", RECOVERY_TIMEOUT)
    advertiser.wait_for(lambda l: l == f"registered {name}", RECOVERY_TIMEOUT, after=i + 1)
    _, found_at, _ = browser.wait_for(is_found(name), RECOVERY_TIMEOUT)
    assert [l for l in advertiser.lines() if l.startswith("unavailable")] == [line], \
        "unavailable is reported once per outage, not on every retry"
    record("avahi started on h1 -> found on h2", found_at - started)


def test_name_conflicts_end_in_distinct_names(lab):
    name = unique("erin")
    # Two on h1 (a local conflict: reported to us, we rename) and one on h2 (a network
    # conflict: avahi renames).
    advertisers = [lab.exec(h, mdns("advertise", name, str(port), "v=1"), background=True)
                   for h, port in [("h1", 7010), ("h1", 7011), ("h2", 7012)]]
    browser = lab.exec("h2", mdns("browse"), background=True)
    registered = set()
    for a in advertisers:
        _, _, line = a.wait_for(lambda l: l.startswith("registered "), DISCOVERY_TIMEOUT)
        registered.add(line.split(" ", 1)[1])
    assert len(registered) == 3, registered
    # Each keeps serving under its final name: the browser sees all three, on their ports.
    ports = {}
    for reg in registered:
        _, _, line = browser.wait_for(is_found(unescape(reg)), DISCOVERY_TIMEOUT)
        peer = parse_found(line)
        ports[peer["port"]] = peer["host"]
    assert ports == {7010: "h1.local", 7011: "h1.local", 7012: "h2.local"}


def test_own_advertisement_is_not_reported(lab):
    alice, bob = unique("alice"), unique("bob")
    a = lab.exec("h1", mdns("advertise", "--browse", alice, "7020", "v=1"), background=True)
    b = lab.exec("h2", mdns("advertise", "--browse", bob, "7021", "v=1"), background=True)
    a.wait_for(is_found(bob), DISCOVERY_TIMEOUT)
    b.wait_for(is_found(alice), DISCOVERY_TIMEOUT)
    # Positive evidence: each browser did get its own advertisement back, and said "own".
    a.wait_for(lambda l: l == f"own {alice}", DISCOVERY_TIMEOUT)
    b.wait_for(lambda l: l == f"own {bob}", DISCOVERY_TIMEOUT)
    assert not any(l.startswith(f"found {alice} ") for l in a.lines()), a.lines()
    assert not any(l.startswith(f"found {bob} ") for l in b.lines()), b.lines()


def test_missing_nss_mdns_is_explained(lab):
    name = unique("frank")
    lab.exec("h1", mdns("advertise", name, "7030", "v=1"), background=True)
    # A browser on h2 whose /etc/nsswitch.conf has no mdns (bind-mounted in a mount
    # namespace of its own, so nothing else sees it).
    nsswitch = Path(tempfile.mkdtemp(prefix="parley-nss-", dir=lab.dir)) / "nsswitch.conf"
    nsswitch.write_text("hosts: files dns\n")
    browser = lab.exec("h2", ["unshare", "-m", "sh", "-c",
                              f'mount --bind "{nsswitch}" /etc/nsswitch.conf && exec "$0" browse',
                              binary("parley-mdns")], background=True)
    _, _, line = browser.wait_for(lambda l: l.startswith("lookup-failed "), DISCOVERY_TIMEOUT)
    assert line.startswith("lookup-failed h1.local "), line
    assert "install libnss-mdns" in line and "mdns4_minimal" in line, line
    assert not any(l.startswith("found ") for l in browser.lines())


def test_updated_advertisement_reaches_browsers(lab):
    name, renamed = unique("gina"), unique("gina-renamed")
    advertiser = lab.exec("h1", mdns("advertise", name, "7040", "v=1", "fp=old"), background=True,
                          stdin_pipe=True)
    browser = lab.exec("h2", mdns("browse"), background=True)
    i, _, _ = browser.wait_for(lambda l: is_found(name)(l) and parse_found(l)["txt"].get("fp") == "old",
                               DISCOVERY_TIMEOUT)

    # TXT and port change under the same name. avahi's resolver reports the TXT and SRV
    # records as they come, so a browser can briefly see the new TXT with the old port
    # (seen once in CI); what must arrive is the new port with the new TXT.
    advertiser.send_line(f"update {name} 7041 v=1 fp=new")
    i, _, line = browser.wait_for(lambda l: is_found(name)(l) and parse_found(l)["txt"].get("fp") == "new"
                                  and parse_found(l)["port"] == 7041, DISCOVERY_TIMEOUT, after=i + 1)

    # New name: the old instance goes, the new one comes.
    advertiser.send_line(f"update {renamed} 7041 v=1 fp=new")
    advertiser.wait_for(lambda l: l == f"registered {renamed}", DISCOVERY_TIMEOUT)
    browser.wait_for(lambda l: l == f"lost {name}", DISCOVERY_TIMEOUT, after=i + 1)
    browser.wait_for(is_found(renamed), DISCOVERY_TIMEOUT, after=i + 1)

    advertiser.send_line("bogus")
    advertiser.wait_for(lambda l: l.startswith("error "), DISCOVERY_TIMEOUT)


def test_a_renamed_instance_keeps_its_txt(lab):
    """docs/PROTOCOL.md "Discovery" (issue 33 item 10): on a name conflict the instance is
    renamed in avahi's style ("NAME #2", ...) by parleyd for a local conflict or by avahi for
    a network one, and only the name changes: the TXT record (`n`, `t`) stays as it was."""
    name = unique("parley-0a1b")
    txts = {7050: {"v": "1", "n": "a" * 16, "t": "b" * 24}, 7051: {"v": "1", "n": "c" * 16, "t": "d" * 24},
            7052: {"v": "1", "n": "e" * 16, "t": "f" * 24}}
    advertisers = [lab.exec(h, mdns("advertise", name, str(port), *[f"{k}={v}" for k, v in txts[port].items()]),
                            background=True)
                   for h, port in [("h1", 7050), ("h1", 7051), ("h2", 7052)]]
    browser = lab.exec("h2", mdns("browse"), background=True)
    registered = set()
    for a in advertisers:
        _, _, line = a.wait_for(lambda l: l.startswith("registered "), DISCOVERY_TIMEOUT)
        registered.add(unescape(line.split(" ", 1)[1]))
    assert name in registered and len(registered) == 3, registered
    for renamed in registered - {name}:
        base, _, number = renamed.rpartition(" #")
        assert base == name and number.isdigit() and int(number) >= 2, renamed
    seen = {}
    for reg in registered:
        _, _, line = browser.wait_for(is_found(reg), DISCOVERY_TIMEOUT)
        peer = parse_found(line)
        seen[peer["port"]] = peer["txt"]
    assert seen == txts
