"""Test harness: real parleyd processes on loopback, real Unix sockets, real SQLite files.

Each Node is one parleyd process with its own state directory and control socket.
Processes are started with --no-mdns and --listen 127.0.0.1:0 unless a test says
otherwise; the bound port is read back through node.status.
"""
import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bin_dir() -> Path:
    d = os.environ.get("PARLEY_BIN_DIR")
    if d:
        return Path(d)
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


BIN = bin_dir()
PARLEYD = str(BIN / "parleyd")
PARLEY = str(BIN / "parley")


def wait_until(predicate, timeout=10.0, interval=0.05, what="condition"):
    """Polls predicate until it returns a truthy value; fails after timeout (bounded)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)  # the poll interval of this bounded wait
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last value: {last!r}")


class RPC:
    """A JSON-RPC 2.0 client on the control socket (one JSON object per line)."""

    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buf = b""
        self.next_id = 1
        self.notifications = []

    def close(self):
        self.sock.close()

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def read_line(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("control socket closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call_raw(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        req = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            req["params"] = params
        self.send_raw((json.dumps(req) + "\n").encode())
        while True:
            msg = self.read_line()
            if "id" in msg and msg.get("id") == rid:
                return msg
            if "method" in msg:
                self.notifications.append(msg)

    def call(self, method, params=None):
        msg = self.call_raw(method, params)
        if "error" in msg:
            raise RPCError(msg["error"])
        return msg["result"]

    def next_notification(self, timeout=10.0):
        if self.notifications:
            return self.notifications.pop(0)
        self.sock.settimeout(timeout)
        return self.read_line()


class RPCError(Exception):
    def __init__(self, err):
        super().__init__(f"{err.get('code')}: {err.get('message')}")
        self.code = err.get("code")
        self.error = err


def descriptor_call(control_socket, method, params, fds=(), timeout=60.0):
    """One request on the descriptor socket (control socket path + ".fds"): the request
    line with `fds` attached (SCM_RIGHTS) to the same sendmsg; returns (result, fds of the
    answer). Raises RPCError for an error answer (any descriptors that came are closed)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(control_socket) + ".fds")
        line = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}) + "\n").encode()
        sent = socket.send_fds(sock, [line], list(fds))
        if sent < len(line):
            sock.sendall(line[sent:])
        buf, got = b"", []
        while b"\n" not in buf:
            data, more, _flags, _addr = socket.recv_fds(sock, 65536, 16)
            got += more
            if not data:
                raise ConnectionError("descriptor socket closed before an answer")
            buf += data
        msg = json.loads(buf.split(b"\n", 1)[0])
    finally:
        sock.close()
    if "error" in msg:
        for fd in got:
            os.close(fd)
        raise RPCError(msg["error"])
    return msg["result"], got


