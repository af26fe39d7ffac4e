"""Issue 18 in `parley web`: files in the browser. Real parleyd processes on loopback, a
real `parley web`, a real headless Chromium (the fixtures and helpers of test_web.py).

What a person does: sees an offered file among the messages and accepts it (progress,
then Save, which downloads it with its bytes), sees a received picture inline, rejects one, cancels one, sends one from the page (file picker)
and it arrives byte-identical. What an attacker tries: a hostile file name and caption
(shown as text, nothing runs), another local user or another site posting an upload
(refused, nothing written), a too-large upload (a clear error, nothing left on disk), an
upload cut short, path tricks in the uploaded name, a thumbnail that is not an image (not
shown), an HTML or SVG file named photo.png (never rendered, served as an attachment of
plain bytes), another local user or another site's page fetching a received file
(refused). Every wait is on a condition with a bounded timeout."""
import base64
import http.client
import json
import os
import pwd
import re
import subprocess
import time
from pathlib import Path

import pytest

from parley_harness import PARLEY, Cluster, wait_until
from test_rooms import accept, joined_names, room
from test_web import (SIGNED_IN_WS, assert_nothing_ran, chromium_paths, dialog_ok, fp, open_conv, screenshot,
                      upload_auth, wait_for)
from web_auth import SIGN_IN_RE

selenium = pytest.importorskip("selenium", reason="python3-selenium missing: scripts/install-deps.sh test")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service as ChromeService  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

HOSTILE_FILE_NAME = "<img src=x onerror=window.__pwned=1>.txt"
HOSTILE_CAPTION = "<script>window.__pwned=1</script><b>bold</b>"


