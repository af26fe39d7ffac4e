"""Issue 28 on a booted Debian 12 host with the package installed (scripts/debhost, the
package tests' harness): two people, alice and bob, each with their own instance
(`systemctl enable --now parleyd@NAME`, the shipped hardened template unit), next to the
system service, which keeps working as before.

- each `parley whoami` (no flags) shows a different fingerprint, and neither is the
  system service's;
- they chat;
- alice sends a 64 MiB ~/report.bin, bob `parley get`s it into ~/in: byte-identical,
  owned by bob; neither daemon could open a path in a home (ProtectHome=yes);
- bob cannot connect to alice's control socket;
- a third person, carol, on a second booted host on the same lab LAN (her own
  parleyd@carol): she and alice find each other over mDNS through the two hosts'
  avahi-daemons, exchange a message and a file both ways, each as an ordinary user; bob,
  next to alice, sees none of it;
- each person's `parley web` against their own instance, in Chromium (this machine's,
  run inside the host's network namespace: booted_browser.py): sign in, send a message and
  a file, accept and download one; another person's sign-in link is refused; the cookie
  replay and the squatting of a killed `parley web`'s port by another local user get
  nothing (and that user's HTTP-level attempts without the secret get nothing either).
"""
import json
import os
import re
import shlex
import queue
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

# The booted-host harness and the package fixtures come with issue 27 (scripts/debhost,
# Tests/system/debhost.py, test_package.py); without them this test cannot run, and CI's
# ci_guard turns the skip into a failure.
debhost = pytest.importorskip("debhost", reason="Tests/system/debhost.py (issue 27's booted-host harness) is missing")
from debhost import DebHost, lab_netns  # noqa: E402
import lab as lab_module  # noqa: E402
from test_package import deb, root  # noqa: E402,F401  (session fixtures: the .deb, the cached root)
# The same bound as the package tests: run alone, this test builds the package and the root.
from test_package import pytestmark  # noqa: E402,F401
from booted_browser import REPLY  # noqa: E402

DELIVERY_TIMEOUT = 120
# Two instances that just started: avahi announces, each browses and resolves the other.
DISCOVERY_TIMEOUT = 90
# 64 MiB over loopback inside the host: hashing, copying and sending, on a shared machine.
FILE_TIMEOUT = 600


def online(host, user, peer):
    out = host.as_user(user, "parley peers --json")
    peers = json.loads(out.stdout)["peers"] if out.returncode == 0 else []
    return any(p["name"] == peer and p["online"] for p in peers)


def start_instances(host, users):
    """Ordinary users (not in group parley), each with `systemctl enable --now parleyd@USER`."""
    for user in users:
        host.check("useradd", "--create-home", "--shell", "/bin/bash", user)
        host.check("systemctl", "enable", "--now", f"parleyd@{user}")
    for user in users:
        host.wait_until(f"parleyd@{user} active",
                        lambda u=user: host.run("systemctl", "is-active", f"parleyd@{u}").stdout.strip() == "active",
                        timeout=60)
        host.wait_until(f"{user}'s instance answers", lambda u=user: host.as_user(u, "parley whoami").returncode == 0,
                        timeout=60)
        groups = host.check("id", "-nG", user).split()
        assert "parley" not in groups, groups


