#!/usr/bin/env python3
"""Row 8 of `make bench` (docs/BENCHMARKS.md): discovery and presence in the LAN lab.

    scripts/bench-discovery.py RESULT.json --parleyd .build/release/parleyd [--rounds 5] [--quick]

Builds a two-host lab with scripts/lanlab (network namespaces on a bridge, one
avahi-daemon per host; nothing leaves this machine), measures, writes ONE JSON object to
RESULT.json and always tears the lab down (also on SIGTERM). Needs root. parley-bench
runs it; it can also be run by hand.

What is measured (every sample in milliseconds, monotonic clock of this one process):
  register   8a  process start on h1 -> its advertisement seen by `avahi-browse -p` on h2
                 (the observer, started afresh each round), with nothing else on h2. Three
                 publishers, alternating: parleyd; `avahi-publish -s` (the reference); and
                 `avahi-publish -s` plus `avahi-browse` of the same type on h1, which is
                 what parleyd asks of avahi (it advertises and browses). A browse on the
                 publishing host makes avahi answer with the new record before its probing
                 ends, so the second reference is seen ~4x sooner than the first.
  session    8b  parleyd start on h1 -> h2's parleyd emits peer.online for h1 (h2 running,
                 with a subscriber); "seenAfterOnline" is when h2's observer then saw h1's
                 advertisement (h1 knows h2 from its avahi's cache and dials at once)
  clean      8c  SIGTERM to h1's parleyd -> h2 emits peer.offline (the goodbye record)
  crash      8d  h1's link cut (a host that crashed or lost power: no FIN, no goodbye) ->
                 h2 emits peer.offline; only the heartbeat can tell
  kill           SIGKILL to h1's parleyd -> peer.offline (the kernel still closes its TCP
                 connection, so this is not the heartbeat path; shown beside 8d)

The result: {"skipped": reason} if the lab cannot be built here, else
{"rounds", "pingIntervalMs", "deadAfterMs", "browserAgeMs",
 "register": {"parley": [...], "reference": [...], "referenceBrowsing": [...]},
 "startToOnline", "seenAfterOnline", "clean", "crash", "kill": [...], "errors": {phase: text}}.
A phase that fails leaves its lists short and says why in "errors"; the others still run.
Every wait is bounded; the whole run is bounded by the number of rounds.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "system"))
import lab as lablib  # noqa: E402  (the lab helpers the system tests use)

# Liveness of every parleyd in the lab (docs/PROTOCOL.md "Liveness"): the application
# ping at its default (10 min: it plays no part), dead-after scaled down five times from
# 15 s, so the kernel keepalive probes every second and gives up after 3 s (8d measures
# exactly that layer). --quick (the smoke run) pings every 200 ms and is dead after 600 ms.
PING_INTERVAL_MS = 600_000
DEAD_AFTER_MS = 3000
QUICK_PING_INTERVAL_MS = 200
QUICK_DEAD_AFTER_MS = 600
# Most rounds accepted: every round restarts a daemon and takes a few seconds.
MAX_ROUNDS = 20
# Age of the observer (avahi-browse on h2) when the publisher starts. A browser queries
# at once, after 1 s, then at growing intervals, and a query that reaches h1 while it is
# still probing is answered at once, so the time "seen" would depend on where the start
# falls in the observer's schedule. At 1.5 s its next query comes after h1's announcement
# (~0.8-1 s after the start), so no round is shortened by a query that happened to fall in
# the probing window (an observer 1 s old was: 0.16 s instead of 0.8 s).
BROWSER_AGE_SECONDS = 1.5
# Time for a session that just came up to finish its first exchanges before h1 goes away.
SESSION_SETTLE_SECONDS = 0.3
# How long one advertisement, session or offline event may take before the phase fails.
SEEN_TIMEOUT = 20.0
ONLINE_TIMEOUT = 30.0
WITHDRAWN_TIMEOUT = 15.0
DAEMON_READY_TIMEOUT = 20.0
CONTROL_TIMEOUT = 5.0
# A crash is seen within dead-after (kernel keepalive) or dead-after + one ping interval +
# one tick (application ping, --quick). Wait with a wide margin before calling it missed.
CRASH_TIMEOUT_FACTOR = 4
# The name every parleyd in the lab listens on; hosts have their own addresses.
LISTEN = "0.0.0.0:7744"
REF_TYPE = "_parleyref._tcp"
PARLEY_TYPE = "_parley._tcp"


STARTED = time.monotonic()


class Terminated(Exception):
    """SIGTERM from parley-bench at its deadline: tear the lab down and leave."""


def on_sigterm(signum, frame):
    raise Terminated()


class Lines:
    """Lines (or JSON messages) read by a thread, each with the monotonic time it was read."""

    def __init__(self):
        self.items: List[Tuple[float, object]] = []
        self.cond = threading.Condition()
        self.closed = False

    def add(self, item) -> None:
        with self.cond:
            self.items.append((time.monotonic(), item))
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def mark(self) -> int:
        with self.cond:
            return len(self.items)

    def wait_for(self, predicate: Callable[[object], bool], timeout: float, after: int, what: str) -> Tuple[int, float]:
        deadline = time.monotonic() + timeout
        with self.cond:
            i = after
            while True:
                while i < len(self.items):
                    t, item = self.items[i]
                    if predicate(item):
                        return i, t
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise TimeoutError(f"{what}: not within {timeout} s" + (" (stream closed)" if self.closed else ""))
                self.cond.wait(min(left, 0.2))


def names(line: str, name: str) -> bool:
    """Whether an `avahi-browse -p` line is about instance `name` (`prefix*`: any instance
    whose name starts so)."""
    if name.endswith("*"):
        return f";{name[:-1]}" in line
    return f";{name};" in line


class Browser:
    """`avahi-browse -p TYPE` on a lab host; its "+"/"-" lines, timestamped as read."""

    def __init__(self, lab: lablib.Lab, host: str, service_type: str):
        self.proc = lab.exec(host, ["avahi-browse", "-p", service_type], background=True)

    def mark(self) -> int:
        return len(self.proc.lines())

    def wait_new(self, sign: str, prefix: str, timeout: float, after: int) -> Tuple[int, float, str]:
        """The first `sign` line, from `after` on, for an instance starting with `prefix`
        that the browser had not reported before `after` (parleyd's instance names are
        random: h1's is the new one). Returns (index, time, instance name)."""
        before = {l.split(";")[3] for l in self.proc.lines()[:after] if l.count(";") >= 3}
        try:
            i, t, line = self.proc.wait_for(
                lambda l: l.startswith(sign + ";") and names(l, prefix + "*") and l.split(";")[3] not in before,
                timeout=timeout, after=after)
        except AssertionError as e:
            raise TimeoutError(f"avahi-browse on h2: no new '{sign}' for {prefix}*: {str(e)[-300:]}") from None
        return i, t, line.split(";")[3]

    def wait(self, sign: str, name: str, timeout: float, after: int) -> Tuple[int, float]:
        try:
            i, t, _ = self.proc.wait_for(lambda l: l.startswith(sign + ";") and names(l, name),
                                         timeout=timeout, after=after)
        except AssertionError as e:
            raise TimeoutError(f"avahi-browse on h2: no '{sign}' for {name}: {str(e)[-300:]}") from None
        return i, t


class Subscriber:
    """A control connection to a parleyd with messages.subscribe: its notifications,
    timestamped as they are read."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(CONTROL_TIMEOUT)
        self.sock.connect(str(path))
        self.sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"messages.subscribe"}\n')
        self.lines = Lines()
        self.sock.settimeout(None)
        threading.Thread(target=self._pump, daemon=True).start()
        self.lines.wait_for(lambda m: m.get("id") == 1, CONTROL_TIMEOUT, 0, "messages.subscribe answer")

    def _pump(self) -> None:
        buf = b""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self.lines.add(json.loads(line))
        except (OSError, ValueError):
            pass
        self.lines.close()

    def wait_peer(self, method: str, name: str, timeout: float, after: int) -> Tuple[int, float]:
        return self.lines.wait_for(
            lambda m: m.get("method") == method and m.get("params", {}).get("peer", {}).get("name") == name,
            timeout, after, f"{method} for {name}")

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def control_call(path: Path, method: str) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(CONTROL_TIMEOUT)
        s.connect(str(path))
        s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}).encode() + b"\n")
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("control socket closed")
            buf += chunk
        msg = json.loads(buf.split(b"\n", 1)[0])
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]


class Daemon:
    """parleyd on a lab host (through `lanlab exec`, which execs it: the pid is parleyd's)."""

    def __init__(self, lab: lablib.Lab, host: str, parleyd: str, timers: Tuple[int, int]):
        self.lab, self.host = lab, host
        self.socket = lab.dir / f"{host}.sock"
        self.state = lab.dir / f"{host}-state"
        self.log = lab.dir / f"{host}.log"
        self.argv = [str(lablib.LANLAB), "exec", host, parleyd, "--state-dir", str(self.state),
                     "--name", host, "--socket", str(self.socket), "--listen", LISTEN,
                     "--log-level", "info", "--ping-interval-ms", str(timers[0]),
                     "--dead-after-ms", str(timers[1])]
        self.proc: Optional[subprocess.Popen] = None

    def create_identity(self) -> None:
        """Creates the keys before the first timed start (and warms the page cache)."""
        p = subprocess.run([*self.argv, "--print-card"], env=self.lab.env, capture_output=True,
                           text=True, timeout=DAEMON_READY_TIMEOUT)
        if p.returncode != 0:
            raise RuntimeError(f"parleyd --print-card on {self.host} failed: {p.stderr[-500:]}")

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv, env=self.lab.env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + DAEMON_READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"parleyd on {self.host} exited ({self.proc.returncode}): {self.tail()}")
            try:
                if control_call(self.socket, "node.status").get("mdns") == "on":
                    return
            except (OSError, ConnectionError, RuntimeError, ValueError):
                pass
            time.sleep(0.02)
        raise TimeoutError(f"parleyd on {self.host} not ready with mDNS on within {DAEMON_READY_TIMEOUT} s")

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait_exit(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=lablib.STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=lablib.STOP_TIMEOUT)

    def stop(self) -> None:
        self.signal(signal.SIGTERM)
        self.wait_exit()

    def tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-800:]
        except OSError:
            return ""