@pytest.fixture(scope="module")
def web():
    """alice (at the browser) and bob connected; `parley web` for alice staging uploads in
    the cluster's directory (XDG_CACHE_HOME); one headless Chromium, signed in."""
    browser, driver_path = chromium_paths()
    if not browser or not driver_path:
        pytest.fail("chromium and chromium-driver are needed: scripts/install-deps.sh test")
    cluster = Cluster()
    env = {}
    try:
        alice = cluster.node("alice").start()
        bob = cluster.node("bob", peers=[alice.address]).start()
        wait_until(lambda: alice.online("bob"), timeout=20, what="bob online")
        open_file = cluster.dir / "web-open.html"
        cache = cluster.dir / "cache"
        downloads = cluster.dir / "downloads"
        downloads.mkdir()
        proc = subprocess.Popen(
            [PARLEY, "web", "--no-open", "--socket", str(alice.socket), "--open-file", str(open_file)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, XDG_CACHE_HOME=str(cache)))
        url = port = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            m = SIGN_IN_RE.search(line)
            if m:
                url, port = m.group(1), int(m.group(2))
                break
        assert url, f"parley web printed no sign-in link: {proc.stderr.read() if proc.poll() is not None else ''}"
        wait_until(lambda: open_file.exists(), what="the open file")
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1200,800", f"--user-data-dir={cluster.dir / 'chrome'}"]:
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                                  "download.prompt_for_download": False})
        driver = webdriver.Chrome(service=ChromeService(executable_path=driver_path), options=options)
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
        driver.set_script_timeout(15)
        env = dict(cluster=cluster, alice=alice, bob=bob, proc=proc, url=url, port=port, open_file=open_file,
                   driver=driver, staging=cache / "parley" / "web-uploads", downloads=downloads)
        driver.get(url)
        wait_for(driver, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"), what="the page ready")
        yield env
    finally:
        if env.get("driver"):
            env["driver"].quit()
        if env.get("proc"):
            env["proc"].terminate()
            try:
                env["proc"].wait(timeout=10)
            except subprocess.TimeoutExpired:
                env["proc"].kill()
        cluster.close()


# ---- helpers ---------------------------------------------------------------------------

def transfer(node, tid):
    found = [t for t in node.call("files.list", {"limit": 200})["transfers"] if t["id"] == tid]
    return found[0] if found else None


def state_of(node, tid):
    t = transfer(node, tid)
    return t["state"] if t else None


def make_file(directory, name, size):
    path = Path(directory) / name
    path.write_bytes(os.urandom(size))
    return path


def line_info(driver, tid):
    """The attachment line's parts, read in one script (lines are replaced on events)."""
    return driver.execute_script("""
        const li = document.querySelector(`#messages li[data-transfer="${arguments[0]}"]`);
        if (!li) return null;
        const q = (s) => li.querySelector(s)?.textContent ?? null;
        return {name: q('.file-name'), state: q('.file-state'), caption: q('.caption'), saved: q('.file-saved'),
                buttons: [...li.querySelectorAll('.file-actions button')].map(b => b.textContent),
                progress: !!li.querySelector('progress'), imgs: li.querySelectorAll('img').length,
                elements: [...li.querySelectorAll('*')].map(e => e.tagName.toLowerCase())};
    """, tid)


def click_file_button(driver, tid, text):
    wait_for(driver, lambda d: d.execute_script(
        "const li = document.querySelector(`#messages li[data-transfer=\"${arguments[0]}\"]`);"
        "const b = li && [...li.querySelectorAll('.file-actions button')].find(b => b.textContent === arguments[1]);"
        "if (!b) return false; b.click(); return true", tid, text), what=f"the {text} button of {tid[:8]}")


def watch_for_progress(driver, tid):
    """Records whether the transfer's line ever shows a progress bar (it may pass quickly)."""
    driver.execute_script("""
        window.__sawProgress = false;
        new MutationObserver(() => {
          const li = document.querySelector(`#messages li[data-transfer="${arguments[0]}"]`);
          if (li && li.querySelector('progress')) window.__sawProgress = true;
        }).observe(document.getElementById('messages'), {childList: true, subtree: true});
    """, tid)


def attach(driver, path, caption=None):
    """Picks a file with the page's file input (as the 📎 button's picker would) and
    confirms the dialog that asks for a caption."""
    driver.find_element(By.ID, "file-input").send_keys(str(path))
    wait_for(driver, lambda d: d.execute_script("return document.getElementById('dialog').open"), what="the send dialog")
    dialog_ok(driver, "caption" if caption else None, caption)


def staged_files(env):
    root = env["staging"]
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def nothing_new_staged(env, before):
    """No staged entry beyond `before`. Not `== before`: an earlier test's copy (the upload
    the key test lets through) is deleted whenever the janitor sees its transfer end,
    which may be in the middle of a later test (CI caught it)."""
    return not set(staged_files(env)) - set(before)


def post_upload(env, query, body=b"", headers=None, length=None, cut=False):
    """A raw POST /upload: returns (status, body). `cut` closes the connection mid-body."""
    conn = http.client.HTTPConnection("127.0.0.1", env["port"], timeout=15)
    conn.putrequest("POST", f"/upload?{query}", skip_host=True, skip_accept_encoding=True)
    h = {"Host": f"127.0.0.1:{env['port']}", "Content-Type": "application/octet-stream",
         "Content-Length": str(len(body) if length is None else length)}
    h.update(headers or {})
    for k, v in h.items():
        if v is not None:
            conn.putheader(k, v)
    conn.endheaders()
    try:
        conn.send(body)
        if cut:
            conn.sock.close()
            return None, b""
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def our_origin(env):
    return f"http://127.0.0.1:{env['port']}"


# ---- the page -----------------------------------------------------------------------------

def test_an_offered_file_shows_with_accept_arrives_and_one_click_saves_it(web):
    """Also the hostile sender: its file name and caption are shown as text, nothing runs."""
    d, alice, bob = web["driver"], web["alice"], web["bob"]
    open_conv(d, f"peer:{fp(bob)}")
    src = make_file(web["cluster"].dir, "bob-src.bin", 6 << 20)
    hostile = web["cluster"].dir / "hostile-src"
    hostile.mkdir()
    (hostile / HOSTILE_FILE_NAME).write_bytes(b"hello")
    tid = bob.send_files(fp(alice), [src], caption="the report")["transfers"][0]["id"]
    hid = bob.send_files(fp(alice), [hostile / HOSTILE_FILE_NAME], caption=HOSTILE_CAPTION)["transfers"][0]["id"]
    info = wait_for(d, lambda d: (lambda i: i if i and "Accept" in i["buttons"] else None)(line_info(d, tid)),
                    what="the offer with Accept")
    assert info["name"] == "bob-src.bin" and info["caption"] == "the report"
    assert info["buttons"] == ["Accept", "Reject"] and info["state"] == "waiting for you"
    hinfo = wait_for(d, lambda d: line_info(d, hid), what="the hostile offer")
    assert hinfo["caption"] == HOSTILE_CAPTION, "the caption is shown as text, exactly"
    assert "onerror" in hinfo["name"] and hinfo["imgs"] == 0, hinfo
    assert not {"script", "b", "img", "iframe"} & set(hinfo["elements"]), hinfo["elements"]
    assert_nothing_ran(d)

    watch_for_progress(d, tid)
    click_file_button(d, tid, "Accept")
    info = wait_for(d, lambda d: (lambda i: i if i and i["state"] == "received" else None)(line_info(d, tid)),
                    timeout=60, what="the file received")
    assert info["buttons"] == ["Save"], info
    assert d.execute_script("return window.__sawProgress"), "no progress bar while it moved"
    # The page does not send the person to the daemon's own (hidden, not theirs) folder.
    kept = alice.call("files.list", {"limit": 1})["directory"]
    assert kept not in d.execute_script("return document.body.innerText")
    # One click: the browser downloads it, byte-identical, under its name.
    click_file_button(d, tid, "Save")
    target = web["downloads"] / "bob-src.bin"
    wait_until(lambda: target.exists() and target.stat().st_size == src.stat().st_size
               and not list(web["downloads"].glob("*.crdownload")), timeout=30, what="the download")
    assert target.read_bytes() == src.read_bytes()
    info = wait_for(d, lambda d: (lambda i: i if i and i["saved"] else None)(line_info(d, tid)), what="saved, said")
    assert "downloads folder" in info["saved"], info
    # Nothing on the page links to the file: it is fetched by the page's script.
    assert d.execute_script("return document.querySelectorAll('#messages a').length") == 0
    screenshot(d, "web-files")
    click_file_button(d, hid, "Reject")
    wait_until(lambda: state_of(bob, hid) == "rejected", timeout=20, what="bob sees the hostile file rejected")
    assert_nothing_ran(d)
    # No script error, no CSP violation.
    logs = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert not logs, logs


def test_reject_and_cancel_buttons(web):
    d, alice, bob = web["driver"], web["alice"], web["bob"]
    open_conv(d, f"peer:{fp(bob)}")
    src = make_file(web["cluster"].dir, "unwanted.bin", 1000)
    tid = bob.send_files(fp(alice), [src])["transfers"][0]["id"]
    click_file_button(d, tid, "Reject")
    wait_until(lambda: state_of(bob, tid) == "rejected", timeout=20, what="bob told of the rejection")
    wait_for(d, lambda d: (line_info(d, tid) or {}).get("state") == "rejected", what="shown rejected")
    assert line_info(d, tid)["buttons"] == []

    # A file from the page that bob has not accepted (alice is not verified by bob: no
    # auto-accept) can be cancelled while it waits.
    path = make_file(web["cluster"].dir, "to-cancel.bin", 2000)
    attach(d, path)
    oid = wait_for(d, lambda d: d.execute_script(
        "return [...document.querySelectorAll('#messages li.file.out')].find(li => li.querySelector('.file-name').textContent === 'to-cancel.bin')?.dataset.transfer"),
        what="the outgoing file shown")
    wait_until(lambda: state_of(bob, oid) == "offered", timeout=20, what="bob sees the offer")
    assert len(staged_files(web)) > 0
    click_file_button(d, oid, "Cancel")
    wait_until(lambda: state_of(bob, oid) == "cancelled", timeout=20, what="bob sees it cancelled")
    wait_for(d, lambda d: (line_info(d, oid) or {}).get("state") == "cancelled", what="shown cancelled")
    # Its staged copy goes once the transfer ended.
    wait_until(lambda: staged_files(web) == [], timeout=10, what="the staged copy removed")


def test_a_file_sent_from_the_page_arrives_byte_identical(web):
    d, alice, bob = web["driver"], web["alice"], web["bob"]
    open_conv(d, f"peer:{fp(bob)}")
    src = make_file(web["cluster"].dir, "from page ü.bin", 3 << 20)
    attach(d, src, "see <i>this</i>")
    tid = wait_for(d, lambda d: d.execute_script(
        "return [...document.querySelectorAll('#messages li.file.out')].find(li => li.querySelector('.file-name').textContent === 'from page ü.bin')?.dataset.transfer"),
        timeout=30, what="the outgoing file shown")
    offer = wait_until(lambda: transfer(bob, tid), timeout=20, what="bob sees the offer")
    assert offer["name"] == "from page ü.bin" and offer["caption"] == "see <i>this</i>"
    # Staged in a private directory outside the daemon's state.
    staged = [p for p in web["staging"].rglob("from page ü.bin")]
    assert len(staged) == 1 and oct(staged[0].stat().st_mode & 0o777) == "0o600"
    assert oct(staged[0].parent.stat().st_mode & 0o777) == "0o700"
    assert oct(web["staging"].stat().st_mode & 0o777) == "0o700"
    bob.call("files.accept", {"id": tid})
    done = wait_until(lambda: (lambda t: t if t and t["state"] == "completed" else None)(transfer(bob, tid)),
                      timeout=60, what="bob has the file")
    assert Path(done["path"]).read_bytes() == src.read_bytes()
    wait_for(d, lambda d: (line_info(d, tid) or {}).get("state") == "sent", timeout=20, what="shown sent")
    wait_until(lambda: staged_files(web) == [], timeout=10, what="the staged copy removed after completion")
    logs = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert not logs, logs


def test_a_file_too_large_for_the_page_is_refused_before_it_is_read(web):
    d, bob = web["driver"], web["bob"]
    open_conv(d, f"peer:{fp(bob)}")
    big = web["cluster"].dir / "huge.iso"
    with open(big, "wb") as f:
        f.truncate((1 << 30) + 1)  # sparse: instant, and the page never reads it
    before = staged_files(web)
    d.find_element(By.ID, "file-input").send_keys(str(big))
    text = wait_for(d, lambda d: d.execute_script(
        "const e = document.querySelector('#attachments .upload.error'); return e && !e.closest('[hidden]') ? e.textContent : null"),
        what="the error under the messages")
    assert "huge.iso" in text and "too large" in text and "parley send" in text, text
    assert not d.execute_script("return document.getElementById('dialog').open")
    assert nothing_new_staged(web, before)
    d.execute_script("document.querySelector('#attachments .upload.error button').click()")
    wait_for(d, lambda d: d.execute_script("return document.getElementById('attachments').hidden"), what="dismissed")


def test_a_file_sent_to_a_room_shows_in_the_room(web):
    d, alice, bob = web["driver"], web["alice"], web["bob"]
    alice.call("rooms.create", {"name": "filesroom", "members": [fp(bob)]})
    accept([bob], "filesroom")
    wait_until(lambda: joined_names(alice, "filesroom") == ["alice", "bob"], timeout=20, what="bob joined")
    room_id = room(alice, "filesroom")["id"]
    src = make_file(web["cluster"].dir, "for-the-room.txt", 300)
    tid = bob.send_files("#filesroom", [src], caption="for all")["transfers"][0]["id"]
    open_conv(d, f"room:{room_id}")
    info = wait_for(d, lambda d: line_info(d, tid), what="the room's file shown in the room")
    assert info["name"] == "for-the-room.txt" and info["caption"] == "for all" and "Accept" in info["buttons"]
    assert d.execute_script(
        "return document.querySelector(`#messages li[data-transfer=\"${arguments[0]}\"] .author`).textContent", tid) == "bob"
    # Not in the direct conversation with bob.
    open_conv(d, f"peer:{fp(bob)}")
    assert line_info(d, tid) is None


def test_a_thumbnail_that_is_not_an_image_is_not_shown(web):
    d = web["driver"]
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()
    jpeg = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\0" * 16).decode()
    svg = base64.b64encode(b"<svg onload=alert(1)></svg>").decode()
    results = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import('/files.js').then((m) => done([
          m.thumbnailURL({mediaType: 'image/png', data: arguments[0]}),
          m.thumbnailURL({mediaType: 'image/jpeg', data: arguments[1]}),
          m.thumbnailURL({mediaType: 'image/png', data: arguments[2]}),
          m.thumbnailURL({mediaType: 'image/svg+xml', data: arguments[2]}),
          m.thumbnailURL({mediaType: 'text/html', data: arguments[0]}),
          m.thumbnailURL({mediaType: 'image/jpeg', data: arguments[0]}),
          m.thumbnailURL({mediaType: 'image/png', data: 'not base64!'}),
          m.thumbnailURL({mediaType: 'image/png', data: 'A'.repeat(200000)}),
          m.thumbnailURL({mediaType: '__proto__', data: arguments[0]}),
          m.thumbnailURL(null),
        ])).catch((e) => done(String(e)));
    """, png, jpeg, svg)
    assert results[0] == f"data:image/png;base64,{png}" and results[1] == f"data:image/jpeg;base64,{jpeg}", results
    assert results[2:] == [None] * 8, results
    # files.thumbnail passes the page's allow-list (the daemon decides: a real thumbnail,
    # or an error the page shows as "no thumbnail"); files.send does not.
    codes = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const out = {};
        (async () => {""" + SIGNED_IN_WS + """
        ws.onmessage = (e) => {
          const m = JSON.parse(e.data);
          if (m.id) out[m.id] = m.error ? m.error.message : 'ok';
          if (out[1] && out[2]) { ws.close(); done(out); }
        };
        ws.send(JSON.stringify({jsonrpc: '2.0', id: 1, method: 'files.thumbnail', params: {id: 'abcd'}}));
        ws.send(JSON.stringify({jsonrpc: '2.0', id: 2, method: 'files.send', params: {to: 'bob', path: '/etc/passwd'}}));
        })().catch((e) => done(String(e)));
    """)
    assert "not available from the browser" not in codes["1"], codes
    assert "not available from the browser" in codes["2"], codes


