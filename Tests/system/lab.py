"""Helpers for system tests that need a LAN: a private lab of hosts built by scripts/lanlab.

    with Lab(hosts=2) as lab:
        adv = lab.exec("h1", [bin("parley-mdns"), "advertise", "alice", "7000"], background=True)
        adv.wait_for(lambda l: l.startswith("registered "))

Each Lab has its own namespace prefix and state directory, so it never collides with
another lab (or with shared/lanlab). It is torn down on exit, also when the test fails;
`scripts/lanlab up` itself removes whatever a killed run of the same prefix left.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[2]
LANLAB = REPO / "scripts" / "lanlab"

# Building a lab of a few hosts takes ~1 s per host (avahi probes its host name); tearing
# it down a few seconds. Generous bounds so a loaded CI machine does not flake.
LAB_UP_TIMEOUT = 90
LAB_DOWN_TIMEOUT = 60
# A foreground command in the lab (lanlab ip, stop-avahi, ...).
COMMAND_TIMEOUT = 60
# How long a background process may take to exit after SIGTERM before it is killed.
STOP_TIMEOUT = 10

# (name, seconds) pairs that tests record; conftest.py prints them after the run.
MEASUREMENTS: List[Tuple[str, float]] = []


def record(name: str, seconds: float) -> None:
    MEASUREMENTS.append((name, seconds))
    print(f"measured: {name}: {seconds:.3f} s", file=sys.stderr)


def unavailable_reason() -> Optional[str]:
    """Why a lab cannot be built here, or None if it can."""
    if os.geteuid() != 0:
        return "lab tests need root (network namespaces); run as root, e.g. in CI"
    for tool, package in [("ip", "iproute2"), ("nsenter", "util-linux"), ("unshare", "util-linux"),
                          ("setsid", "util-linux"), ("dbus-daemon", "dbus"),
                          ("avahi-daemon", "avahi-daemon")]:
        if shutil.which(tool) is None:
            return f"'{tool}' not found: install {package} (scripts/install-deps.sh test)"
    probe = f"plabprobe{os.getpid()}"
    added = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if added.returncode != 0:
        return f"'ip netns' is not usable here: {added.stderr.strip()}"
    return None


def bin_dir() -> Path:
    """Where the built executables are: $PARLEY_BIN_DIR (set by scripts/run-tests.sh),
    else what `swift build --show-bin-path` says."""
    env = os.environ.get("PARLEY_BIN_DIR")
    if env:
        return Path(env)
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, capture_output=True,
                         text=True, timeout=COMMAND_TIMEOUT, check=True)
    return Path(out.stdout.strip())


def binary(name: str) -> str:
    path = bin_dir() / name
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: build first (swift build) or set PARLEY_BIN_DIR")
    return str(path)


class BackgroundProcess:
    """A process started in the lab, whose stdout lines are collected as they come."""

    def __init__(self, argv: List[str], env: dict, label: str, stdin_pipe: bool = False):
        self.label = label
        self.started = time.monotonic()
        self._lines: List[Tuple[float, str]] = []
        self._stderr: List[str] = []
        self._cond = threading.Condition()
        # Set when stdout reached EOF: only then have all lines been read. (The process can
        # have exited while its last lines are still in the pipe.)
        self._stdout_done = False
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self._lines.append((time.monotonic(), line.rstrip("\n")))
                self._cond.notify_all()
        with self._cond:
            self._stdout_done = True
            self._cond.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line.rstrip("\n"))

    def lines(self) -> List[str]:
        with self._cond:
            return [l for _, l in self._lines]

    def wait_for(self, predicate: Callable[[str], bool], timeout: float, after: int = 0) -> Tuple[int, float, str]:
        """Waits (at most `timeout` s) for a line, from index `after` on, that matches.
        Returns (index, monotonic time it was read, line); raises AssertionError on timeout
        with everything the process printed."""
        deadline = time.monotonic() + timeout
        with self._cond:
            i = after
            while True:
                while i < len(self._lines):
                    t, line = self._lines[i]
                    if predicate(line):
                        return i, t, line
                    i += 1
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self._stdout_done and i >= len(self._lines)):
                    break
                self._cond.wait(min(remaining, 0.2))
        raise AssertionError(f"{self.label}: no matching line within {timeout} s "
                             f"(exit status {self.proc.poll()}).\nstdout:\n" + "\n".join(self.lines())
                             + "\nstderr:\n" + "\n".join(self._stderr))

    def send_line(self, line: str) -> None:
        """Writes one line to the process's stdin (started with stdin_pipe=True)."""
        assert self.proc.stdin is not None, "started without stdin_pipe=True"
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT)


