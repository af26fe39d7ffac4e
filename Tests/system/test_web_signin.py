"""Issue 28: `parley web` signs in without a cookie another local user can replay, and its
page refuses a server that cannot prove it is the person's own (docs/WEB.md "Signing in").

Real parleyd and `parley web` processes, a real headless Chromium (Selenium), and the
attacker's servers on other loopback ports. The attacks:
- **cookie replay**: a page of any site sends the browser to the attacker's loopback server,
  which sends it on to itself; from there on the browser is same-site with 127.0.0.1, so a
  SameSite=Strict cookie of `parley web` (cookies are not separated by port) would arrive
  and could be replayed. Now there is none, and a replay of whatever arrived gets nothing.
- **squatting**: `parley web` dies (SIGKILL), another user binds its port. The stale sign-in
  file is removed by the next start even though the port is taken, and a tab still open
  on the port refuses the squatter: it sends it neither the secret, nor a proof, nor a
  request, nor an upload, and tells the person.
(The redirect chain's server runs as another user, `nobody`, when the tests run as root;
the squatter runs in this process: what is tested is what the browser sends it.)"""
import json
import os
import pwd
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from parley_harness import PARLEY, Cluster, wait_until
from test_web import chromium_paths, wait_for
from web_auth import SIGN_IN_RE, RawWebSocket, Squatter, upload_key

selenium = pytest.importorskip("selenium", reason="python3-selenium missing: scripts/install-deps.sh test")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service as ChromeService  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_web(alice, runtime, port=None):
    """`parley web --no-open` with its sign-in file in `runtime`/parley/web.html; returns
    (process, url, port, secret)."""
    args = [PARLEY, "web", "--no-open", "--socket", str(alice.socket)]
    if port:
        args += ["--port", str(port)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, XDG_RUNTIME_DIR=str(runtime)))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        # Any sign-in link (so that, run against a parley web from before issue 28, the
        # attacks themselves are what fails); the secret only from the fragment.
        m = re.search(r"Sign in: (http://127\.0\.0\.1:(\d+)/\S*)", line)
        if m:
            secret = SIGN_IN_RE.search(line)
            return proc, m.group(1), int(m.group(2)), secret.group(3) if secret else "no secret in the link"
    proc.kill()
    pytest.fail(f"parley web printed no sign-in link: {proc.stderr.read()}")


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def env():
    browser, driver_path = chromium_paths()
    if not browser or not driver_path:
        pytest.fail("chromium and chromium-driver are needed: scripts/install-deps.sh test")
    cluster = Cluster()
    state = {}
    try:
        alice = cluster.node("alice").start()
        bob = cluster.node("bob", peers=[alice.address]).start()
        wait_until(lambda: alice.online("bob"), timeout=20, what="bob online")
        runtime = cluster.dir / "run"
        runtime.mkdir(mode=0o700)
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1200,800", f"--user-data-dir={cluster.dir / 'chrome'}"]:
            options.add_argument(arg)
        driver = webdriver.Chrome(service=ChromeService(executable_path=driver_path), options=options)
        driver.set_script_timeout(15)
        state = dict(cluster=cluster, alice=alice, bob=bob, runtime=runtime, driver=driver)
        yield state
    finally:
        if state.get("driver"):
            state["driver"].quit()
        cluster.close()


def page_ready(d):
    return d.execute_script("return document.body.dataset.ready === 'true'")