class Node:
    def __init__(self, name, workdir: Path, extra_args=(), peers=(), state_dir=None, env=None,
                 launcher=(), mdns=False, listen="127.0.0.1:0"):
        self.name = name
        self.state_dir = Path(state_dir) if state_dir else workdir / f"{name}-state"
        self.socket = workdir / f"{name}.sock"
        self.log_path = workdir / f"{name}.log"
        self.extra_args = list(extra_args)
        self.peers = list(peers)
        self.env = dict(os.environ, **(env or {}))
        self.env.pop("NOTIFY_SOCKET", None)
        self.proc = None
        self.port = None
        self.listen_arg = listen
        # A command prefix, e.g. ["scripts/lanlab", "exec", "h1"] to run on a lab host.
        self.launcher = list(launcher)
        self.mdns = mdns
        self.fixed_listen = not listen.endswith(":0")

    def args(self):
        a = [*self.launcher, PARLEYD, "--state-dir", str(self.state_dir), "--name", self.name,
             "--socket", str(self.socket), "--listen", self.listen_arg, "--log-level", "debug",
             "--durability", "normal"]
        if not self.mdns:
            a.append("--no-mdns")
        for p in self.peers:
            a += ["--peer", p]
        return a + self.extra_args

    def start(self, wait=True):
        # Starting over a live process would orphan it (the cluster could no longer stop it).
        assert self.proc is None or self.proc.poll() is not None, f"{self.name} is already running"
        self.logf = open(self.log_path, "ab")
        # Behind a launcher (faketime forks parleyd and waits for it) the daemon is not the
        # process we started: give it its own process group and signal the group.
        self.proc = subprocess.Popen(self.args(), stdout=self.logf, stderr=subprocess.STDOUT, env=self.env,
                                     start_new_session=bool(self.launcher))
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=20.0):
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                r = RPC(self.socket, timeout=2)
                try:
                    st = r.call("node.status")
                finally:
                    r.close()
                return st
            except (OSError, ConnectionError, RPCError):
                return None
        st = wait_until(ready, timeout=timeout, what=f"{self.name} to answer on its control socket")
        listen = st["listen"][0]
        self.port = int(listen.rsplit(":", 1)[1])
        # Keep the same port across restarts so static peers can redial us.
        if not self.fixed_listen:
            self.listen_arg = f"127.0.0.1:{self.port}"
        return st

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def rpc(self, timeout=10.0):
        return RPC(self.socket, timeout=timeout)

    def call(self, method, params=None):
        r = self.rpc()
        try:
            return r.call(method, params)
        finally:
            r.close()

    def cli(self, *args, check=True, timeout=30):
        p = subprocess.run([PARLEY, *args, "--socket", str(self.socket)],
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"parley {' '.join(args)} failed ({p.returncode}): {p.stderr}")
        return p

    def whoami(self):
        return self.call("node.whoami")

    def send_files(self, to, paths, caption=None, timeout=120.0):
        """files.send of `paths`, opened here (as the test's user) and passed as descriptors."""
        fds = [os.open(str(p), os.O_RDONLY | os.O_CLOEXEC) for p in paths]
        try:
            params = {"to": to, "files": [{"name": os.path.basename(str(p))} for p in paths]}
            if caption is not None:
                params["caption"] = caption
            result, extra = descriptor_call(self.socket, "files.send", params, fds, timeout=timeout)
            for fd in extra:
                os.close(fd)
            return result
        finally:
            for fd in fds:
                os.close(fd)

    def open_received(self, tid, timeout=30.0):
        """files.open: (result, the read-only descriptor of the received file)."""
        result, fds = descriptor_call(self.socket, "files.open", {"id": tid}, timeout=timeout)
        assert len(fds) == 1, fds
        return result, fds[0]

    def daemon_pid(self):
        """The parleyd process itself: behind a launcher, the member of its process group
        that runs parleyd."""
        if not self.launcher:
            return self.proc.pid
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.getpgid(int(entry)) == self.proc.pid and os.path.basename(os.readlink(f"/proc/{entry}/exe")) == "parleyd":
                    return int(entry)
            except OSError:
                continue
        raise AssertionError(f"no parleyd process in {self.name}'s process group")

    def _signal(self, sig):
        if self.launcher:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
        else:
            self.proc.send_signal(sig)

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self._signal(sig)
            self.proc.wait(timeout=20)

    def _group_alive(self):
        """Behind a launcher, whether any process of the daemon's group is left: the
        launcher may exit before the daemon it started."""
        try:
            os.killpg(self.proc.pid, 0)
            return True
        except ProcessLookupError:
            return False

    def stop(self):
        if self.proc and (self.proc.poll() is None or (self.launcher and self._group_alive())):
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
                if self.launcher:
                    wait_until(lambda: not self._group_alive(), timeout=10, what=f"{self.name}'s daemon to exit")
            except (subprocess.TimeoutExpired, AssertionError):
                self._signal(signal.SIGKILL)
                self.proc.wait()
        if getattr(self, "logf", None):
            self.logf.close()
            self.logf = None

    def log_tail(self, n=40):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def peer_info(self, name):
        for p in self.call("peers.list")["peers"]:
            if p["name"] == name:
                return p
        return None

    def online(self, name):
        p = self.peer_info(name)
        return bool(p and p["online"])

    def messages(self, peer=None, limit=1000):
        # Paging forward from the start (after=0): without `after` the daemon answers the
        # newest page, and its nextCursor then points back.
        out = []
        after = 0
        while True:
            params = {"limit": limit}
            if peer:
                params["peer"] = peer
            if after is not None:
                params["after"] = after
            r = self.call("messages.list", params)
            out += r["messages"]
            if r["nextCursor"] is None or not r["messages"]:
                return out
            after = r["nextCursor"]


class Cluster:
    """A set of nodes in one temporary directory, all stopped at the end."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="parley-test-")
        self.dir = Path(self.tmp.name)
        self.nodes = []

    def node(self, name, **kw):
        n = Node(name, self.dir, **kw)
        self.nodes.append(n)
        return n

    def close(self):
        for n in self.nodes:
            n.stop()
        # PARLEY_KEEP_LOGS=DIR keeps every daemon log of a run, to read them all afterwards
        # (e.g. grep for "error" lines no assertion looked at).
        keep = os.environ.get("PARLEY_KEEP_LOGS")
        if keep:
            dest = Path(keep) / self.dir.name
            dest.mkdir(parents=True, exist_ok=True)
            for log in self.dir.glob("*.log"):
                shutil.copy(log, dest / log.name)
        self.tmp.cleanup()


def journal_counts(node, method):
    """How many `method` events the journal holds per message id, replayed from the start."""
    r = node.rpc(timeout=30)
    try:
        last = r.call("messages.subscribe", {"since": 0})["lastEventId"]
        counts, event_id = collections.Counter(), 0
        for _ in range(last):  # at most one line per event
            if event_id >= last:
                break
            n = r.next_notification(timeout=15)
            event_id = n["params"].get("eventId", event_id)
            if n["method"] == method:
                p = n["params"]
                counts[p["message"]["id"] if "message" in p else p["id"]] += 1
        return counts
    finally:
        r.close()