def test_a_picture_from_a_peer_shows_its_thumbnail(web):
    """End to end: bob's daemon makes the thumbnail (a sandboxed child), alice's stores it
    undecoded, her page fetches it with files.thumbnail and the browser decodes it."""
    from test_files_thumbnails import png
    d, alice, bob = web["driver"], web["alice"], web["bob"]
    open_conv(d, f"peer:{fp(bob)}")
    noise = os.urandom(400 * 3)
    picture = png(web["cluster"].dir / "view.png", 400, 300, lambda y: noise[y % 5:] + noise[:y % 5])
    tid = bob.send_files(fp(alice), [picture])["transfers"][0]["id"]
    shown = wait_for(d, lambda d: d.execute_script("""
        const img = document.querySelector(`#messages li[data-transfer="${arguments[0]}"] img.thumb`);
        return img && img.complete && img.naturalWidth > 0
          ? {src: img.src.slice(0, 23), w: img.naturalWidth, h: img.naturalHeight} : null;
    """, tid), timeout=30, what="the thumbnail decoded by the browser")
    assert shown["src"] == "data:image/jpeg;base64,", shown
    assert 0 < shown["w"] <= 160 and 0 < shown["h"] <= 160, shown
    assert_nothing_ran(d)


# ---- attacks on POST /upload ------------------------------------------------------------

