"""Issue 5: parleyd as a systemd service: sd_notify protocol, SIGTERM, SIGHUP reload,
configuration file errors. Real processes, a real datagram socket standing in for systemd."""
import os
import signal
import socket
import subprocess
import time

import lab
from parley_harness import PARLEYD, RPC, RPCError, Node, wait_until


def notify_socket(tmpdir):
    path = str(tmpdir / "notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(0.2)
    return s, path


def socket_answers(path):
    try:
        r = RPC(path, timeout=2)
        try:
            return r.call("node.status")
        finally:
            r.close()
    except (OSError, ConnectionError, RPCError):
        return None


def test_sd_notify_ready_status_watchdog_and_stopping(cluster):
    ns, path = notify_socket(cluster.dir)
    node = cluster.node("svc", env={})
    node.env["NOTIFY_SOCKET"] = path
    node.env["WATCHDOG_USEC"] = "400000"  # ping every 200 ms
    node.env["WATCHDOG_PID"] = "0"  # replaced below: must name parleyd's pid or be absent
    del node.env["WATCHDOG_PID"]
    node.start(wait=False)
    messages = []
    ready_at = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and ready_at is None:
        try:
            data = ns.recv(4096).decode()
        except socket.timeout:
            continue
        messages.append((time.monotonic(), data))
        if "READY=1" in data.split("\n"):
            ready_at = time.monotonic()
            # READY=1 only once the control socket answers: it must answer right now.
            assert socket_answers(node.socket), "READY=1 sent before the control socket answers"
    assert ready_at, f"no READY=1; got {messages}"
    assert any(l.startswith("STATUS=") for _, d in messages for l in d.split("\n")), messages
    # Watchdog pings at half WATCHDOG_USEC.
    pings = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2.0:
        try:
            data = ns.recv(4096).decode()
        except socket.timeout:
            continue
        if "WATCHDOG=1" in data.split("\n"):
            pings.append(time.monotonic())
    assert 6 <= len(pings) <= 14, f"{len(pings)} watchdog pings in 2 s (expected ~10)"
    # SIGTERM: STOPPING=1, exit 0 within a few seconds.
    node.proc.send_signal(signal.SIGTERM)
    stopping = False
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not stopping:
        try:
            stopping = "STOPPING=1" in ns.recv(4096).decode().split("\n")
        except socket.timeout:
            pass
    assert stopping, "no STOPPING=1 after SIGTERM"
    assert node.proc.wait(timeout=5) == 0
    ns.close()


def test_sigterm_says_goodbye_so_the_peer_sees_offline_at_once(cluster):
    a = cluster.node("alice").start()
    b = cluster.node("bob", peers=[a.address]).start()
    wait_until(lambda: a.online("bob"), what="online")
    sub = a.rpc(timeout=5)
    sub.call("messages.subscribe")
    t0 = time.monotonic()
    b.proc.send_signal(signal.SIGTERM)
    while True:
        n = sub.next_notification(timeout=5)
        if n["method"] == "peer.offline":
            break
    elapsed = time.monotonic() - t0
    lab.record("clean shutdown (SIGTERM) -> peer.offline on the other node", elapsed)
    assert elapsed < 0.5, "offline on a clean shutdown must come from the goodbye, not a timeout"
    assert b.proc.wait(timeout=5) == 0
    sub.close()


def write_config(path, **kv):
    lines = []
    for k, v in kv.items():
        if isinstance(v, bool):
            lines.append(f"{k} = {'true' if v else 'false'}")
        elif isinstance(v, list):
            lines.append(f"{k} = [" + ", ".join(f'"{x}"' for x in v) + "]")
        else:
            lines.append(f'{k} = "{v}"')
    path.write_text("# test config\n" + "\n".join(lines) + "\n")


def start_with_config(cluster, name, cfg):
    """parleyd with only --config (and the socket): everything else from the file."""
    sock = cluster.dir / f"{name}.sock"
    log = open(cluster.dir / f"{name}.log", "ab")
    p = subprocess.Popen([PARLEYD, "--config", str(cfg), "--socket", str(sock)], stdout=log, stderr=subprocess.STDOUT)
    return p, sock


def test_config_file_sighup_reloads_name_and_peers(cluster):
    alice = cluster.node("alice").start()
    cfg = cluster.dir / "bob.toml"
    state = cluster.dir / "bob-state"
    write_config(cfg, state_dir=str(state), name="bob", listen=["127.0.0.1:0"], mdns=False,
                 log_level="debug", durability="normal")
    p, sock = start_with_config(cluster, "bob", cfg)
    try:
        wait_until(lambda: socket_answers(sock), what="bob up")
        r = RPC(sock)
        before = r.call("node.whoami")
        assert before["name"] == "bob"
        # Change the name, add a static peer, change something that needs a restart.
        write_config(cfg, state_dir=str(state), name="bobby", listen=["127.0.0.1:1"], mdns=False,
                     log_level="debug", durability="normal", peers=[alice.address])
        p.send_signal(signal.SIGHUP)
        wait_until(lambda: RPC(sock).call("node.whoami")["name"] == "bobby", what="name reloaded")
        after = RPC(sock).call("node.whoami")
        assert after["cardSequence"] == before["cardSequence"] + 1
        assert after["fingerprint"] == before["fingerprint"]
        wait_until(lambda: alice.online("bobby"), timeout=15, what="reloaded static peer dialled; new name seen")
        # Listening address is not reloadable: the log says so.
        log = (cluster.dir / "bob.log").read_text()
        assert "restart" in log and "listen" in log
        assert p.poll() is None
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)


def test_config_errors_name_the_key_and_line(cluster):
    cfg = cluster.dir / "bad.toml"
    cfg.write_text('# ok\nname = "x"\nlisen = ["127.0.0.1:0"]\n')
    p = subprocess.run([PARLEYD, "--config", str(cfg), "--print-card"], capture_output=True, text=True, timeout=20)
    assert p.returncode == 78
    assert ":3:" in p.stderr and "lisen" in p.stderr and "listen" in p.stderr, p.stderr
    cfg.write_text('mdns = "yes"\n')
    p = subprocess.run([PARLEYD, "--config", str(cfg), "--print-card"], capture_output=True, text=True, timeout=20)
    assert p.returncode == 78 and ":1:" in p.stderr and "mdns" in p.stderr, p.stderr


def test_flags_win_over_the_file(cluster):
    cfg = cluster.dir / "c.toml"
    state = cluster.dir / "c-state"
    write_config(cfg, state_dir=str(state), name="from-file", mdns=False)
    p = subprocess.run([PARLEYD, "--config", str(cfg), "--name", "from-flag", "--print-card"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    assert "from-flag" in p.stdout


def test_print_card_creates_identity_once_and_reuses_it(cluster):
    state = cluster.dir / "pc"
    args = [PARLEYD, "--state-dir", str(state), "--name", "pc", "--print-card"]
    first = subprocess.run(args, capture_output=True, text=True, timeout=20)
    second = subprocess.run(args, capture_output=True, text=True, timeout=20)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    fp = lambda out: [l for l in out.splitlines() if l.startswith("fingerprint:")][0]
    assert "created a new identity" in first.stdout and "created" not in second.stdout
    assert fp(first.stdout) == fp(second.stdout)
    assert (state / "identity.key").stat().st_mode & 0o777 == 0o600
    assert state.stat().st_mode & 0o777 == 0o700
    # A key file readable by others: refuse, naming the file.
    os.chmod(state / "identity.key", 0o644)
    bad = subprocess.run(args, capture_output=True, text=True, timeout=20)
    assert bad.returncode != 0 and "identity.key" in bad.stderr
