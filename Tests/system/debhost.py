"""Booted Debian 12 hosts for system tests (scripts/debhost): systemd as PID 1, the package
installed with apt, driven from outside with nsenter.

    with DebHost("solo") as h:                    # a private network: loopback only
        h.install(deb)
        assert h.run("systemctl", "is-active", "parleyd").stdout.strip() == "active"

    with Lab(hosts=2) as lab:                     # two hosts on the lab's LAN
        lab.lanlab("stop-avahi", "h1")            # the booted host runs its own avahi
        with DebHost("alice", netns=lab_netns(lab, "h1")) as a: ...

Each DebHost is a fresh copy-on-write copy of one cached root (.cache/debhost, built once by
mmdebstrap, ~2-5 min; `build_root()`), boots in a few seconds, and is powered off and removed
on exit, also when the test fails (then its journal's tail is printed). Hosts of one
process live in their own DEBHOST_DIR, so runs of different tests never collide.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

REPO = Path(__file__).resolve().parents[2]
DEBHOST = REPO / "scripts" / "debhost"

# Building the root downloads ~150 MB of packages: minutes on a slow mirror.
BUILD_ROOT_TIMEOUT = 1800
# Boot takes ~2 s on an idle machine; scripts/debhost bounds it at 90 s itself.
BOOT_TIMEOUT = 150
STOP_TIMEOUT = 90
COMMAND_TIMEOUT = 120
# apt-get install of the package: unpacking ~30 MB, sysusers, tmpfiles, starting parleyd.
INSTALL_TIMEOUT = 300

# One directory per test process for its running hosts.
_DIR = Path(tempfile.gettempdir()) / f"parley-debhost-{os.getpid()}"


def _env() -> dict:
    return dict(os.environ, DEBHOST_DIR=str(_DIR))


def reap_abandoned() -> None:
    """Stops the hosts of test processes that died without tearing down (killed with
    SIGKILL, or a CI timeout): their DEBHOST_DIR names a pid that no longer runs."""
    for d in Path(tempfile.gettempdir()).glob("parley-debhost-*"):
        pid = d.name.rsplit("-", 1)[-1]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        env = dict(os.environ, DEBHOST_DIR=str(d))
        for host in [h.name for h in d.iterdir() if h.is_dir()]:
            subprocess.run([str(DEBHOST), "stop", host], env=env, capture_output=True, timeout=STOP_TIMEOUT)
        shutil.rmtree(d, ignore_errors=True)


def unavailable_reason() -> Optional[str]:
    """Why booted hosts cannot run here, or None. Only "not root" is a reason to skip:
    a missing tool is a broken setup (scripts/install-deps.sh package installs them)."""
    if os.geteuid() != 0:
        return "booted hosts need root (systemd-nspawn, overlayfs); run as root, e.g. in CI"
    return None


def require_tools() -> None:
    for tool, package in [("systemd-nspawn", "systemd-container"), ("mmdebstrap", "mmdebstrap"),
                          ("nsenter", "util-linux")]:
        if shutil.which(tool) is None:
            raise RuntimeError(f"'{tool}' not found: install {package} (scripts/install-deps.sh package)")


def build_root() -> tuple[Path, float]:
    """The cached root (built now if missing) and how long getting it took."""
    require_tools()
    started = time.monotonic()
    out = subprocess.run([str(DEBHOST), "build-root"], env=_env(), capture_output=True, text=True,
                         timeout=BUILD_ROOT_TIMEOUT)
    if out.returncode != 0:
        raise RuntimeError(f"debhost build-root failed ({out.returncode}):\n{out.stdout}{out.stderr[-4000:]}")
    return Path(out.stdout.strip().splitlines()[-1]), time.monotonic() - started


def lab_netns(lab, host: str) -> str:
    """The network namespace of lab host `host` (scripts/lanlab names it <prefix>-<host>)."""
    return f"/run/netns/{lab.prefix}-{host}"


class DebHost:
    """One booted host. `name` is its hostname (and so parleyd's default display name)."""

    def __init__(self, name: str, netns: Optional[str] = None):
        self.name = name
        self.netns = netns
        self.boot_seconds: Optional[float] = None
        self._up = False

    # --- lifecycle ---
    def boot(self) -> "DebHost":
        reap_abandoned()
        args = [str(DEBHOST), "boot", self.name]
        if self.netns:
            args += ["--netns", self.netns]
        started = time.monotonic()
        out = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=BOOT_TIMEOUT)
        if out.returncode != 0:
            raise RuntimeError(f"debhost boot {self.name} failed ({out.returncode}):\n{out.stdout}{out.stderr}")
        self.boot_seconds = time.monotonic() - started
        self._up = True
        return self

    def stop(self) -> None:
        subprocess.run([str(DEBHOST), "stop", self.name], env=_env(), capture_output=True, text=True,
                       timeout=STOP_TIMEOUT)
        self._up = False

    def __enter__(self) -> "DebHost":
        return self.boot()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and self._up:
            self.dump_journal()
        self.stop()

    def dump_journal(self, lines: int = 80) -> None:
        out = self.run("journalctl", "-b", "--no-pager", "-n", str(lines), timeout=30)
        print(f"--- journal of booted host {self.name} ---\n{out.stdout}{out.stderr}", file=sys.stderr)

    # --- commands ---
    def run(self, *args: str, timeout: float = COMMAND_TIMEOUT, input: Optional[str] = None) -> subprocess.CompletedProcess:
        """Runs a command as root on the host (no shell)."""
        return subprocess.run([str(DEBHOST), "exec", self.name, *args], env=_env(), capture_output=True,
                              text=True, timeout=timeout, input=input)

    def sh(self, script: str, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess:
        return self.run("sh", "-c", script, timeout=timeout)

    def as_user(self, user: str, command: str, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess:
        """Runs a shell command as `user` after a login (runuser -l: the user's own
        environment and groups, as when they log in)."""
        return self.run("runuser", "-l", user, "-c", command, timeout=timeout)

    def check(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> str:
        out = self.run(*args, timeout=timeout)
        if out.returncode != 0:
            raise AssertionError(f"{self.name}: `{shlex.join(args)}` failed ({out.returncode}):\n{out.stdout}{out.stderr}")
        return out.stdout

    def copy_in(self, src: Path, dst: str) -> None:
        out = subprocess.run([str(DEBHOST), "copy-in", self.name, str(src), dst], env=_env(),
                             capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        if out.returncode != 0:
            raise RuntimeError(f"debhost copy-in failed:\n{out.stderr}")

    def install(self, deb: Path) -> subprocess.CompletedProcess:
        """`apt-get install ./parley_*.deb`, as an admin does (the host has no network: every
        dependency is already there). Returns the result; raises if apt failed."""
        dst = f"/root/{deb.name}"
        self.copy_in(deb, dst)
        out = self.run("env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", dst,
                       timeout=INSTALL_TIMEOUT)
        if out.returncode != 0:
            raise AssertionError(f"{self.name}: apt-get install {deb.name} failed ({out.returncode}):\n"
                                 f"{out.stdout}{out.stderr}")
        return out

    def wait_until(self, what: str, probe: Callable[[], bool], timeout: float) -> None:
        """Polls `probe` (bounded) until it is true; fails saying `what` did not happen."""
        deadline = time.monotonic() + timeout
        while True:
            if probe():
                return
            if time.monotonic() >= deadline:
                raise AssertionError(f"{self.name}: {what} did not happen within {timeout} s")
            time.sleep(0.3)  # the poll interval of this bounded wait