def test_an_upload_without_the_key_or_from_another_site_is_refused_and_writes_nothing(web):
    auth = upload_auth(web)
    query = f"to={fp(web['bob'])}&name=x.bin"
    before = staged_files(web)
    # Another local user has no key (nor a cookie that would stand for one); another
    # site's page has a foreign Origin or none (and could not send the header without a
    # CORS preflight, which is refused).
    for headers in [{"Origin": our_origin(web)}, {},
                    {"Origin": our_origin(web), "Cookie": "parley_session=" + "0" * 64},
                    {"Origin": our_origin(web), "X-Parley-Auth": "0" * 64},
                    {**auth, "Origin": "http://evil.example"},
                    {**auth, "Origin": "null"},
                    {**auth},
                    {**auth, "Origin": our_origin(web), "Sec-Fetch-Site": "cross-site"},
                    {**auth, "Origin": our_origin(web), "Host": "evil.example"}]:
        status, body = post_upload(web, query, b"x" * 100, headers)
        assert status in (403, 421), (headers, status, body)
    assert nothing_new_staged(web, before)
    # Really another user (root in CI): refused, and the staged copies are not theirs to read.
    try:
        other = pwd.getpwnam("nobody")
    except KeyError:
        other = None
    if other and os.getuid() == 0:
        code = (f"import urllib.request,urllib.error\n"
                f"r = urllib.request.Request('http://127.0.0.1:{web['port']}/upload?{query}', data=b'x' * 100,"
                f" headers={{'Origin': '{our_origin(web)}'}})\n"
                f"try:\n urllib.request.urlopen(r)\n print(200)\nexcept urllib.error.HTTPError as e:\n print(e.code)\n"
                f"import os\ntry:\n os.listdir({str(web['staging'])!r})\n print('listed')\nexcept PermissionError:\n print('denied')")
        r = subprocess.run(["setpriv", f"--reuid={other.pw_uid}", f"--regid={other.pw_gid}", "--clear-groups",
                            "/usr/bin/python3", "-c", code], capture_output=True, text=True, timeout=20)
        assert r.stdout.split() == ["403", "denied"], r
        assert nothing_new_staged(web, before)
    # Control: the same request with the key and our origin is taken.
    status, body = post_upload(web, query, b"x" * 100, {**auth, "Origin": our_origin(web)})
    assert status == 200, body
    web["alice"].call("files.cancel", {"id": json.loads(body)["transfers"][0]["id"]})