def send_file(sender_host, sender, receiver_host, receiver, name, size):
    """`sender` sends ~/NAME (random bytes) to `receiver`, who `parley get`s it into ~/in:
    byte-identical, owned by the receiver."""
    sender_host.check("runuser", "-l", sender, "-c", f"head -c {size} /dev/urandom > ~/{name}")
    out = sender_host.as_user(sender, f"parley send {receiver} --attach ~/{name} --json", timeout=FILE_TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    tid = json.loads(out.stdout)["transfers"][0]["id"]
    got = receiver_host.as_user(receiver, f"mkdir -p ~/in && parley get {tid[:12]} --to ~/in --json",
                                timeout=FILE_TIMEOUT)
    assert got.returncode == 0, got.stdout + got.stderr
    target = f"/home/{receiver}/in/{name}"
    assert json.loads(got.stdout)["path"] == target
    sent = sender_host.check("sha256sum", f"/home/{sender}/{name}").split()[0]
    assert receiver_host.check("sha256sum", target).split()[0] == sent
    assert receiver_host.check("stat", "-c", "%U %s", target).split() == [receiver, str(size)]
    return tid


def whoami(host, user):
    out = host.as_user(user, "parley whoami --json")
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def test_two_people_on_one_booted_host_each_with_their_own_parley(deb, root):  # noqa: F811
    with DebHost("people") as h:
        h.install(deb)
        h.wait_until("parleyd (the system service) active",
                     lambda: h.run("systemctl", "is-active", "parleyd").stdout.strip() == "active", timeout=60)
        system_fp = json.loads(h.check("parley", "whoami", "--json"))["fingerprint"]
        for user in ("alice", "bob"):
            h.check("useradd", "--create-home", "--shell", "/bin/bash", user)
            h.check("systemctl", "enable", "--now", f"parleyd@{user}")
        for user in ("alice", "bob"):
            h.wait_until(f"parleyd@{user} active",
                         lambda u=user: h.run("systemctl", "is-active", f"parleyd@{u}").stdout.strip() == "active",
                         timeout=60)
        a, b = whoami(h, "alice"), whoami(h, "bob")
        assert len({a["fingerprint"], b["fingerprint"], system_fp}) == 3, (a, b, system_fp)
        # Each instance has its own port, remembered in its state.
        ports = {u: int(h.check("cat", f"/var/lib/parley-user/{u}/listen-port").strip()) for u in ("alice", "bob")}
        assert ports["alice"] != ports["bob"]
        # The two find each other through the host's avahi-daemon (each instance has its own
        # advertisement), then verify each other.
        h.wait_until("alice and bob see each other online",
                     lambda: online(h, "alice", "bob") and online(h, "bob", "alice"), timeout=DISCOVERY_TIMEOUT)
        h.check("runuser", "-l", "alice", "-c", f"parley trust verify bob --fingerprint {b['fingerprint']}")
        h.check("runuser", "-l", "bob", "-c", f"parley trust verify alice --fingerprint {a['fingerprint']}")
        sent = h.as_user("alice", "parley send bob 'hello bob' --wait", timeout=DELIVERY_TIMEOUT)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        read = h.as_user("bob", "parley read alice")
        assert "hello bob" in read.stdout, read.stdout + read.stderr
        # 64 MiB from alice's home to bob's, through the hardened units.
        h.check("runuser", "-l", "alice", "-c", "head -c 67108864 /dev/urandom > ~/report.bin")
        out = h.as_user("alice", "parley send bob --attach ~/report.bin --json", timeout=FILE_TIMEOUT)
        assert out.returncode == 0, out.stdout + out.stderr
        tid = json.loads(out.stdout)["transfers"][0]["id"]
        got = h.as_user("bob", f"mkdir -p ~/in && parley get {tid[:12]} --to ~/in --json", timeout=FILE_TIMEOUT)
        assert got.returncode == 0, got.stdout + got.stderr
        assert json.loads(got.stdout)["path"] == "/home/bob/in/report.bin"
        sums = h.check("sha256sum", "/home/alice/report.bin", "/home/bob/in/report.bin").split()
        assert sums[0] == sums[2], sums
        owner = h.check("stat", "-c", "%U %s", "/home/bob/in/report.bin").split()
        assert owner == ["bob", "67108864"], owner
        # Bob cannot reach alice's sockets (a 0700 directory of hers), nor read her state.
        refused = h.as_user("bob", "parley status --socket /run/parley-user/alice/control.sock")
        assert refused.returncode != 0 and "ermission denied" in refused.stdout + refused.stderr, (
            refused.stdout + refused.stderr)
        state = h.as_user("bob", "ls /var/lib/parley-user/alice")
        assert state.returncode != 0
        # The system service still answers its group as before.
        h.check("usermod", "-aG", "parley", "bob")
        status = h.as_user("bob", "parley status --socket /run/parley/control.sock")
        assert status.returncode == 0, status.stdout + status.stderr


def test_a_third_person_on_another_host_chats_and_swaps_files_with_alice_and_bob_sees_none(deb, root):  # noqa: F811
    reason = lab_module.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with lab_module.Lab(hosts=2) as lab:
        # The booted hosts run their own avahi-daemon in the lab's namespaces: stop the lab's.
        for name in ("h1", "h2"):
            lab.lanlab("stop-avahi", name)
        with DebHost("shared-pc", netns=lab_netns(lab, "h1")) as h1, \
                DebHost("carol-pc", netns=lab_netns(lab, "h2")) as h2:
            h1.install(deb)
            h2.install(deb)
            start_instances(h1, ["alice", "bob"])
            start_instances(h2, ["carol"])
            fps = {u: whoami(h, u)["fingerprint"] for h, u in ((h1, "alice"), (h1, "bob"), (h2, "carol"))}
            assert len(set(fps.values())) == 3, fps
            # No static peer anywhere: each host's avahi-daemon, mDNS across the lab LAN.
            h1.wait_until("alice sees carol online", lambda: online(h1, "alice", "carol"), timeout=DISCOVERY_TIMEOUT)
            h2.wait_until("carol sees alice online", lambda: online(h2, "carol", "alice"), timeout=DISCOVERY_TIMEOUT)
            # They compare fingerprints (out of band) before trusting files.
            h1.check("runuser", "-l", "alice", "-c", f"parley trust verify carol --fingerprint {fps['carol']}")
            h2.check("runuser", "-l", "carol", "-c", f"parley trust verify alice --fingerprint {fps['alice']}")
            sent = h1.as_user("alice", "parley send carol 'hello carol, from alice' --wait", timeout=DELIVERY_TIMEOUT)
            assert sent.returncode == 0, sent.stdout + sent.stderr
            sent = h2.as_user("carol", "parley send alice 'hello alice, from carol' --wait", timeout=DELIVERY_TIMEOUT)
            assert sent.returncode == 0, sent.stdout + sent.stderr
            assert "hello carol, from alice" in h2.as_user("carol", "parley read alice").stdout
            assert "hello alice, from carol" in h1.as_user("alice", "parley read carol").stdout
            ids = [send_file(h1, "alice", h2, "carol", "from-alice.bin", 3 << 20),
                   send_file(h2, "carol", h1, "alice", "from-carol.bin", 2 << 20)]
            # Bob, on alice's host, has none of it: no message, no file, no trace in his state.
            for peer in ("alice", "carol"):
                history = h1.as_user("bob", f"parley read {peer}")
                assert "from alice" not in history.stdout and "from carol" not in history.stdout, history.stdout
            files = json.loads(h1.check("runuser", "-l", "bob", "-c", "parley files list --json"))
            listed = files["transfers"] if isinstance(files, dict) else files
            assert not [t for t in listed if t["id"] in ids], listed
            search = h1.as_user("bob", "parley search hello --json")
            assert "from carol" not in search.stdout and "from alice" not in search.stdout, search.stdout
            # Nor can he look into alice's instance, where her daemon keeps what carol sent.
            assert h1.run("runuser", "-u", "bob", "--", "ls", "/var/lib/parley-user/alice").returncode != 0
            kept = h1.check("find", "/var/lib/parley-user/alice", "-type", "f", "-size", str(2 << 20) + "c")
            assert kept.strip(), "alice's daemon keeps its own copy of carol's file"
            for path in kept.split():
                assert h1.run("runuser", "-u", "bob", "--", "cat", path).returncode != 0, path


# --- each person's `parley web`, on the booted host ------------------------------------------

# Another local user's side, an HTTP-level client run on this machine inside the booted
# host's network namespace (the host has no Python; its `parley web` listens on its own
# loopback), as that user's uid: web_auth's raw WebSocket and plain HTTP, without the
# person's secret (or with another person's).
WEB_CLIENT = r"""
import http.client, json, sys
from web_auth import RawWebSocket
port, secret, action = int(sys.argv[1]), sys.argv[2], sys.argv[3]
origin = f"http://127.0.0.1:{port}"

def http_call(method, path, headers, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=body, headers={"Host": f"127.0.0.1:{port}", **headers})
    r = c.getresponse()
    return r.status, r.read()

out = {}
if action == "stranger":
    # Another local user: no key (and the sign-in file is not theirs to read).
    out["file"] = http_call("GET", f"/files/{sys.argv[4]}", {})[0]
    out["upload"] = http_call("POST", "/upload?to=bob&name=x.bin", {"Origin": origin}, b"x" * 10)[0]
    ws = RawWebSocket(port, origin)
    out["ws"] = ws.call("node.whoami")[:2]
elif action == "wrong-secret":
    ws = RawWebSocket(port, origin)
    try:
        ws.sign_in(secret, origin)
        out["signed_in"] = True
    except AssertionError:
        out["signed_in"] = False
print(json.dumps(out))
"""


def host_init(h):
    return subprocess.run([str(debhost.DEBHOST), "pid", h.name], env=debhost._env(), capture_output=True,
                          text=True, check=True, timeout=30).stdout.strip()


def web_client(h, uid, port, secret, action, *args):
    """WEB_CLIENT as `uid` (numeric; the booted host's users have no name here) in the host's
    network namespace."""
    argv = ["nsenter", "-t", host_init(h), "-n", "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "/usr/bin/python3", "-c", WEB_CLIENT, str(port), secret, action, *map(str, args)]
    out = subprocess.run(argv, capture_output=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(Path(__file__).parent)))
    assert out.returncode == 0, (out.stdout + out.stderr).decode(errors="replace")
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


# Starting Chromium on a loaded machine; a step moves at most a few MiB through the page.
BROWSER_START_TIMEOUT = 120
BROWSER_STEP_TIMEOUT = 240


class BootedBrowser:
    """A headless Chromium on this machine inside the booted host's network namespace
    (booted_browser.py, run with nsenter: the image has no browser), driven step by step."""

    def __init__(self, h):
        argv = ["nsenter", "-t", host_init(h), "-n", "/usr/bin/python3",
                str(Path(__file__).parent / "booted_browser.py")]
        # Its log (Chromium's, chromedriver's, Selenium's) to a file: a pipe nobody reads could fill.
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=dict(os.environ, PYTHONPATH=str(Path(__file__).parent)))
        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.proc.stdout] + [self.lines.put("")],
                         daemon=True).start()
        self._reply(BROWSER_START_TIMEOUT)

    def _reply(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                self.proc.kill()
                raise AssertionError(f"the browser did not answer within {timeout} s: {self.log_tail()}")
            if not line:
                raise AssertionError(f"the browser exited: {self.log_tail()}")
            if line.startswith(REPLY):
                answer = json.loads(line[len(REPLY):])
                assert "error" not in answer, answer["error"]
                return answer["ok"]

    def log_tail(self):
        self.log.seek(0)
        return self.log.read()[-4000:]

    def step(self, op, timeout=BROWSER_STEP_TIMEOUT, **args):
        self.proc.stdin.write(json.dumps({"op": op, "args": args}) + "\n")
        self.proc.stdin.flush()
        return self._reply(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            if self.proc.poll() is None:
                self.step("quit", timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=30)


def start_web(h, user):
    """`parley web` as `user` (a transient unit of the host's systemd, as the user unit would
    run it), no flags but where to put the sign-in file: its port and secret."""
    h.check("systemd-run", f"--unit=parley-web-{user}", f"--uid={user}", f"--gid={user}",
            f"--setenv=HOME=/home/{user}", f"--working-directory=/home/{user}",
            "/usr/bin/parley", "web", "--no-open", "--open-file", f"/home/{user}/web.html")
    h.wait_until(f"{user}'s sign-in file", lambda: h.run("test", "-s", f"/home/{user}/web.html").returncode == 0,
                 timeout=30)
    assert h.check("stat", "-c", "%U %a", f"/home/{user}/web.html").split() == [user, "600"]
    m = re.search(r"http://127\.0\.0\.1:(\d+)/#k=([0-9a-f]{64})", h.check("cat", f"/home/{user}/web.html"))
    return int(m.group(1)), m.group(2)


def newest_transfer(h, user, name):
    listing = json.loads(h.check("runuser", "-l", user, "-c", "parley files list --json"))
    found = [t for t in listing["transfers"] if t["name"] == name]
    return found[0]["id"] if found else None


def test_each_persons_parley_web_in_chromium_on_a_booted_host(deb, root):  # noqa: F811
    """For alice and for bob, in Chromium: the other person's sign-in link is refused on
    their port; their own signs in (no cookie, the secret gone from the address bar, their
    own instance); they send a message and a file from the page (the other gets both with
    the CLI, byte-identical), accept a file the other sent and download it with one click,
    byte-identical. Then the attacks on alice's page, by mallory (another local user): the
    cookie replay through mallory's loopback server gets nothing; mallory with no key gets
    nothing; alice's `parley web` killed and its port squatted by mallory: the open tab
    refuses the squatter and sends it nothing."""
    with DebHost("webhost") as h:
        h.install(deb)
        start_instances(h, ["alice", "bob", "mallory"])
        fps = {u: whoami(h, u)["fingerprint"] for u in ("alice", "bob")}
        h.wait_until("alice and bob see each other online",
                     lambda: online(h, "alice", "bob") and online(h, "bob", "alice"), timeout=DISCOVERY_TIMEOUT)
        uid = {u: int(h.check("id", "-u", u).strip()) for u in ("alice", "bob", "mallory")}
        web = {u: start_web(h, u) for u in ("alice", "bob")}
        assert web["alice"][0] != web["bob"][0]

        with BootedBrowser(h) as browser:
            for me, other in (("alice", "bob"), ("bob", "alice")):
                port, secret = web[me]
                # The other person's link on my port: the page refuses the server.
                refused = browser.step("refused", url=f"http://127.0.0.1:{port}/#k={web[other][1]}")
                assert not refused["ready"] and not refused["app_shown"], refused
                assert "not your Parley" in refused["problem"], refused
                page = browser.step("sign_in", url=f"http://127.0.0.1:{port}/#k={secret}")
                assert page["url"] == f"http://127.0.0.1:{port}/" and page["cookies"] == [], page
                assert page["me_fingerprint"] == fps[me], (page, fps)

                text = f"hello {other}, from {me}'s browser"
                browser.step("send", peer=fps[other], text=text)
                h.wait_until(f"{other} has the page's message",
                             lambda: text in h.as_user(other, f"parley read {me}").stdout, timeout=DELIVERY_TIMEOUT)

                name = f"from-{me}s-page.bin"
                sent_sha = browser.step("attach", peer=fps[other], name=name, size=3 << 20)
                h.wait_until(f"{other} is offered the page's file", lambda: newest_transfer(h, other, name),
                             timeout=DELIVERY_TIMEOUT)
                tid = newest_transfer(h, other, name)
                got = h.as_user(other, f"mkdir -p ~/in && parley get {tid[:12]} --to ~/in --json",
                                timeout=FILE_TIMEOUT)
                assert got.returncode == 0, got.stdout + got.stderr
                assert h.check("sha256sum", f"/home/{other}/in/{name}").split()[0] == sent_sha

                back = f"for-{me}.bin"
                h.check("runuser", "-l", other, "-c", f"head -c 2097152 /dev/urandom > ~/{back}")
                sent = h.as_user(other, f"parley send {me} --attach ~/{back} --json", timeout=FILE_TIMEOUT)
                assert sent.returncode == 0, sent.stdout + sent.stderr
                back_tid = json.loads(sent.stdout)["transfers"][0]["id"]
                saved = browser.step("accept_and_save", peer=fps[other], tid=back_tid, name=back)
                assert saved["sha256"] == h.check("sha256sum", f"/home/{other}/{back}").split()[0], saved
                assert saved["size"] == 2097152 and not saved["severe"], saved

            # The attacks, on alice's page. Bob's secret opens nothing on her port, nor hers on
            # his (at the protocol level too).
            port, secret = web["alice"]
            assert web_client(h, uid["bob"], port, web["bob"][1], "wrong-secret") == {"signed_in": False}
            assert web_client(h, uid["alice"], web["bob"][0], secret, "wrong-secret") == {"signed_in": False}
            # Cookie replay: alice's browser, signed in, is sent through mallory's server.
            browser.step("sign_in", url=f"http://127.0.0.1:{port}/#k={secret}")
            replay = browser.step("cookie_replay", port=port, uid=uid["mallory"])
            assert any(path == "/collect" for path, _ in replay["requests"]), "precondition: the chain ran"
            assert secret not in json.dumps(replay["requests"]), "the secret reached mallory"
            assert not any("parley" in c for c in replay["cookies"]), replay["cookies"]
            assert replay["ws_status"] == 101 and replay["replay"][0] in ("close", "eof"), replay
            assert fps["alice"] not in json.dumps(replay["replay"]) and replay["upload"] == 403, replay
            # Mallory: cannot read the sign-in file; without it, nothing.
            assert h.run("runuser", "-u", "mallory", "--", "cat", "/home/alice/web.html").returncode != 0
            stranger = web_client(h, uid["mallory"], port, "0" * 64, "stranger", back_tid)
            assert stranger["file"] == 403 and stranger["upload"] == 403, stranger
            assert stranger["ws"][0] in ("close", "eof") or '"result"' not in stranger["ws"][1], stranger
            # Squatting: alice's page open, her parley web killed, mallory binds its port.
            browser.step("sign_in", url=f"http://127.0.0.1:{port}/#k={secret}")
            h.check("systemctl", "kill", "--signal=SIGKILL", "parley-web-alice")
            h.wait_until("alice's parley web gone",
                         lambda: h.run("systemctl", "is-active", "parley-web-alice").stdout.strip() != "active",
                         timeout=30)
            squat = browser.step("squat", port=port, uid=uid["mallory"])
            assert "not your Parley" in squat["problem"] and not squat["app_shown"], squat
            assert "not connected" in squat["upload"], squat
            received = squat["received"]
            assert '"hello"' in received, "precondition: the page did reach the squatter"
            assert secret not in received, "the secret reached the squatter"
            assert '"proof"' not in received, "the page answered a server that had not proved itself"
            assert "jsonrpc" not in received and "POST /upload" not in received and "secret file" not in received

        # Stopped: bob's sign-in file goes with his parley web.
        h.check("systemctl", "stop", "parley-web-bob")
        assert h.run("test", "-e", "/home/bob/web.html").returncode != 0