ATTACKER_SERVER = r"""
import http.server, json, sys, threading
# One line per request: the server answers in threads (the browser asks for /favicon.ico
# beside a page), and two unlocked prints can share a line, which the reader cannot parse.
OUT = threading.Lock()
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_GET(self):
        with OUT:
            print(json.dumps([self.path, dict(self.headers)]), flush=True)
        port = self.server.server_address[1]
        if self.path == "/start":
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{port}/hop")
            self.end_headers()
            return
        body = (b'<!doctype html><meta http-equiv="refresh" content="0;url=/collect"><title>hop</title>'
                if self.path == "/hop" else b"<!doctype html><title>collected</title>collected")
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class Attacker:
    """Another user's loopback HTTP server (the user `nobody` when the tests run as root,
    as in CI): /start (reached as localhost, another site) redirects to itself on
    127.0.0.1, whose page moves on to /collect by itself (a navigation from 127.0.0.1,
    same-site with parley web). Records every request's path and headers."""

    def __init__(self):
        command = ["/usr/bin/python3", "-c", ATTACKER_SERVER]
        if os.getuid() == 0:
            other = pwd.getpwnam("nobody")
            command = ["setpriv", f"--reuid={other.pw_uid}", f"--regid={other.pw_gid}", "--clear-groups"] + command
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.requests = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            path, headers = json.loads(line)
            self.requests.append((path, headers))

    def cookies(self):
        return [h.get("Cookie") for _, h in self.requests if h.get("Cookie")]

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def test_a_cookie_replay_through_another_users_loopback_server_gets_nothing(env):
    d, alice = env["driver"], env["alice"]
    proc, url, port, secret = start_web(alice, env["runtime"])
    attacker = Attacker()
    try:
        d.get(url)
        wait_for(d, page_ready, what="the page signed in")
        # The secret left the address bar and is in no cookie.
        assert d.current_url == f"http://127.0.0.1:{port}/"
        assert d.get_cookies() == []
        # The redirect chain, in the person's browser.
        d.get(f"http://localhost:{attacker.port}/start")
        wait_until(lambda: any(p == "/collect" for p, _ in attacker.requests), what="the chain reached /collect")
        collected = attacker.cookies()
        everything = json.dumps(attacker.requests)
        assert secret not in everything, "the secret reached the attacker"
        assert not any("parley" in c for c in collected), f"a parley cookie reached the attacker: {collected}"
        # Replayed anyway (whatever arrived), with a forged Origin, as another program would.
        origin = f"http://127.0.0.1:{port}"
        headers = {"Cookie": "; ".join(collected)} if collected else {}
        ws = RawWebSocket(port, origin, extra_headers=headers)
        assert ws.status == 101
        answer = ws.call("node.whoami")
        ws.close()
        assert answer[0] in ("close", "eof"), f"the replay was answered: {answer}"
        assert alice.whoami()["fingerprint"] not in json.dumps(answer)
        ws = RawWebSocket(port, origin, extra_headers=headers)
        ws.send_text(json.dumps({"auth": "hello", "nonce": "00" * 32}))
        proof = json.loads(ws.recv()[1])
        ws.send_text(json.dumps({"auth": "proof", "proof": proof["proof"]}))  # its own proof back
        answer = ws.recv()
        ws.close()
        assert answer[0] in ("close", "eof") and "ok" not in json.dumps(answer), answer
        # The upload needs its key, not a cookie.
        conn_status = upload_status(port, {"Origin": origin, **headers})
        assert conn_status == 403
        # Control: the person's own page, back in the same tab, signs in again from
        # sessionStorage (no link needed), and the right key uploads... are accepted.
        d.get(f"http://127.0.0.1:{port}/")
        wait_for(d, page_ready, what="the page signed in again from this tab's sessionStorage")
        ws = RawWebSocket(port, origin)
        assert ws.sign_in(secret, origin) == ("text", '{"auth":"ok"}')
        assert json.loads(ws.call("node.whoami")[1])["result"]["fingerprint"] == alice.whoami()["fingerprint"]
        ws.close()
        assert upload_status(port, {"Origin": origin, "X-Parley-Auth": upload_key(secret)}, to="nobody-at-all") == 422
    finally:
        attacker.close()
        stop(proc)


def upload_status(port, headers, to="x"):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", f"/upload?to={to}&name=a.bin", body=b"abc",
                 headers={"Content-Type": "application/octet-stream", **headers})
    status = conn.getresponse().status
    conn.close()
    return status


def test_a_stale_sign_in_file_goes_even_when_the_port_is_taken(env):
    runtime, alice = env["runtime"], env["alice"]
    port = free_port()
    sign_in_file = runtime / "parley" / "web.html"
    proc, _, _, secret = start_web(alice, runtime, port)
    assert sign_in_file.exists() and secret in sign_in_file.read_text()
    assert (os.stat(sign_in_file).st_mode & 0o777) == 0o600
    assert (os.stat(sign_in_file.parent).st_mode & 0o777) == 0o700
    # A second parley web of the same person is refused, and leaves the first one's file.
    r = subprocess.run([PARLEY, "web", "--no-open", "--socket", str(alice.socket)], capture_output=True, text=True,
                       timeout=20, env=dict(os.environ, XDG_RUNTIME_DIR=str(runtime)))
    assert r.returncode == 1 and "already running" in r.stderr and str(sign_in_file) in r.stderr, r
    assert secret in sign_in_file.read_text()
    # Killed: nothing runs to remove the file.
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert sign_in_file.exists(), "precondition: a SIGKILL leaves the file"
    squatter = Squatter(port)
    try:
        r = subprocess.run([PARLEY, "web", "--no-open", "--port", str(port), "--socket", str(alice.socket)],
                           capture_output=True, text=True, timeout=20,
                           env=dict(os.environ, XDG_RUNTIME_DIR=str(runtime)))
        assert r.returncode == 1 and "in use" in r.stderr, r
        assert not sign_in_file.exists(), "the stale sign-in file still points at the squatted port"
    finally:
        squatter.close()