def test_too_large_cut_short_refused_and_path_tricks_leave_nothing_behind(web):
    ok = {**upload_auth(web), "Origin": our_origin(web)}
    bob = web["bob"]
    before = staged_files(web)
    status, body = post_upload(web, f"to={fp(bob)}&name=big.bin", b"", ok, length=(1 << 30) + 1)
    assert status == 413 and b"too large" in body and b"parley send" in body, body
    # Cut off after a few bytes of a declared 1 MiB.
    post_upload(web, f"to={fp(bob)}&name=cut.bin", b"y" * 1000, ok, length=1 << 20, cut=True)
    # The daemon refuses the recipient: its own words come back, the staged copy goes.
    status, body = post_upload(web, "to=nobody-like-this&name=lost.bin", b"z" * 10, ok)
    assert status == 422 and b"nobody-like-this" in body, body
    wait_until(lambda: nothing_new_staged(web, before), timeout=10, what="nothing left of the refused uploads")
    # Path tricks: the name keeps one harmless component, the file stays in its directory.
    status, body = post_upload(web, f"to={fp(bob)}&name=..%2F..%2F..%2Fescaped.txt", b"tricky", ok)
    assert status == 200, body
    tid = json.loads(body)["transfers"][0]["id"]
    assert transfer(web["alice"], tid)["name"] == "escaped.txt"
    assert not (web["staging"].parent / "escaped.txt").exists() and not (web["cluster"].dir / "escaped.txt").exists()
    assert [p for p in staged_files(web) if p.endswith("escaped.txt")][0].count("/") == 1
    web["alice"].call("files.cancel", {"id": tid})


