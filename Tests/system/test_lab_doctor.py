"""Issue 31, `parley doctor` in the lab: right after parleyd starts it reports "starting",
not a failure; with avahi stopped its lines agree and it never advises restarting parleyd;
`parley doctor PEER` finds a cut link that `parley doctor` cannot see."""
import json
import time

import pytest

import lab as lab_module
from parley_harness import wait_until

# Dead after 3 s: the kernel keepalive notices a cut link within seconds (as in test_lab_parleyd).
FAST = ["--dead-after-ms", "3000"]


@pytest.fixture
def lab2(request):
    yield from lab_module.lab_for_test(request, hosts=2)


def doctor(lab, host, node, *extra):
    """`parley doctor --json` on `host`: ({check: finding}, exit status)."""
    p = lab.exec(host, [lab_module.binary("parley"), "doctor", *extra, "--json", "--socket", str(node.socket)],
                 timeout=60)
    assert p.stdout, (p.returncode, p.stderr)
    return {f["check"]: f for f in json.loads(p.stdout)}, p.returncode


def test_doctor_is_patient_at_start_consistent_without_avahi_and_finds_a_cut_link(lab2):
    h1 = lab2.node("h1", extra_args=FAST).start()
    # At once after the start: parleyd is still registering with avahi.
    t0 = time.monotonic()
    f, _ = doctor(lab2, "h1", h1, "--no-dial-back", "--no-multicast-query")
    lab_module.record("doctor right after parleyd started", time.monotonic() - t0)
    assert f["advertisement"]["status"] in ("ok", "warn"), f["advertisement"]
    assert "restart parleyd" not in (f["advertisement"].get("fix") or "")

    h2 = lab2.node("h2", extra_args=FAST).start()
    wait_until(lambda: h1.online("h2") and h2.online("h1"), timeout=30, what="h1 and h2 in session")
    # The session may have come from h2 dialling h1 before h1 resolved h2's advertisement.
    wait_until(lambda: h1.call("doctor.peer", {"peer": "h2"})["advertised"], timeout=30,
               what="h1 has h2's advertisement")
    f, code = doctor(lab2, "h1", h1, "h2")
    assert code == 0 and all(x["status"] == "ok" for x in f.values()), [x for x in f.values() if x["status"] != "ok"]

    # The link to h2 cut: `doctor h2` says it does not answer, and why there is no session.
    lab2.lanlab("cut", "h2")
    try:
        wait_until(lambda: not h1.online("h2"), timeout=20, what="h1 notices h2 is gone")
        t0 = time.monotonic()
        f, code = doctor(lab2, "h1", h1, "h2")
        lab_module.record("doctor PEER with the peer's link cut", time.monotonic() - t0)
        assert code == 1, f
        assert f["address"]["status"] == "ok" and lab2.ip("h2") in f["address"]["detail"], f["address"]
        assert f["reachable"]["status"] == "fail" and "did not answer" in f["reachable"]["detail"], f["reachable"]
        assert "cut" in f["reachable"]["fix"], f["reachable"]
        assert f["session"]["status"] == "fail", f["session"]
        assert f["last seen"]["detail"].startswith("last session"), f["last seen"]
    finally:
        lab2.lanlab("heal", "h2")
    wait_until(lambda: h1.online("h2"), timeout=60, what="h1 redials h2 after the heal")
    f, code = doctor(lab2, "h1", h1, "h2")
    assert code == 0, f

    # An unknown name is named as such, with what to do.
    f, code = doctor(lab2, "h1", h1, "nobody")
    assert code == 1 and f["peer"]["status"] == "fail" and "parley connect" in f["peer"]["fix"], f

    # avahi stopped on h1: one cause, no stale "ok", and no advice to restart parleyd.
    lab2.lanlab("stop-avahi", "h1")
    try:
        wait_until(lambda: h1.call("node.status")["mdns"] == "unavailable", timeout=20,
                   what="parleyd notices avahi is gone")
        f, code = doctor(lab2, "h1", h1, "--no-dial-back", "--no-multicast-query")
        assert code == 1 and f["avahi"]["status"] == "fail", f
        assert f["advertisement"]["status"] != "ok" and f["peers seen"]["status"] != "ok", f
        assert not any("restart parleyd" in (x.get("fix") or "") for x in f.values()), f
        assert "by itself" in f["avahi"]["fix"], f["avahi"]
    finally:
        lab2.lanlab("start-avahi", "h1")
    wait_until(lambda: h1.call("node.status")["mdns"] == "on", timeout=30, what="parleyd back on avahi by itself")
