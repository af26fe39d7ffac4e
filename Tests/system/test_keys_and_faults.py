"""Issue 7: key lifecycle (rotation, stale keys), the optional network key, and faults
(a corrupt or locked store, a full disk, a clock that jumps)."""
import json
import os
import shutil
import sqlite3
import subprocess
import time

import pytest

from parley_harness import PARLEYD, RPCError, wait_until


def write_network_key(path, byte):
    path.write_text(f"{byte:02x}" * 32 + "\n")
    os.chmod(path, 0o600)
    return str(path)


def test_network_key_keeps_outsiders_out_and_blind(cluster):
    key = write_network_key(cluster.dir / "office.key", 0x5A)
    alice = cluster.node("alice", extra_args=["--network-key", key]).start()
    bob = cluster.node("bob", peers=[alice.address], extra_args=["--network-key", key]).start()
    wait_until(lambda: alice.online("bob"), what="members connect")
    other = write_network_key(cluster.dir / "other.key", 0x11)
    carol = cluster.node("carol", peers=[alice.address], extra_args=["--network-key", other]).start()
    dave = cluster.node("dave", peers=[alice.address]).start()  # no key at all
    for outsider in (carol, dave):
        # Positive evidence that an outsider's dial reaches alice and fails: a dial of its
        # own, waited for (its configured dial at start fails the same way, unseen).
        with pytest.raises(RPCError):
            outsider.call("peers.connect", {"address": alice.address, "wait": True})
        assert outsider.call("peers.list")["peers"] == [], "an outsider learned a member's identity"
    names = {p["name"] for p in alice.call("peers.list")["peers"]}
    assert names == {"bob"}
    bob.cli("send", "alice", "members only", "--wait")
    # A key file readable by others is refused, like ssh.
    loose = cluster.dir / "loose.key"
    write_network_key(loose, 0x5A)
    os.chmod(loose, 0o644)
    p = subprocess.run([PARLEYD, "--state-dir", str(cluster.dir / "x"), "--network-key", str(loose), "--no-mdns",
                        "--listen", "127.0.0.1:0", "--socket", str(cluster.dir / "x.sock")],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode != 0 and "loose.key" in p.stderr + p.stdout


def test_rotate_key_reaches_online_and_offline_peers_and_the_old_key_is_refused(cluster):
    alice = cluster.node("alice").start()
    bob = cluster.node("bob", peers=[alice.address]).start()
    carol = cluster.node("carol", peers=[alice.address]).start()
    wait_until(lambda: alice.online("bob") and alice.online("carol"), what="all online")
    # Keep a copy of alice's current (soon old) keys and card.
    alice.stop()
    old_state = cluster.dir / "alice-old-state"
    shutil.copytree(alice.state_dir, old_state)
    alice.start()
    wait_until(lambda: alice.online("bob") and alice.online("carol"), timeout=20, what="back online")
    carol.stop()
    before = alice.whoami()
    out = alice.cli("rotate-key", "--json").stdout
    after = alice.whoami()
    assert after["noiseKey"] != before["noiseKey"] and after["cardSequence"] > before["cardSequence"]
    assert after["fingerprint"] == before["fingerprint"]
    assert '"peersNotified"' in out
    wait_until(lambda: "re-issued its card" in bob.log_path.read_text(), what="bob gets the new card at once")
    carol.start()
    wait_until(lambda: alice.online("carol"), timeout=20, what="carol back, meets the new card in the handshake")
    alice.cli("send", "bob", "after rotation", "--wait")
    # Someone holding alice's OLD Noise key and card dials bob and carol: refused.
    old = cluster.node("alice", state_dir=old_state, peers=[bob.address, carol.address])
    old.socket = cluster.dir / "alice-old.sock"
    old.listen_arg = "127.0.0.1:0"
    old.start()
    for victim in (bob, carol):
        wait_until(lambda: "older card" in victim.log_path.read_text(), timeout=20,
                   what=f"{victim.name} refuses the stale card")
    # Refused at the handshake: no session, so nothing can have reached the old key.
    assert [m for m in old.messages() if m["direction"] == "in"] == []


def test_corrupt_store_is_a_clear_error_and_never_a_new_identity(cluster):
    node = cluster.node("solo").start()
    fp = node.whoami()["fingerprint"]
    node.stop()
    ident = (node.state_dir / "identity.key").read_bytes()
    db = node.state_dir / "parley.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    for side in ("-wal", "-shm"):
        (node.state_dir / f"parley.sqlite{side}").unlink(missing_ok=True)
    node.start(wait=False)
    assert node.proc.wait(timeout=20) != 0
    log = node.log_path.read_text()
    assert "parley.sqlite" in log, log[-500:]
    assert (node.state_dir / "identity.key").read_bytes() == ident
    p = subprocess.run([PARLEYD, "--state-dir", str(node.state_dir), "--print-card"], capture_output=True, text=True)
    assert p.returncode != 0 and "parley.sqlite" in p.stderr
    assert fp  # the identity file was left untouched: no silent new identity


def test_locked_store_is_a_clear_error(cluster):
    node = cluster.node("solo").start()
    node.stop()
    db = sqlite3.connect(node.state_dir / "parley.sqlite", timeout=0)
    db.execute("PRAGMA locking_mode=EXCLUSIVE")
    db.execute("BEGIN EXCLUSIVE")
    try:
        node.start(wait=False)
        code = node.proc.wait(timeout=30)
        assert code != 0
        log = node.log_path.read_text()
        assert "parley.sqlite" in log and "lock" in log.lower(), log[-500:]
    finally:
        db.rollback()
        db.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs (CI runs as root)")
def test_full_disk_refuses_clearly_and_loses_nothing_accepted(cluster):
    alice = cluster.node("alice")
    alice.state_dir.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(alice.state_dir)], check=True)
    try:
        alice.start()
        bob = cluster.node("bob", peers=[alice.address]).start()
        wait_until(lambda: alice.online("bob"), what="online")
        bob.stop()
        wait_until(lambda: not alice.online("bob"), what="bob down")
        accepted, error = [], None
        r = alice.rpc()
        for i in range(400):  # 400 x 8 KiB is well over 1 MiB: the disk fills first
            try:
                res = r.call("messages.send", {"to": "bob", "body": f"{i:04d}" + "x" * 8000})
                accepted.append(res["message"]["id"])
            except RPCError as e:
                error = e
                break
        r.close()
        assert error is not None and error.code == -32005, "a full disk must be a clear storage error"
        assert "nothing was accepted" in str(error.error.get("message", ""))
        assert accepted, "some messages fit before the disk filled"
        bob.start()
        def got_all():
            ids = {m["id"] for m in bob.messages("alice") if m["direction"] == "in"}
            return ids >= set(accepted)
        wait_until(got_all, timeout=60, what="every accepted message delivered")
        ids = [m["id"] for m in bob.messages("alice")]
        assert len(ids) == len(set(ids))
    finally:
        alice.stop()
        subprocess.run(["umount", "-l", str(alice.state_dir)])


LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


@pytest.mark.skipif(not os.path.exists(LIBFAKETIME), reason="libfaketime (Debian package faketime) not installed")
def test_wall_clock_jumps_under_a_running_daemon_break_nothing(cluster):
    """Timers (keepalive, dead-after, ack timeout, retries) run on the monotonic clock;
    only timestamps follow the wall clock. libfaketime, preloaded, fakes CLOCK_REALTIME
    alone (FAKETIME_DONT_FAKE_MONOTONIC) and re-reads its offset from a file, so bob's wall
    clock jumps a day ahead and then an hour behind real time while he runs, with a 1 s
    keepalive and 3 s dead-after that a wall-clock timer would trip. (Preloaded this way,
    libfaketime hides argv from Swift's runtime, so bob is configured by parleyd.toml in
    XDG_CONFIG_HOME; the `faketime` wrapper, which keeps argv, ignores the offset file.)"""
    alice = cluster.node("alice", extra_args=["--ping-interval-ms", "1000", "--dead-after-ms", "3000"]).start()
    offset = cluster.dir / "bob-clock-offset"
    offset.write_text("+0\n")
    config_home = cluster.dir / "bob-config"
    (config_home / "parley").mkdir(parents=True)
    bob_socket = cluster.dir / "bob.sock"
    (config_home / "parley" / "parleyd.toml").write_text(
        f'name = "bob"\nstate_dir = "{cluster.dir / "bob-state"}"\nsocket = "{bob_socket}"\n'
        f'listen = ["127.0.0.1:0"]\npeers = ["{alice.address}"]\nmdns = false\nlog_level = "debug"\n'
        'durability = "normal"\nping_interval_ms = 1000\ndead_after_ms = 3000\n')
    env = dict(os.environ, XDG_CONFIG_HOME=str(config_home), LD_PRELOAD=LIBFAKETIME,
               FAKETIME_TIMESTAMP_FILE=str(offset), FAKETIME_NO_CACHE="1", FAKETIME_DONT_FAKE_MONOTONIC="1")
    env.pop("NOTIFY_SOCKET", None)
    log = open(cluster.dir / "bob.log", "ab")
    proc = subprocess.Popen([PARLEYD], env=env, stdout=log, stderr=subprocess.STDOUT)
    bob = cluster.node("bob")  # a handle on the same socket and log, to talk to him
    bob.proc = proc
    try:
        # bob dials his configured peer before his control socket listens (a few ms), so
        # alice can see him online while bob.sock does not exist yet: wait for it first (the
        # harness's start() does this for the nodes it starts; bob is started by hand).
        wait_until(bob_socket.exists, timeout=20, what="bob's control socket")
        wait_until(lambda: alice.online("bob") and bob.online("alice"), timeout=20, what="session")

        def sent_at(body):
            return json.loads(bob.cli("send", "alice", body, "--wait", "--json").stdout)["message"]["createdAt"]

        def log_text():
            return (cluster.dir / "bob.log").read_text(errors="replace")

        day, hour = 86_400_000, 3_600_000
        t0 = sent_at("before")
        offset.write_text("+1d\n")
        wait_until(lambda: sent_at("probe ahead") - t0 > day - 60_000, timeout=15,
                   what="bob's wall clock a day ahead")
        time.sleep(4)  # longer than dead-after: a timer on the wall clock would have fired
        t1 = sent_at("a day later")
        assert day - 60_000 < t1 - t0 < day + 60_000, (t0, t1)
        offset.write_text("-1h\n")
        wait_until(lambda: sent_at("probe behind") < t0, timeout=15, what="bob's wall clock an hour behind")
        time.sleep(4)  # again longer than dead-after, now with the wall clock behind (a real-time condition)
        t2 = sent_at("an hour earlier")
        assert t0 - hour - 60_000 < t2 < t0, (t0, t2)
        # The session never dropped, nothing timed out, and alice has every message once,
        # in the order they were sent (history is in arrival order, not timestamp order).
        assert alice.online("bob") and bob.online("alice")
        assert "session down" not in log_text() and "peer silent" not in log_text()
        bodies = [m["body"] for m in alice.messages("bob") if m["direction"] == "in"]
        assert [b for b in bodies if not b.startswith("probe")] == ["before", "a day later", "an hour earlier"]
        alice.cli("send", "bob", "still talking", "--wait")
        assert [m["body"] for m in bob.messages("alice") if m["direction"] == "in"] == ["still talking"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.mark.skipif(shutil.which("faketime") is None, reason="faketime (Debian package faketime) not installed")
def test_clock_a_year_ahead_does_not_break_sessions(cluster):
    alice = cluster.node("alice").start()
    bob = cluster.node("bob", peers=[alice.address])
    # Only the wall clock jumps, as on a real machine whose clock is set wrong: a faked
    # monotonic clock would also move libdispatch's timerfd deadlines a year ahead, so the
    # daemon's own Task.sleep (used when shutting down) would never return.
    bob.env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
    bob.launcher = ["faketime", "-f", "+365d"]
    bob.start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), what="session despite the clock")
    bob.cli("send", "alice", "from the future", "--wait")
    alice.cli("send", "bob", "from the past", "--wait")
    got = [m for m in alice.messages("bob") if m["direction"] == "in"]
    assert got[0]["body"] == "from the future"