class Lab:
    """A lab of `hosts` hosts (h1..hN), built on enter and torn down on exit. With
    `routed=K`: two subnets joined by a router "r" (lanlab up-routed): h1..hK on
    10.79.0.0/24, the rest on 10.79.1.0/24."""

    def __init__(self, hosts: int = 2, routed: Optional[int] = None):
        self.hosts = hosts
        self.routed = routed
        # Unique per lab: pid + random, within lanlab's 20-character limit.
        self.prefix = f"pl{os.getpid() % 100000}_{secrets.token_hex(3)}"
        self.dir = Path(tempfile.mkdtemp(prefix="parley-lab-"))
        self.env = dict(os.environ, PARLEY_LAB_PREFIX=self.prefix, LANLAB_DIR=str(self.dir))
        self._background: List[BackgroundProcess] = []
        # parleyd nodes made by node(): lab_for_test stops them.
        self.nodes: list = []

    def node(self, host: str, name: Optional[str] = None, state: Optional[Path] = None,
             env: Optional[dict] = None, extra_args=()):
        """A parleyd (parley_harness.Node, not started) on `host` with mDNS, listening on
        0.0.0.0:7744, its state in <lab>/<host>-state unless `state` says otherwise."""
        from parley_harness import Node
        n = Node(name or host, self.dir, launcher=[str(LANLAB), "exec", host], mdns=True,
                 listen="0.0.0.0:7744", extra_args=extra_args, env=dict(self.env, **(env or {})),
                 state_dir=state or self.dir / f"{host}-state")
        n.socket = self.dir / f"{host}-{name or host}.sock"
        self.nodes.append(n)
        return n

    def __enter__(self) -> "Lab":
        try:
            if self.routed:
                self.lanlab("up-routed", str(self.hosts), str(self.routed), timeout=LAB_UP_TIMEOUT)
            else:
                self.lanlab("up", str(self.hosts), timeout=LAB_UP_TIMEOUT)
        except BaseException:
            self._down(failed=True)
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._down(failed=exc_type is not None)

    def _down(self, failed: bool) -> None:
        for p in self._background:
            p.stop()
        if failed:
            self.dump_logs()
        subprocess.run([str(LANLAB), "down"], env=self.env, capture_output=True, text=True,
                       timeout=LAB_DOWN_TIMEOUT)
        shutil.rmtree(self.dir, ignore_errors=True)

    def dump_logs(self) -> None:
        """Prints the lab's daemon logs (pytest shows them for a failed test)."""
        for log in sorted([*self.dir.glob("h*/avahi*.log"), *self.dir.glob("r/avahi*.log")]):
            print(f"--- {log.relative_to(self.dir)}", file=sys.stderr)
            print(log.read_text(errors="replace")[-4000:], file=sys.stderr)

    def lanlab(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> str:
        out = subprocess.run([str(LANLAB), *args], env=self.env, capture_output=True, text=True,
                             timeout=timeout)
        if out.returncode != 0:
            raise RuntimeError(f"lanlab {' '.join(args)} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
        return out.stdout

    def ip(self, host: str) -> str:
        return self.lanlab("ip", host).strip()

    def ip6(self, host: str) -> str:
        """The host's IPv6 address (fd79::I; only TCP uses it, avahi is IPv4 only)."""
        return self.lanlab("ip6", host).strip()

    def add_addresses(self, host: str, addresses: List[str]) -> None:
        """Gives `host` more IPv4 (10.79.0.x) or IPv6 addresses, usable at once."""
        self.lanlab("addr", host, *addresses)

    def exec(self, host: str, args: List[str], background: bool = False,
             timeout: float = COMMAND_TIMEOUT, stdin_pipe: bool = False):
        """Runs `args` on `host`. In the foreground returns the CompletedProcess; with
        background=True returns a BackgroundProcess, stopped when the lab goes down.
        (lanlab exec execs the command, so signals sent to it reach the command.)
        stdin_pipe=True lets the test write to its stdin (BackgroundProcess.send_line)."""
        argv = [str(LANLAB), "exec", host, *args]
        if not background:
            return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)
        p = BackgroundProcess(argv, self.env, label=f"{host}: {' '.join(args)}", stdin_pipe=stdin_pipe)
        self._background.append(p)
        return p


def lab_for_test(request, hosts: int, log_lines: int = 60):
    """A pytest fixture's body (`yield from lab_for_test(request, 3)`): a Lab of `hosts`
    hosts for one test, skipped with the reason where no lab can be built here; at the
    end its nodes (Lab.node) are stopped, and their log tails printed if the test failed
    (conftest.py records the outcome as request.node.report_call)."""
    import pytest
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with Lab(hosts=hosts) as the_lab:
        yield the_lab
        failed = getattr(request.node, "report_call", None)
        for n in the_lab.nodes:
            if failed is not None and failed.failed:
                print(f"--- log of {n.name} ---\n{n.log_tail(log_lines)}")
            n.stop()


def parse_found(line: str) -> dict:
    """Parses parley-mdns's "found NAME HOST PORT ADDR,... K=V..." line."""
    parts = line.split(" ")
    assert parts[0] == "found" and len(parts) >= 5, line
    txt = dict(p.split("=", 1) for p in parts[5:])
    return {"name": unescape(parts[1]), "host": unescape(parts[2]), "port": int(parts[3]),
            "addresses": [] if parts[4] == "-" else parts[4].split(","), "txt": txt}


def unescape(s: str) -> str:
    """Undoes parley-mdns's DNS-SD style escaping (\\032 for space, \\\\ for backslash)."""
    return re.sub(r"\\(\d{3}|\\)", lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1))), s)