def test_an_open_page_refuses_a_squatter_and_sends_it_nothing(env):
    d, alice, bob = env["driver"], env["alice"], env["bob"]
    port = free_port()
    proc, url, _, secret = start_web(alice, env["runtime"], port)
    squatter = None
    try:
        d.get(url)
        wait_for(d, page_ready, what="the page signed in")
        # parley web dies; another user binds the port at once; the open tab reconnects to it.
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        squatter = Squatter(port)
        wait_until(lambda: "GET /ws" in squatter.text(), timeout=20, what="the open tab reconnected to the squatter")
        assert "parley_session" not in squatter.text(), "a cookie reached the squatter"
        wait_for(d, lambda d: d.execute_script("return document.body.dataset.connection") == "refused", timeout=30,
                 what="the page refused the squatter")
        problem = d.find_element(By.ID, "sign-in-problem")
        assert problem.is_displayed() and "not your Parley" in problem.text
        assert not d.find_element(By.ID, "app").is_displayed(), "the chat is hidden: nothing more is typed into it"
        # Whatever the page's scripts try now goes nowhere: an upload has no key.
        result = d.execute_async_script("""
            const done = arguments[arguments.length - 1];
            import('/files.js').then((m) => m.upload(new Blob(['secret file']), 'bob', '', () => {}).done)
              .then(() => done('uploaded'), (e) => done(String(e.message)));""")
        assert "not connected" in result, result
        received = squatter.text()
        assert '"hello"' in received, "precondition: the page did reach the squatter"
        assert secret not in received, "the secret reached the squatter"
        assert '"proof"' not in received, "the page answered a server that had not proved itself"
        assert "jsonrpc" not in received and "POST /upload" not in received and "secret file" not in received
        assert "parley_session" not in received, "a cookie reached the squatter"
    finally:
        if squatter:
            squatter.close()
        stop(proc)


def test_a_websocket_that_never_signs_in_is_closed(env):
    """Another local user's sockets that say nothing are closed after the sign-in time
    (WebLimits.signInTimeoutSeconds, 10 s), holding no daemon connection meanwhile."""
    proc, _, port, secret = start_web(env["alice"], env["runtime"])
    try:
        origin = f"http://127.0.0.1:{port}"
        idle = RawWebSocket(port, origin, timeout=30)
        assert idle.status == 101
        started = time.monotonic()
        answer = idle.recv()
        waited = time.monotonic() - started
        idle.close()
        assert answer[0] == "close" and answer[1] == 1008, answer
        assert 5 < waited < 25, waited
        # Control: the person's page still signs in.
        ws = RawWebSocket(port, origin)
        assert ws.sign_in(secret, origin) == ("text", '{"auth":"ok"}')
        ws.close()
    finally:
        stop(proc)


def test_a_stale_sign_in_file_opened_while_the_port_is_squatted_goes_nowhere(env):
    """Between a SIGKILL and the next start the sign-in file stays; opened then (the person
    double-clicks it, the unit has not restarted yet) with another user on the port, it
    checks the server's proof before it goes there: it stays on the file and says so, and
    the squatter gets neither a page request nor the secret."""
    d, alice, runtime = env["driver"], env["alice"], env["runtime"]
    port = free_port()
    proc, _, _, secret = start_web(alice, runtime, port)
    sign_in_file = runtime / "parley" / "web.html"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert sign_in_file.exists(), "precondition: a SIGKILL leaves the file"
    squatter = Squatter(port)
    first = d.current_window_handle
    d.switch_to.new_window("tab")
    try:
        d.get(f"file://{sign_in_file}")
        wait_for(d, lambda d: "not your Parley" in d.find_element(By.TAG_NAME, "body").text, timeout=20,
                 what="the sign-in file refused the squatter")
        assert d.current_url.startswith("file://"), d.current_url
        received = squatter.text()
        assert "GET / " not in received and "GET /index.html" not in received, "the browser went to the squatter"
        assert secret not in received
    finally:
        d.close()
        d.switch_to.window(first)
        squatter.close()
    # Nothing listening at all: it says parley web is not running, and goes nowhere.
    d.switch_to.new_window("tab")
    try:
        d.get(f"file://{sign_in_file}")
        wait_for(d, lambda d: "not running" in d.find_element(By.TAG_NAME, "body").text, timeout=20,
                 what="the sign-in file with nothing on the port")
        assert d.current_url.startswith("file://"), d.current_url
    finally:
        d.close()
        d.switch_to.window(first)
