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
- each person's `parley web` against their own instance (an HTTP-level client in the
  host's network namespace): sign in, send, upload, receive and download a file; another
  person's secret and another local user get nothing.
"""
import hashlib
import json
import os
import re
import shlex
import subprocess
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

# The browser's side, run on this machine inside the booted host's network namespace (the
# host has no Python; its `parley web` listens on its own loopback): web_auth's raw
# WebSocket signs in as the page does, and plain HTTP does what the page's fetch and
# XMLHttpRequest do. An HTTP-level client, not Chromium (docs/WEB.md; test_web*.py drive
# Chromium against the same server on this machine's loopback).
WEB_CLIENT = r'''
import hashlib, http.client, json, sys, time
from web_auth import RawWebSocket, upload_key
port, secret, action = int(sys.argv[1]), sys.argv[2], sys.argv[3]
origin = f"http://127.0.0.1:{port}"

def http_call(method, path, headers, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=body, headers={"Host": f"127.0.0.1:{port}", **headers})
    r = c.getresponse()
    return r.status, r.read()

def signed_in():
    ws = RawWebSocket(port, origin)
    assert ws.status == 101, ws.status
    answer = ws.sign_in(secret, origin)
    assert answer == ("text", '{"auth":"ok"}'), answer
    return ws

def result(ws, method, params=None):
    kind, text = ws.call(method, params)[:2]
    while "id" not in json.loads(text):   # skip notifications
        kind, text = ws.recv()[:2]
    return json.loads(text)

out = {}
if action == "page":
    ws = signed_in()
    out["whoami"] = result(ws, "node.whoami")["result"]["fingerprint"]
    out["send"] = "result" in result(ws, "messages.send", {"to": sys.argv[4], "body": sys.argv[5]})
    status, body = http_call("POST", f"/upload?to={sys.argv[4]}&name=from-the-page.bin",
                             {"X-Parley-Auth": upload_key(secret), "Origin": origin,
                              "Content-Type": "application/octet-stream"}, sys.stdin.buffer.read())
    out["upload"] = [status, json.loads(body)]
elif action == "receive":
    ws = signed_in()
    tid = sys.argv[4]
    result(ws, "files.accept", {"id": tid})
    deadline = time.monotonic() + 120
    state = None
    while time.monotonic() < deadline:
        state = result(ws, "files.list", {"id": tid, "limit": 1})["result"]["transfers"][0]["state"]
        if state in ("completed", "failed", "rejected", "cancelled"):
            break
        time.sleep(0.2)
    out["state"] = state
    status, body = http_call("GET", f"/files/{tid}", {"X-Parley-Auth": upload_key(secret)})
    out["status"] = status
    out["sha256"] = hashlib.sha256(body).hexdigest()
elif action == "stranger":
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
'''


def web_client(h, uid, port, secret, action, *args, body=b""):
    """WEB_CLIENT as `uid` (numeric; the booted host's users have no name here) in the host's
    network namespace."""
    init = subprocess.run([str(debhost.DEBHOST), "pid", h.name], env=debhost._env(), capture_output=True,
                          text=True, check=True, timeout=30).stdout.strip()
    argv = ["nsenter", "-t", init, "-n", "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "/usr/bin/python3", "-c", WEB_CLIENT, str(port), secret, action, *map(str, args)]
    out = subprocess.run(argv, capture_output=True, input=body, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(Path(__file__).parent)))
    assert out.returncode == 0, (out.stdout + out.stderr).decode(errors="replace")
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


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


def test_each_persons_parley_web_on_a_booted_host(deb, root):  # noqa: F811
    """alice's `parley web` talks to her own instance: sign in, send, upload a file to bob,
    receive bob's file and download it (GET /files/ID); bob's secret opens nothing on her
    port; mallory (another local user) gets nothing; the sign-in file goes when it stops."""
    with DebHost("webhost") as h:
        h.install(deb)
        start_instances(h, ["alice", "bob", "mallory"])
        fps = {u: whoami(h, u)["fingerprint"] for u in ("alice", "bob")}
        h.wait_until("alice and bob see each other online",
                     lambda: online(h, "alice", "bob") and online(h, "bob", "alice"), timeout=DISCOVERY_TIMEOUT)
        uid = {u: int(h.check("id", "-u", u).strip()) for u in ("alice", "bob", "mallory")}
        port, secret = start_web(h, "alice")
        bob_port, bob_secret = start_web(h, "bob")
        assert port != bob_port

        upload = os.urandom(3 << 20)
        page = web_client(h, uid["alice"], port, secret, "page", fps["bob"], "hello bob, from my browser",
                          body=upload)
        assert page["whoami"] == fps["alice"] and page["send"], page
        assert page["upload"][0] == 200, page
        h.wait_until("bob has the page's message",
                     lambda: "hello bob, from my browser" in h.as_user("bob", "parley read alice").stdout,
                     timeout=DELIVERY_TIMEOUT)
        tid = page["upload"][1]["transfers"][0]["id"]
        got = h.as_user("bob", f"mkdir -p ~/in && parley get {tid[:12]} --to ~/in --json", timeout=FILE_TIMEOUT)
        assert got.returncode == 0, got.stdout + got.stderr
        assert h.check("sha256sum", "/home/bob/in/from-the-page.bin").split()[0] == \
            hashlib.sha256(upload).hexdigest()

        h.check("runuser", "-l", "bob", "-c", "head -c 2097152 /dev/urandom > ~/for-alice.bin")
        sent = h.as_user("bob", "parley send alice --attach ~/for-alice.bin --json", timeout=FILE_TIMEOUT)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        bob_tid = json.loads(sent.stdout)["transfers"][0]["id"]
        received = web_client(h, uid["alice"], port, secret, "receive", bob_tid)
        assert received == {"state": "completed", "status": 200,
                            "sha256": h.check("sha256sum", "/home/bob/for-alice.bin").split()[0]}, received

        # Bob's own secret opens nothing on alice's port (nor hers on his).
        assert web_client(h, uid["bob"], port, bob_secret, "wrong-secret") == {"signed_in": False}
        assert web_client(h, uid["alice"], bob_port, secret, "wrong-secret") == {"signed_in": False}
        # Mallory: cannot read the sign-in file; without it, nothing.
        assert h.run("runuser", "-u", "mallory", "--", "cat", "/home/alice/web.html").returncode != 0
        stranger = web_client(h, uid["mallory"], port, "0" * 64, "stranger", bob_tid)
        assert stranger["file"] == 403 and stranger["upload"] == 403, stranger
        assert stranger["ws"][0] in ("close", "eof") or '"result"' not in stranger["ws"][1], stranger
        # Stopped: the sign-in file goes with it.
        h.check("systemctl", "stop", "parley-web-alice")
        assert h.run("test", "-e", "/home/alice/web.html").returncode != 0