# ---- received files: shown, saved, and never anyone else's -------------------------------

# A 1x1 GIF89a: a picture whose name says nothing of the sort.
TINY_GIF = (b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00"
            b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
HOSTILE_HTML = (b"<!doctype html><html><body><script>window.__pwned=1;try{opener.__pwned=1}catch(e){}</script>"
                b"<img src=x onerror=window.__pwned=1><h1>pwned</h1></body></html>")
HOSTILE_SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned=1"><script>window.__pwned=1</script></svg>'


def received(env, src, name=None):
    """bob sends `src` (as `name`), alice's daemon accepts it: the transfer id, completed."""
    alice, bob = env["alice"], env["bob"]
    if name:
        named = env["cluster"].dir / f"as-{os.urandom(4).hex()}"
        named.mkdir()
        (named / name).write_bytes(Path(src).read_bytes() if isinstance(src, Path) else src)
        src = named / name
    tid = bob.send_files(fp(alice), [src])["transfers"][0]["id"]
    wait_until(lambda: state_of(alice, tid) == "offered", timeout=20, what="the offer at alice")
    alice.call("files.accept", {"id": tid})
    wait_until(lambda: state_of(alice, tid) == "completed", timeout=60, what="the file at alice")
    return tid


def get_file(env, tid, headers=None, method="GET", host=None):
    conn = http.client.HTTPConnection("127.0.0.1", env["port"], timeout=15)
    conn.putrequest(method, f"/files/{tid}", skip_host=True, skip_accept_encoding=True)
    h = {"Host": host or f"127.0.0.1:{env['port']}"}
    h.update(headers or {})
    for k, v in h.items():
        conn.putheader(k, v)
    conn.endheaders()
    try:
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_a_received_picture_shows_inline_known_by_its_bytes(web):
    """A PNG named .png and a GIF named .bin both show inline: the bytes decide, not the name."""
    from test_files_thumbnails import png
    d, bob = web["driver"], web["bob"]
    open_conv(d, f"peer:{fp(bob)}")
    picture = png(web["cluster"].dir / "holiday.png", 320, 180,
                  lambda y: b"".join(bytes([40 + y, 90 + x // 4, 200 - y // 2]) for x in range(320)))
    pid = received(web, picture)
    gid = received(web, TINY_GIF, name="not-a-picture.bin")

    def shown(tid):
        return d.execute_script("""
            const img = document.querySelector(`#messages li[data-transfer="${arguments[0]}"] img.picture`);
            return img && img.complete && img.naturalWidth > 0
              ? {src: img.src.slice(0, 5), w: img.naturalWidth, h: img.naturalHeight} : null;
        """, tid)
    p = wait_for(d, lambda d: shown(pid), timeout=30, what="the picture inline")
    assert p == {"src": "blob:", "w": 320, "h": 180}, p
    g = wait_for(d, lambda d: shown(gid), timeout=30, what="the GIF inline")
    assert (g["w"], g["h"]) == (1, 1), g
    assert line_info(d, pid)["buttons"] == ["Save"]
    screenshot(d, "web-picture")
    # Many at once (a reload opens a conversation full of them): each still shows, the
    # page asks a few at a time within parley web's bound.
    more = [received(web, TINY_GIF, name=f"many-{i}.gif") for i in range(6)]
    d.refresh()
    wait_for(d, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"), what="the page ready")
    open_conv(d, f"peer:{fp(bob)}")
    for tid in [pid, gid, *more]:
        wait_for(d, lambda d: shown(tid), timeout=30, what=f"picture {tid[:8]} after the reload")
    assert_nothing_ran(d)
    logs = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert not logs, logs


def test_an_html_or_svg_file_named_photo_png_is_never_rendered(web):
    d, bob = web["driver"], web["bob"]
    open_conv(d, f"peer:{fp(bob)}")
    hid = received(web, HOSTILE_HTML, name="photo.png")
    sid = received(web, HOSTILE_SVG, name="drawing.svg")
    for tid in (hid, sid):
        wait_for(d, lambda d: (line_info(d, tid) or {}).get("buttons") == ["Save"], timeout=30, what="received")
    # Given time to fetch and judge them (the picture check is what would show them).
    wait_for(d, lambda d: d.execute_script(
        "return performance.getEntriesByType('resource').filter(e => e.name.includes(arguments[0]) || "
        "e.name.includes(arguments[1])).length >= 2", hid, sid), timeout=20, what="the page looked at both")
    for tid in (hid, sid):
        info = line_info(d, tid)
        assert info["imgs"] == 0 and not {"iframe", "object", "embed", "svg", "script"} & set(info["elements"]), info
    # As the server sends them: plain bytes, an attachment, sandboxed, not sniffed.
    for tid, name in ((hid, "photo.png"), (sid, "drawing.svg")):
        status, headers, body = get_file(web, tid, upload_auth(web))
        assert status == 200 and body == (HOSTILE_HTML if tid == hid else HOSTILE_SVG)
        assert headers["content-type"] == "application/octet-stream", headers
        assert headers["content-disposition"] == f"attachment; filename=\"{name}\"; filename*=UTF-8''{name}", headers
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["content-security-policy"].startswith("sandbox"), headers
    # Saving it downloads the bytes; nothing renders them.
    click_file_button(d, hid, "Save")
    target = web["downloads"] / "photo.png"
    wait_until(lambda: target.exists() and target.read_bytes() == HOSTILE_HTML, timeout=30, what="the download")
    # Opened directly in a tab (no key: a link cannot carry it): refused, nothing runs.
    main = d.current_window_handle
    d.switch_to.new_window("tab")
    try:
        d.get(f"{our_origin(web)}/files/{hid}")
        assert "Not signed in" in d.find_element(By.TAG_NAME, "body").text
        assert_nothing_ran(d)
    finally:
        d.close()
        d.switch_to.window(main)
    assert_nothing_ran(d)


def test_a_received_file_needs_the_pages_key_and_our_own_page(web):
    """Another local user (no key; really another uid), another site's page (a foreign
    Origin or Sec-Fetch-Site, and it cannot send the header without a CORS preflight, which
    is refused), DNS rebinding (another Host): refused. A hostile name stays out of the
    headers."""
    name = 'we"ird;na\u202eme é.txt'
    payload = b"secret report\n" * 100
    tid = received(web, payload, name=name)
    auth = upload_auth(web)
    for headers, host in [({}, None), ({"X-Parley-Auth": "0" * 64}, None),
                          ({"Cookie": "parley_session=" + "0" * 64}, None),
                          ({**auth, "Origin": "http://evil.example"}, None),
                          ({**auth, "Origin": f"http://127.0.0.1:{web['port'] + 1}"}, None),
                          ({**auth, "Sec-Fetch-Site": "cross-site"}, None),
                          ({**auth, "Sec-Fetch-Site": "same-site"}, None),
                          ({**auth}, "evil.example")]:
        status, _, body = get_file(web, tid, headers, host=host)
        assert status in (403, 421) and payload not in body, (headers, host, status)
    for method in ("POST", "OPTIONS", "PUT"):
        status, h, body = get_file(web, tid, {**auth, "Origin": our_origin(web)}, method=method)
        assert status == 405 and "access-control-allow-origin" not in h, (method, status)
    status, _, _ = get_file(web, "0" * 32, auth)
    assert status == 404
    status, headers, body = get_file(web, tid, auth)
    assert status == 200 and body == payload
    # The receiving daemon already took the quote and the bidi override out of the name
    # (WebReceivedFileTests checks the header's own sanitizing of such names); the rest is
    # an ASCII fallback and percent-encoded UTF-8 (RFC 6266, RFC 5987).
    assert transfer(web["alice"], tid)["name"] == "weird;name é.txt"
    disposition = headers["content-disposition"]
    assert disposition == "attachment; filename=\"weird;name _.txt\"; filename*=UTF-8''weird%3Bname%20%C3%A9.txt", \
        disposition
    # Really another user: refused.
    try:
        other = pwd.getpwnam("nobody")
    except KeyError:
        other = None
    if os.getuid() == 0:
        assert other, "user nobody is needed to act as another local user"
        code = (f"import urllib.request,urllib.error\n"
                f"r = urllib.request.Request('http://127.0.0.1:{web['port']}/files/{tid}')\n"
                f"try:\n urllib.request.urlopen(r)\n print(200)\nexcept urllib.error.HTTPError as e:\n print(e.code)\n")
        r = subprocess.run(["setpriv", f"--reuid={other.pw_uid}", f"--regid={other.pw_gid}", "--clear-groups",
                            "/usr/bin/python3", "-c", code], capture_output=True, text=True, timeout=20)
        assert r.stdout.split() == ["403"], r
    # Another site's page in the same browser, even one that somehow had the key: CORS
    # (the custom header needs a preflight, refused) and Sec-Fetch-Site stop it; an <img>
    # or a no-cors fetch carries no key.
    import http.server
    import threading
    evil_dir = web["cluster"].dir / "evil-site"
    evil_dir.mkdir(exist_ok=True)
    (evil_dir / "index.html").write_text("<!doctype html><title>evil</title>")
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(evil_dir), **k)  # noqa: E731
    evil = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    d = web["driver"]
    main = d.current_window_handle
    d.switch_to.new_window("tab")
    try:
        d.get(f"http://localhost:{evil.server_address[1]}/index.html")
        result = d.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const url = arguments[0], key = arguments[1];
            const out = {};
            (async () => {
              try { const r = await fetch(url, {headers: {'X-Parley-Auth': key}}); out.cors = r.status + ':' + (await r.text()).length; }
              catch (e) { out.cors = 'blocked'; }
              try { const r = await fetch(url, {mode: 'no-cors', credentials: 'include'}); out.nocors = r.type + ':' + r.status; }
              catch (e) { out.nocors = 'blocked'; }
              out.img = await new Promise((res) => { const i = new Image(); i.onload = () => res('loaded'); i.onerror = () => res('error'); i.src = url; });
              done(out);
            })();
        """, f"http://127.0.0.1:{web['port']}/files/{tid}", auth["X-Parley-Auth"])
        # no-cors: an opaque response (nothing readable) or none at all (Chromium also
        # applies Cross-Origin-Resource-Policy and Private Network Access).
        assert result["cors"] == "blocked" and result["img"] == "error", result
        assert result["nocors"] in ("blocked", "opaque:0"), result
    finally:
        d.close()
        d.switch_to.window(main)
        evil.shutdown()
        evil.server_close()


# WebLimits.maxConcurrentFileResponses and WebLimits.responseWriteStallSeconds.
FILE_RESPONSE_SLOTS = 4
RESPONSE_WRITE_STALL_SECONDS = 30


def stalled_download(env, tid):
    """A client that asks for the file, takes the response's head and a little of the body,
    then stops reading (a paused download): a socket with a small receive buffer, never
    read again."""
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(15)
    s.connect(("127.0.0.1", env["port"]))
    headers = {"Host": f"127.0.0.1:{env['port']}", **upload_auth(env)}
    s.sendall((f"GET /files/{tid} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
               + "\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 65536:
        chunk = s.recv(4096)
        assert chunk, f"closed before the response's head: {head!r}"
        head += chunk
    if head.startswith(b"HTTP/1.1 429"):
        s.close()
        return None
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    return s


def test_a_download_the_client_stopped_reading_gives_its_slot_back(web):
    """Paused downloads (clients that stop reading) hold `parley web`'s few file slots
    while they stall; after RESPONSE_WRITE_STALL_SECONDS without progress each is cut off
    and its slot is free again (they used to be held until `parley web` stopped, and four
    of them refused every download)."""
    # More than loopback's socket buffers hold, and above the page's own picture check
    # (files.js MAX_INLINE_PICTURE_BYTES, 16 MiB), so the open page never fetches it itself.
    payload = os.urandom(24 << 20)
    tid = received(web, payload, name="big-report.bin")
    # Stalled downloads until parley web refuses one: then every slot is held by one. (On
    # a loaded machine a response can race ahead of the channel's backpressure into
    # parley web's buffers and end, giving its slot back early: that one holds none.)
    stalled = []
    started = time.monotonic()
    for _ in range(3 * FILE_RESPONSE_SLOTS):
        s = stalled_download(web, tid)
        if s is None:
            break
        stalled.append(s)
    try:
        assert len(stalled) >= FILE_RESPONSE_SLOTS, "refused before the slots were taken"
        assert len(stalled) < 3 * FILE_RESPONSE_SLOTS, "stalled downloads never took the slots"
        status, _, body = get_file(web, tid, upload_auth(web))
        assert status == 429 and b"Too many files" in body, (status, body[:200])

        def fetched():
            try:
                s, _, b = get_file(web, tid, upload_auth(web))
            except OSError:
                return False
            return s == 200 and b == payload
        wait_until(fetched, timeout=RESPONSE_WRITE_STALL_SECONDS + 45, what="a download after the stalled ones")
        waited = time.monotonic() - started
        print(f"measured: a stalled download's slot freed after {waited:.1f} s")
        # Each stalled client was cut off short of the file, its connection closed.
        for s in stalled:
            got = 0
            s.settimeout(30)
            while True:
                try:
                    chunk = s.recv(1 << 20)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                got += len(chunk)
                assert got < len(payload), "a stalled download was not cut off"
    finally:
        for s in stalled:
            s.close()
