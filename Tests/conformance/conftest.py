"""Fixtures of the conformance suite: a real parleyd on loopback, driven through its control
socket (docs/CONTROL.md) and spoken to over TCP by the client in parley_wire.py.

PARLEY_BIN_DIR names the directory holding parleyd (as for Tests/system); without it,
`swift build --show-bin-path` is asked.
"""
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

ROOT = pathlib.Path(__file__).resolve().parents[2]


def bin_dir():
    d = os.environ.get("PARLEY_BIN_DIR")
    if d:
        return pathlib.Path(d)
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True, check=True)
    return pathlib.Path(out.stdout.strip())


PARLEYD = str(bin_dir() / "parleyd")
PARLEY = str(bin_dir() / "parley")


def wait_until(predicate, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.05)  # the poll interval of this bounded wait
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


class Daemon:
    """One parleyd process with its own state directory and control socket."""

    def __init__(self, workdir: pathlib.Path, name: str, args=()):
        self.workdir = workdir
        self.name = name
        self.state = workdir / f"{name}-state"
        self.sock_path = workdir / f"{name}.sock"
        self.log_path = workdir / f"{name}.log"
        self.args = [PARLEYD, "--state-dir", str(self.state), "--name", name, "--socket", str(self.sock_path),
                     "--listen", "127.0.0.1:0", "--no-mdns", "--log-level", "debug", "--durability", "normal",
                     *args]
        self.proc = None
        self.port = None

    def start(self):
        self.logf = open(self.log_path, "ab")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        self.proc = subprocess.Popen(self.args, stdout=self.logf, stderr=subprocess.STDOUT, env=env)

        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"parleyd exited with {self.proc.returncode}: {self.log()[-2000:]}")
            try:
                return self.call("node.status")
            except OSError:
                return None
        status = wait_until(ready, what="parleyd to answer on its control socket")
        self.port = int(status["listen"][0].rsplit(":", 1)[1])
        return self

    @property
    def address(self):
        return ("127.0.0.1", self.port)

    def call(self, method, params=None):
        """One JSON-RPC 2.0 request on a fresh control connection; the result or an error."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(str(self.sock_path))
            req = {"jsonrpc": "2.0", "id": 1, "method": method}
            if params is not None:
                req["params"] = params
            s.sendall((json.dumps(req) + "\n").encode())
            buf = b""
            while True:
                while b"\n" not in buf:
                    chunk = s.recv(65536)
                    if not chunk:
                        raise OSError("control socket closed")
                    buf += chunk
                line, buf = buf.split(b"\n", 1)
                msg = json.loads(line)
                if msg.get("id") == 1:
                    if "error" in msg:
                        raise RuntimeError(f"{method}: {msg['error']}")
                    return msg["result"]
        finally:
            s.close()

    def send_file(self, to, path, caption=None):
        """files.send on the descriptor socket (control socket + ".fds"): the file opened
        here and passed as a descriptor with the request line (SCM_RIGHTS)."""
        params = {"to": to, "files": [{"name": os.path.basename(str(path))}]}
        if caption is not None:
            params["caption"] = caption
        fd = os.open(str(path), os.O_RDONLY | os.O_CLOEXEC)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        try:
            s.connect(str(self.sock_path) + ".fds")
            line = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "files.send", "params": params}) + "\n").encode()
            sent = socket.send_fds(s, [line], [fd])
            s.sendall(line[sent:])
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    raise OSError("descriptor socket closed")
                buf += chunk
            msg = json.loads(buf.split(b"\n", 1)[0])
        finally:
            s.close()
            os.close(fd)
        if "error" in msg:
            raise RuntimeError(f"files.send: {msg['error']}")
        return msg["result"]

    def peers(self):
        return self.call("peers.list")["peers"]

    def messages(self, peer=None):
        params = {"limit": 1000}
        if peer:
            params["peer"] = peer
        return self.call("messages.list", params)["messages"]

    def log(self):
        return self.log_path.read_text(errors="replace")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "logf", None):
            self.logf.close()


@pytest.fixture
def workdir():
    # Short paths: a Unix socket path must fit 108 bytes.
    d = pathlib.Path(tempfile.mkdtemp(prefix="pconf-"))
    os.chmod(d, 0o700)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def daemons(workdir):
    started = []

    def start(name="daemon", args=()):
        d = Daemon(workdir, name, args).start()
        started.append(d)
        return d
    yield start
    for d in started:
        d.stop()


@pytest.fixture
def daemon(daemons):
    return daemons()


@pytest.fixture(scope="module")
def module_daemon():
    """One daemon for a module whose tests each bring a new identity (and name)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="pconf-"))
    os.chmod(d, 0o700)
    daemon = Daemon(d, "daemon").start()
    yield daemon
    daemon.stop()
    shutil.rmtree(d, ignore_errors=True)


def write_network_key(path: pathlib.Path, key: bytes, text: str = None, mode=0o600):
    path.write_bytes((text if text is not None else key.hex() + "\n").encode())
    os.chmod(path, mode)
    return str(path)