def progress(text: str) -> None:
    """One line on stderr (parley-bench's log file) per step, with the time it came at."""
    print(f"bench-discovery: {time.monotonic() - STARTED:7.2f} s  {text}", file=sys.stderr, flush=True)


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def measure(args) -> dict:
    timers = (QUICK_PING_INTERVAL_MS, QUICK_DEAD_AFTER_MS) if args.quick else (PING_INTERVAL_MS, DEAD_AFTER_MS)
    warmups = 0 if args.quick else 1
    out = {"rounds": args.rounds, "pingIntervalMs": timers[0], "deadAfterMs": timers[1],
           "browserAgeMs": ms(BROWSER_AGE_SECONDS),
           "register": {"parley": [], "reference": [], "referenceBrowsing": []}, "startToOnline": [], "seenAfterOnline": [],
           "clean": [], "crash": [], "kill": [], "errors": {}}
    progress("building a 2-host lab")
    with lablib.Lab(hosts=2) as lab:
        progress("lab up; 8a: start on h1 -> seen on h2")
        h1 = Daemon(lab, "h1", args.parleyd, timers)
        h2 = Daemon(lab, "h2", args.parleyd, timers)
        sub = None
        try:
            h1.create_identity()

            # 8a. Nothing runs on h2 but its avahi-daemon and the observer, so what h2 sees
            # is h1's registration alone: the publisher's start, avahi's probing (three
            # probes 250 ms apart) and its announcement.
            def registered(start: Callable[[], object], stop: Callable[[object], None],
                           service_type: str, name: str) -> float:
                browser = Browser(lab, "h2", service_type)
                try:
                    time.sleep(BROWSER_AGE_SECONDS)
                    mark = browser.mark()
                    if any(names(l, name) for l in browser.proc.lines()):
                        raise RuntimeError(f"h2 still had {name}.{service_type} from the last round")
                    t0 = time.monotonic()
                    handle = start()
                    _, t_seen = browser.wait("+", name, SEEN_TIMEOUT, mark)
                    stop(handle)
                finally:
                    browser.proc.stop()
                return t_seen - t0

            def publish(name):
                return [lab.exec("h1", ["avahi-publish", "-s", name, REF_TYPE, "9"], background=True)]

            def publish_and_browse(name):
                # What parleyd does through avahi: advertise, and browse the same type.
                return publish(name) + [lab.exec("h1", ["avahi-browse", "-p", REF_TYPE], background=True)]

            def stop_all(procs):
                for p in procs:
                    p.stop()

            def start_h1():
                h1.start()
                return h1

            try:
                for i in range(warmups + args.rounds):
                    # A name of its own per reference round; h1's own name comes back every
                    # third round, long after its goodbye (RFC 6762 §10.1: gone in 1 s).
                    ref = registered(lambda: publish(f"ref{i}"), stop_all, REF_TYPE, f"ref{i}")
                    # parleyd's instance name is random (private presence, issue 15): any
                    # `parley-*` instance, as nothing else on the lab advertises the type now.
                    reg = registered(start_h1, lambda d: d.stop(), PARLEY_TYPE, "parley-*")
                    both = registered(lambda: publish_and_browse(f"refb{i}"), stop_all, REF_TYPE, f"refb{i}")
                    if i >= warmups:
                        out["register"]["reference"].append(ms(ref))
                        out["register"]["parley"].append(ms(reg))
                        out["register"]["referenceBrowsing"].append(ms(both))
            except (TimeoutError, RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                out["errors"]["register"] = f"{e}; h1 log: {h1.tail()[-300:]}"
                h1.stop()

            # 8b, 8c. h2's parleyd runs (and a subscriber on it): h1 starts, the two find
            # each other and set up a session; then h1 stops cleanly.
            progress("8b, 8c: session with h2, clean stop")
            observer = Browser(lab, "h2", PARLEY_TYPE)
            started = time.monotonic()
            h2.start()
            h2.wait_ready()
            sub = Subscriber(h2.socket)
            time.sleep(max(0.0, BROWSER_AGE_SECONDS - (time.monotonic() - started)))
            try:
                for i in range(warmups + args.rounds):
                    mark_b, mark_s = observer.mark(), sub.lines.mark()
                    t0 = time.monotonic()
                    h1.start()
                    _, t_online = sub.wait_peer("peer.online", "h1", ONLINE_TIMEOUT, mark_s)
                    _, t_seen, h1_instance = observer.wait_new("+", "parley-", SEEN_TIMEOUT, mark_b)
                    time.sleep(SESSION_SETTLE_SECONDS)
                    mark_b, mark_s = observer.mark(), sub.lines.mark()
                    t_term = time.monotonic()
                    h1.signal(signal.SIGTERM)
                    _, t_offline = sub.wait_peer("peer.offline", "h1", ONLINE_TIMEOUT, mark_s)
                    h1.wait_exit()
                    observer.wait("-", h1_instance, WITHDRAWN_TIMEOUT, mark_b)
                    if i >= warmups:
                        out["startToOnline"].append(ms(t_online - t0))
                        out["seenAfterOnline"].append(ms(t_seen - t_online))
                        out["clean"].append(ms(t_offline - t_term))
            except (TimeoutError, RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                out["errors"]["session"] = f"{e}; h1 log: {h1.tail()[-300:]}"
                h1.stop()

            # 8d. h1's link is cut (a host that crashed or lost power: no FIN, no goodbye);
            # only h2's heartbeat can tell. Then, for comparison, SIGKILL of the process.
            def online_h1():
                mark_s = sub.lines.mark()
                h1.start()
                sub.wait_peer("peer.online", "h1", ONLINE_TIMEOUT, mark_s)
                # Idle one to two heartbeats (the shorter of a ping interval and a kernel
                # probe interval, a third of dead-after), so the cut falls anywhere in the cycle.
                beat = min(timers[0], timers[1] / 3) / 1000
                time.sleep(beat * (1 + random.random()))

            progress("8d: link cut, SIGKILL")
            crash_timeout = CRASH_TIMEOUT_FACTOR * (timers[1] + min(timers[0], timers[1])) / 1000
            try:
                for _ in range(args.rounds):
                    online_h1()
                    mark_s = sub.lines.mark()
                    t0 = time.monotonic()
                    lab.lanlab("cut", "h1")
                    _, t_off = sub.wait_peer("peer.offline", "h1", crash_timeout, mark_s)
                    out["crash"].append(ms(t_off - t0))
                    h1.stop()
                    lab.lanlab("heal", "h1")
            except (TimeoutError, RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                out["errors"]["crash"] = str(e)
                h1.stop()
                lab.lanlab("heal", "h1")
            if not args.quick:
                try:
                    online_h1()
                    mark_s = sub.lines.mark()
                    t0 = time.monotonic()
                    h1.signal(signal.SIGKILL)
                    _, t_off = sub.wait_peer("peer.offline", "h1", crash_timeout, mark_s)
                    out["kill"].append(ms(t_off - t0))
                    h1.wait_exit()
                except (TimeoutError, RuntimeError, OSError, subprocess.TimeoutExpired) as e:
                    out["errors"]["kill"] = str(e)
        finally:
            if sub is not None:
                sub.close()
            h1.stop()
            h2.stop()
            progress("tearing the lab down")
    progress("lab down")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("result", help="where to write the JSON result")
    ap.add_argument("--parleyd", required=True, help="the parleyd binary to measure")
    ap.add_argument("--rounds", type=int, default=5, help=f"timed rounds per phase (1..{MAX_ROUNDS})")
    ap.add_argument("--quick", action="store_true", help="smoke run: no warm-up round, faster heartbeat")
    args = ap.parse_args()
    if not 1 <= args.rounds <= MAX_ROUNDS:
        ap.error(f"--rounds must be 1..{MAX_ROUNDS}")
    # Lab hosts run it through nsenter, which starts in another working directory.
    args.parleyd = os.path.abspath(args.parleyd)
    signal.signal(signal.SIGTERM, on_sigterm)
    result: dict
    reason = lablib.unavailable_reason()
    if reason is None and not os.access(args.parleyd, os.X_OK):
        reason = f"{args.parleyd} is not an executable"
    if reason is None:
        for tool in ("avahi-browse", "avahi-publish"):
            if lablib.shutil.which(tool) is None:
                reason = f"'{tool}' not found: install avahi-utils (scripts/install-deps.sh bench)"
    if reason is not None:
        result = {"skipped": reason}
    else:
        try:
            result = measure(args)
        except Terminated:
            result = {"skipped": "stopped by parley-bench at its time limit (lab torn down)"}
        except Exception as e:  # the lab could not be built or a daemon would not start
            result = {"skipped": f"lab run failed: {type(e).__name__}: {str(e)[-600:]}"}
    tmp = args.result + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, args.result)
    summary = {k: (statistics.median(v) if isinstance(v, list) and v else v) for k, v in result.items()}
    print(f"bench-discovery: {json.dumps(summary)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
