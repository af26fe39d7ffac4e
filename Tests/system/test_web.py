"""Issue 20: `parley web`, the chat in a browser. Real parleyd processes on loopback, a real
`parley web`, and a real headless Chromium driven by Selenium (Debian's chromium,
chromium-driver and python3-selenium; scripts/install-deps.sh test).

One browser and one `parley web` serve the whole module (starting Chromium is the slow
part); the tests run in file order and build on each other's peers. Every wait is on a
condition with a bounded timeout, never a fixed sleep.

Attacks: hostile names and bodies (HTML, <script>, <img onerror>, javascript: links, bidi
and zero-width characters) must show as text and run nothing; a WebSocket or upload that
has not signed in, a foreign Host or Origin, a state-changing GET and another local user
are refused. The sign-in's own attacks (cookie replay, squatting) are test_web_signin.py."""
import base64
import http.client
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from parley_harness import PARLEY, Cluster, wait_until
from web_auth import SIGN_IN_RE, RawWebSocket, secret_in_sign_in_file, upload_key

selenium = pytest.importorskip("selenium", reason="python3-selenium missing: scripts/install-deps.sh test")
from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.chrome.service import Service as ChromeService  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

HOSTILE_BODIES = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    '<a href="javascript:window.__pwned=1">click me</a>',
    "<b>bold</b> &amp; <i>it</i> <iframe srcdoc='<script>parent.__pwned=1</script>'></iframe>",
    "bidi \u202egnp.exe\u202c and zero\u200bwidth\u200d joiners \u2066iso\u2069",
    "<svg onload=window.__pwned=1></svg><style>body{display:none}</style>",
]
HOSTILE_NAME = "<img src=x onerror=window.__pwned=1>"
HOSTILE_STATUS = "<img src=x onerror=alert(2)> \"'&lt;"
HOSTILE_ROOM = "<b onmouseover=alert(3)>room</b>"
HOSTILE_REACTION = "<i>x</i>"


def chromium_paths():
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
    return browser, driver


@pytest.fixture(scope="module")
def web():
    """alice (the person at the browser), bob and carol connected to her, `parley web`
    for alice, one headless Chromium."""
    browser, driver_path = chromium_paths()
    if not browser or not driver_path:
        pytest.fail("chromium and chromium-driver are needed: scripts/install-deps.sh test")
    cluster = Cluster()
    env = {}
    try:
        alice = cluster.node("alice").start()
        bob = cluster.node("bob", peers=[alice.address]).start()
        carol = cluster.node("carol", peers=[alice.address]).start()
        wait_until(lambda: alice.online("bob") and alice.online("carol"), timeout=20, what="bob and carol online")
        open_file = cluster.dir / "web-open.html"
        proc = subprocess.Popen(
            [PARLEY, "web", "--no-open", "--socket", str(alice.socket), "--open-file", str(open_file)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        url = None
        deadline = time.monotonic() + 20
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = SIGN_IN_RE.search(line)
            if m:
                url, port, token = m.group(1), int(m.group(2)), m.group(3)
                break
        assert url, f"parley web printed no sign-in link: {lines} {proc.stderr.read() if proc.poll() is not None else ''}"
        wait_until(lambda: open_file.exists(), what="the open file")

        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1200,800", f"--user-data-dir={cluster.dir / 'chrome'}"]:
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = ChromeService(executable_path=driver_path)
        driver = webdriver.Chrome(service=service, options=options)
        driver.set_script_timeout(15)
        env = dict(cluster=cluster, alice=alice, bob=bob, carol=carol, proc=proc, url=url, port=port,
                   token=token, open_file=open_file, driver=driver)
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

def wait_for(driver, predicate, timeout=15, what="condition"):
    return wait_until(lambda: predicate(driver), timeout=timeout, interval=0.05, what=what)


def fp(node):
    return node.whoami()["fingerprint"]


def conv_text(driver, key):
    """The list entry's text, or None. Read in one script: the list is rebuilt on events,
    so an element found earlier may be gone."""
    return driver.execute_script(
        "const e = document.querySelector(`#conversations li[data-key=\"${arguments[0]}\"]`); return e ? e.textContent : null",
        key)


def open_conv(driver, key):
    wait_for(driver, lambda d: d.execute_script(
        "const e = document.querySelector(`#conversations li[data-key=\"${arguments[0]}\"]`); if (!e) return false; e.click(); return true",
        key), what=f"{key} in the conversations list")
    wait_for(driver, lambda d: d.execute_script(
        "return document.querySelector('#conversations li[aria-selected=\"true\"]')?.dataset.key") == key,
        what=f"{key} open")


def click_in_room_panel(driver, text, by_label=False):
    """Clicks a room panel button in one script (the panel is rebuilt on room events)."""
    wait_for(driver, lambda d: d.execute_script(
        "const b = [...document.querySelectorAll('#room-panel button')].find(b => "
        "(arguments[1] ? b.getAttribute('aria-label') : b.textContent) === arguments[0]);"
        "if (!b) return false; b.click(); return true", text, by_label), what=f"the {text} button")


def message_texts(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('#messages li.msg .body')].map(e => e.textContent)")


def type_and_send(driver, text):
    box = driver.find_element(By.ID, "composer-input")
    wait_for(driver, lambda d: box.is_enabled(), what="the composer enabled")
    # Shift+Enter makes a new line in the message; Enter sends.
    lines = text.split("\n")
    for i, line in enumerate(lines):
        box.send_keys(line)
        if i < len(lines) - 1:
            box.send_keys(Keys.SHIFT, Keys.ENTER, Keys.NULL)
    box.send_keys(Keys.ENTER)


def screenshot(driver, name):
    """PARLEY_WEB_SCREENSHOTS=docs saves the main views (the README shows them)."""
    target = os.environ.get("PARLEY_WEB_SCREENSHOTS")
    if target:
        driver.save_screenshot(str(Path(target) / f"{name}.png"))


def assert_nothing_ran(driver):
    assert driver.execute_script("return window.__pwned === undefined"), "injected script ran"
    try:
        alert = driver.switch_to.alert
        text = alert.text
        alert.dismiss()
        pytest.fail(f"an alert opened: {text}")
    except NoAlertPresentException:
        pass


def http_get(port, path, headers=None, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, headers=headers or {})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, dict(r.getheaders()), body


def upload_auth(env):
    """The X-Parley-Auth header of a page that signed in, from the person's sign-in file
    (Python acting as the person's own process, who can read it)."""
    return {"X-Parley-Auth": upload_key(secret_in_sign_in_file(env["open_file"]))}


# A WebSocket from the page's own context that signs in with the tab's secret (auth.js),
# as a script in the page could: `ws` is open and signed in when `ready` resolves.
SIGNED_IN_WS = """
    const auth = await import('/auth.js');
    const ws = new WebSocket(`ws://${location.host}/ws`);
    await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
    await auth.signIn(ws, auth.storedSecret());
"""


def ws_handshake(port, origin, host=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET /ws HTTP/1.1", f"Host: {host or f'127.0.0.1:{port}'}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    if origin:
        lines.append(f"Origin: {origin}")
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    return int(data.split(b" ", 2)[1]) if data else 0


# ---- the page ---------------------------------------------------------------------------

def test_sign_in_link_opens_the_page_and_shows_the_peers(web):
    d = web["driver"]
    d.get(web["url"])
    wait_for(d, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"), what="the page ready")
    assert d.current_url == f"http://127.0.0.1:{web['port']}/", "the secret left the address bar"
    assert d.find_element(By.ID, "me-name").text == "alice"
    for node in (web["bob"], web["carol"]):
        key = f"peer:{fp(node)}"
        wait_for(d, lambda d: conv_text(d, key), what=f"{node.name} listed")
        assert node.name in conv_text(d, key)
        assert d.execute_script(
            "return document.querySelector(`#conversations li[data-key=\"${arguments[0]}\"] .dot`).classList.contains('online')", key)
    # No cookie: the secret is in this tab's sessionStorage only.
    assert d.get_cookies() == []
    assert d.execute_script("return sessionStorage.getItem('parley.signin')") == web["token"]


def test_a_message_typed_in_the_page_arrives_at_the_other_daemon(web):
    d, bob, alice = web["driver"], web["bob"], web["alice"]
    open_conv(d, f"peer:{fp(bob)}")
    type_and_send(d, "hello from the browser\nsecond line")
    wait_until(lambda: any(m["body"] == "hello from the browser\nsecond line" for m in bob.messages(fp(alice))),
               what="bob's daemon has the message")
    # Enter sent it; the composer is empty again and the message shows with its tick.
    wait_for(d, lambda d: "hello from the browser\nsecond line" in message_texts(d), what="the message shown")
    assert d.find_element(By.ID, "composer-input").get_attribute("value") == ""
    wait_for(d, lambda d: d.execute_script(
        "return [...document.querySelectorAll('#messages li.out .tick')].some(t => t.textContent === '✓' || t.textContent === '✓✓')"),
        what="a delivery tick")


def test_a_message_from_a_peer_shows_up_live(web):
    d, bob, alice = web["driver"], web["bob"], web["alice"]
    open_conv(d, f"peer:{fp(bob)}")
    bob.call("messages.send", {"to": "alice", "body": "live from bob"})
    wait_for(d, lambda d: "live from bob" in message_texts(d), what="bob's message live in the page")
    # The page marked it read (it is open), so bob gets a read tick.
    wait_until(lambda: any(m["body"] == "live from bob" and m["readAt"] for m in bob.messages(fp(alice))),
               what="bob sees it read")
    screenshot(d, "web-conversation")


def message_action(driver, body, action):
    """Clicks a message's action button (shown on hover or focus) in one script."""
    wait_for(driver, lambda d: d.execute_script(
        "const li = [...document.querySelectorAll('#messages li.msg')].find(li => li.querySelector('.body')?.textContent === arguments[0]);"
        "const b = li && [...li.querySelectorAll('.actions button')].find(b => b.textContent === arguments[1]);"
        "if (!b) return false; b.click(); return true", body, action), what=f"{action} on {body!r}")


def dialog_ok(driver, field=None, text=None):
    if field:
        box = wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f'#dialog [name="{field}"]'), what="the dialog")[0]
        box.clear()
        box.send_keys(text)
    driver.find_element(By.ID, "dialog-ok").click()


def test_reply_react_edit_and_delete_from_the_page(web):
    d, bob, alice = web["driver"], web["bob"], web["alice"]
    open_conv(d, f"peer:{fp(bob)}")
    wait_for(d, lambda d: "live from bob" in message_texts(d), what="bob's message")
    # Reply to bob's message.
    message_action(d, "live from bob", "Reply")
    wait_for(d, lambda d: d.find_element(By.ID, "reply-to").is_displayed(), what="the reply bar")
    type_and_send(d, "a reply")
    def bobs(body):
        return next((m for m in bob.messages(fp(alice)) if m["body"] == body), None)
    reply = wait_until(lambda: bobs("a reply"), what="the reply at bob")
    assert reply["replyTo"]["excerpt"] == "live from bob"
    # React to it, edit it, delete it: each arrives at bob.
    message_action(d, "a reply", "React")
    dialog_ok(d)  # the default 👍
    wait_until(lambda: [r["reaction"] for r in (bobs("a reply") or {}).get("reactions", [])] == ["👍"], what="the reaction at bob")
    message_action(d, "a reply", "Edit")
    dialog_ok(d, "body", "an edited reply")
    wait_until(lambda: bobs("an edited reply") and bobs("an edited reply")["editedAt"], what="the edit at bob")
    wait_for(d, lambda d: "an edited reply" in message_texts(d), what="the edit in the page")
    message_action(d, "an edited reply", "Delete")
    dialog_ok(d)
    wait_until(lambda: any(m["id"] == reply["id"] and m["deletedAt"] for m in bob.messages(fp(alice))), what="deleted at bob")
    wait_for(d, lambda d: "message deleted" in message_texts(d), what="shown deleted")


def test_desktop_notification_for_a_message_in_another_conversation(web):
    d, bob, carol = web["driver"], web["bob"], web["carol"]
    d.execute_cdp_cmd("Browser.grantPermissions",
                      {"permissions": ["notifications"], "origin": f"http://127.0.0.1:{web['port']}"})
    # Record what the page shows (headless Chromium has no notification centre to look at).
    d.execute_script("""
        window.__notified = [];
        const Real = window.Notification;
        window.Notification = function (title, options) { window.__notified.push([title, options.body]); return new Real(title, options); };
        window.Notification.requestPermission = () => Real.requestPermission();
        Object.defineProperty(window.Notification, 'permission', { get: () => Real.permission });""")
    d.find_element(By.ID, "enable-notifications").click()
    wait_for(d, lambda d: d.find_element(By.ID, "enable-notifications").text == "Notifications on", what="notifications on")
    open_conv(d, f"peer:{fp(bob)}")
    carol.call("messages.send", {"to": "alice", "body": "ping from carol"})
    wait_for(d, lambda d: d.execute_script("return window.__notified") == [["carol", "ping from carol"]],
             what="a notification for carol's message")


def test_a_long_history_opens_at_the_newest_and_loads_older_on_scroll(web):
    d, carol = web["driver"], web["carol"]
    total = 130
    r = carol.rpc(timeout=30)
    try:
        for i in range(total):
            r.call("messages.send", {"to": "alice", "body": f"history {i:03d}"})
    finally:
        r.close()
    wait_until(lambda: len([m for m in web["alice"].messages(fp(carol)) if m["body"].startswith("history ")]) == total,
               timeout=30, what="alice has carol's history")
    unread = web["alice"].peer_info("carol")["unread"]
    assert unread >= total
    # The unread count, live.
    wait_for(d, lambda d: d.execute_script(
        "return document.querySelector(`#conversations li[data-key=\"${arguments[0]}\"] .unread`)?.textContent",
        f"peer:{fp(carol)}") == str(unread), what="carol's unread count")
    open_conv(d, f"peer:{fp(carol)}")
    wait_for(d, lambda d: "history 129" in message_texts(d), what="the newest page")
    first_page = message_texts(d)
    assert len(first_page) == 50 and "history 000" not in first_page
    assert d.execute_script("const l = document.getElementById('messages'); return l.scrollHeight - l.scrollTop - l.clientHeight < 5"), \
        "the conversation opens at the bottom (the newest)"
    # Scrolling to the top loads older pages until the first message is there.
    def scrolled_to_everything(d):
        d.execute_script("document.getElementById('messages').scrollTop = 0")
        return "history 000" in message_texts(d)
    wait_for(d, scrolled_to_everything, what="older pages loaded on scroll")
    texts = message_texts(d)
    assert [t for t in texts if t.startswith("history ")] == [f"history {i:03d}" for i in range(total)], \
        "every message once, in order"


def test_create_a_room_and_chat_in_it(web):
    d, bob, alice = web["driver"], web["bob"], web["alice"]
    d.find_element(By.ID, "new-room").click()
    d.find_element(By.ID, "dialog-name").send_keys("lunch")
    d.find_element(By.CSS_SELECTOR, f'#dialog input[type=checkbox][value="{fp(bob)}"]').click()
    d.find_element(By.ID, "dialog-ok").click()
    room = wait_until(lambda: next((r for r in alice.call("rooms.list")["rooms"] if r["name"] == "lunch"), None),
                      what="the room created at alice's daemon")
    wait_for(d, lambda d: conv_text(d, f"room:{room['id']}"), what="the room in the list")
    wait_until(lambda: any(r["id"] == room["id"] for r in bob.call("rooms.list")["rooms"]), what="bob invited")
    bob.call("rooms.accept", {"room": f"#{room['id']}"})
    open_conv(d, f"room:{room['id']}")
    wait_for(d, lambda d: "2 members" in d.find_element(By.ID, "conv-sub").text and
             "invited" not in d.find_element(By.ID, "room-panel").text, what="bob joined, seen live")
    type_and_send(d, "who is hungry?")
    wait_until(lambda: any(m["body"] == "who is hungry?" for m in bob.messages(f"#{room['id']}")), what="bob got the room message")
    bob.call("messages.send", {"to": f"#{room['id']}", "body": "me!"})
    wait_for(d, lambda d: "me!" in message_texts(d), what="bob's room message live")
    screenshot(d, "web-room")
    # Remove bob from the room (alice owns it) with the member's × button.
    click_in_room_panel(d, "Remove bob", by_label=True)
    wait_until(lambda: not next(r for r in bob.call("rooms.list")["rooms"] if r["id"] == room["id"])["member"],
               what="bob removed")
    # Add carol (she is invited), then leave.
    carol = web["carol"]
    wait_for(d, lambda d: d.execute_script(
        "const s = document.getElementById('room-add-select'); if (!s) return false;"
        "s.value = arguments[0]; return s.value === arguments[0]", fp(carol)), what="carol offered to add")
    click_in_room_panel(d, "Add")
    wait_until(lambda: any(r["id"] == room["id"] and r["status"] == "invited" for r in carol.call("rooms.list")["rooms"]),
               what="carol invited")
    click_in_room_panel(d, "Leave room")
    wait_until(lambda: not next(r for r in alice.call("rooms.list")["rooms"] if r["id"] == room["id"])["member"],
               what="alice left")
    wait_for(d, lambda d: "left" in (conv_text(d, f"room:{room['id']}") or ""), what="the room shown as left")


def test_a_room_message_shows_which_members_hold_it(web):
    """Delivery state that says the truth (issue 30): with carol offline and bob holding
    it, the tick names bob instead of a clock; once carol has it too, a plain ✓."""
    d, bob, carol, alice = web["driver"], web["bob"], web["carol"], web["alice"]
    room = alice.call("rooms.create", {"name": "standup", "members": [fp(bob), fp(carol)]})["room"]
    for member in (bob, carol):
        wait_until(lambda: any(r["id"] == room["id"] for r in member.call("rooms.list")["rooms"]),
                   what=f"{member.name} invited")
        member.call("rooms.accept", {"room": f"#{room['id']}"})
    wait_until(lambda: all(m["joined"] for m in next(r for r in alice.call("rooms.list")["rooms"]
                                                     if r["id"] == room["id"])["members"]), what="both joined")
    carol.stop()
    wait_until(lambda: not alice.online("carol"), what="carol offline")
    open_conv(d, f"room:{room['id']}")
    type_and_send(d, "standup at ten")
    tick = "return [...document.querySelectorAll('#messages li.out .tick')].map(t => t.textContent)"
    wait_for(d, lambda d: d.execute_script(tick) == ["✓ bob has it (1 of 2)"], what="the tick names bob")
    carol.start()
    wait_until(lambda: alice.online("carol"), timeout=20, what="carol back")
    wait_for(d, lambda d: d.execute_script(tick) == ["✓"], what="every member has it")


def test_search_finds_a_message_and_opens_it_in_context(web):
    """A hit opens its conversation around the hit (not at the newest page), highlighted,
    with the messages before and after it, and a way to the newest messages."""
    d, carol = web["driver"], web["carol"]
    box = d.find_element(By.ID, "search-input")
    box.clear()
    box.send_keys("history 042", Keys.ENTER)
    wait_for(d, lambda d: d.execute_script(
        "return [...document.querySelectorAll('#search-hits li')].some(li => li.textContent.includes('history 042'))"),
        what="the hit")
    d.execute_script("[...document.querySelectorAll('#search-hits li')].find(li => li.textContent.includes('history 042')).click()")
    wait_for(d, lambda d: d.execute_script(
        "return document.querySelector('#conversations li[aria-selected=\"true\"]')?.dataset.key") == f"peer:{fp(carol)}",
        what="carol's conversation open")
    wait_for(d, lambda d: d.execute_script("return document.querySelector('#messages li.hit .body')?.textContent")
             == "history 042", what="the hit highlighted")
    texts = message_texts(d)
    assert "history 041" in texts and "history 043" in texts, "the messages around it"
    assert "history 129" not in texts, "not the newest page"
    assert d.execute_script("""
        const l = document.getElementById('messages').getBoundingClientRect();
        const h = document.querySelector('#messages li.hit').getBoundingClientRect();
        return h.top >= l.top && h.bottom <= l.bottom"""), "the hit is in view"
    newer = d.find_element(By.ID, "newer")
    assert newer.is_displayed()
    newer.click()
    wait_for(d, lambda d: "history 129" in message_texts(d), what="the newest messages")
    assert not d.find_element(By.ID, "newer").is_displayed()
    d.find_element(By.ID, "search-close").click()


def test_keyboard_and_narrow_window(web):
    d, bob = web["driver"], web["bob"]
    key = f"peer:{fp(bob)}"
    # Enter on a focused entry opens it.
    d.execute_script("document.querySelector(`#conversations li[data-key=\"${arguments[0]}\"]`).focus()", key)
    d.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for(d, lambda d: d.execute_script(
        "return document.querySelector('#conversations li[aria-selected=\"true\"]')?.dataset.key") == key,
        what="opened with Enter")
    wait_for(d, lambda d: d.switch_to.active_element.get_attribute("id") == "composer-input", what="focus in the composer")
    # The message list by keyboard: Up reaches the newest message, which shows its
    # actions; Tab reaches them; Enter on Reply starts a reply.
    bob.call("messages.send", {"to": "alice", "body": "keyboard test"})
    wait_for(d, lambda d: "keyboard test" in message_texts(d), what="bob's message")
    d.execute_script("document.getElementById('messages').focus()")
    d.switch_to.active_element.send_keys(Keys.ARROW_UP)
    wait_for(d, lambda d: d.execute_script(
        "return document.activeElement.matches('#messages > li.msg') && document.activeElement.textContent.includes('keyboard test')"),
        what="the newest message focused")
    assert d.execute_script("return getComputedStyle(document.activeElement.querySelector('.actions')).display") == "flex"
    d.switch_to.active_element.send_keys(Keys.TAB)
    assert d.execute_script("return document.activeElement.textContent") == "Reply"
    d.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for(d, lambda d: not d.find_element(By.ID, "reply-to").get_attribute("hidden"), what="replying")
    d.execute_script("document.querySelector('#reply-to button').click()")
    d.set_window_size(420, 800)
    try:
        # Narrow: the conversation alone, with a way back to the list.
        wait_for(d, lambda d: not d.find_element(By.ID, "sidebar").is_displayed()
                 and d.find_element(By.ID, "back").is_displayed(), what="narrow conversation view")
        # Dark, from the system's preference.
        background = "return getComputedStyle(document.body).backgroundColor"
        light = d.execute_script(background)
        d.execute_cdp_cmd("Emulation.setEmulatedMedia",
                          {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        wait_for(d, lambda d: d.execute_script(background) != light, what="dark colours")
        assert d.execute_script(background) == "rgb(23, 25, 28)"
        screenshot(d, "web-narrow-dark")
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        d.find_element(By.ID, "back").click()
        wait_for(d, lambda d: d.find_element(By.ID, "sidebar").is_displayed()
                 and not d.find_element(By.ID, "conversation").is_displayed(), what="narrow list view")
    finally:
        d.set_window_size(1200, 800)


def test_hostile_names_and_bodies_show_as_text_and_run_nothing(web):
    d, cluster, alice = web["driver"], web["cluster"], web["alice"]
    # A peer whose chosen name is markup (the daemon allows <, > and = in names).
    mallory = cluster.node(HOSTILE_NAME, peers=[alice.address]).start()
    m_fp = fp(mallory)
    for body in HOSTILE_BODIES:
        mallory.call("messages.send", {"to": fp(alice), "body": body})
    mallory.call("node.set_status", {"status": HOSTILE_STATUS})
    # A room with a name that is markup, and a reaction that is markup (8 characters).
    mallory.call("rooms.create", {"name": HOSTILE_ROOM, "members": [fp(alice)]})
    last = mallory.call("messages.list", {"peer": fp(alice), "limit": 1})["messages"][0]
    wait_for(d, lambda d: conv_text(d, f"peer:{m_fp}"), what="mallory listed")
    assert HOSTILE_NAME in conv_text(d, f"peer:{m_fp}"), "the name is shown literally"
    wait_for(d, lambda d: HOSTILE_STATUS in (conv_text(d, f"peer:{m_fp}") or ""), what="the status shown literally")
    room = wait_until(lambda: next((r for r in alice.call("rooms.list")["rooms"] if r["name"] == HOSTILE_ROOM), None),
                      what="the invitation")
    wait_for(d, lambda d: f"#{HOSTILE_ROOM}" in (conv_text(d, f"room:{room['id']}") or ""), what="the room name literally")
    open_conv(d, f"peer:{m_fp}")
    wait_for(d, lambda d: len(message_texts(d)) == len(HOSTILE_BODIES), what="mallory's messages")
    mallory.call("messages.react", {"message": last["id"], "reaction": HOSTILE_REACTION})
    wait_for(d, lambda d: d.execute_script(
        "return [...document.querySelectorAll('#messages .reactions button')].map(b => b.textContent).join('|')")
        == f"{HOSTILE_REACTION} 1", what="the reaction shown literally")
    assert message_texts(d) == HOSTILE_BODIES, "every body is its literal text"
    # Unverified: the name and a short fingerprint beside it (issue 29).
    assert d.find_element(By.ID, "conv-name").text == f"{HOSTILE_NAME} ({short_fp(m_fp)})"
    # None of it became markup.
    counts = d.execute_script("""
        const m = document.getElementById('messages');
        return [m.querySelectorAll('script,img,a,iframe,svg,style,b,i').length,
                document.querySelectorAll('img').length, document.querySelectorAll('script:not([src])').length]""")
    assert counts == [0, 0, 0], counts
    assert_nothing_ran(d)
    logs = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert not logs, logs


def short_fp(fingerprint):
    return "-".join(fingerprint.split("-")[:2])


def test_an_impostor_named_with_a_trailing_space_is_marked_and_shows_its_fingerprint(web):
    """Issue 29 (H1): a LAN host takes bob's name plus a space ("bob "). Chromium collapsed
    it and `nowrap` hid it, so the sidebar showed two plain "bob"s and no clash. Now both
    are marked ⚠, every unverified name has its short fingerprint beside it, and opening
    the impostor shows the clash warning."""
    d, alice, bob = web["driver"], web["alice"], web["bob"]
    from parley_harness import BIN
    out = subprocess.run([str(BIN / "parley-adversary"), "honest", alice.address, "bob "],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "OK", out
    fake = wait_until(lambda: next((p for p in alice.call("peers.list")["peers"] if p["name"] == "bob "), None),
                      what="the impostor listed")
    bob_fp = fp(bob)
    wait_for(d, lambda d: "⚠" in (conv_text(d, f"peer:{fake['fingerprint']}") or "")
             and "⚠" in (conv_text(d, f"peer:{bob_fp}") or ""), what="clash markers on bob and 'bob '")
    shown = {k: conv_text(d, f"peer:{k}") for k in (fake["fingerprint"], bob_fp)}
    for k, text in shown.items():
        assert short_fp(k) in text, (k, text)
    # What the person sees differs: the fingerprints beside the same-looking names.
    rendered = d.execute_script("""return [...document.querySelectorAll('#conversations li .conv-label')]
        .map(e => e.innerText)""")
    bobs = [t for t in rendered if t.lstrip("⚠ ").startswith("bob")]
    assert len(bobs) >= 2 and len(set(bobs)) == len(bobs), bobs
    open_conv(d, f"peer:{fake['fingerprint']}")
    warning_text = "const w = document.getElementById('warning'); return w.hidden ? '' : w.textContent"
    wait_for(d, lambda d: "Name clash" in d.execute_script(warning_text), what="the clash warning on the impostor")
    assert short_fp(fake["fingerprint"]) in d.find_element(By.ID, "conv-name").text


def test_a_key_change_shows_a_clash_warning_and_the_verification_flow(web):
    d, cluster, alice, bob = web["driver"], web["cluster"], web["alice"], web["bob"]
    # bob "reinstalled": a new key that calls itself bob.
    new_bob = cluster.node("bob", state_dir=cluster.dir / "bob2-state", peers=[alice.address])
    new_bob.socket = cluster.dir / "bob2.sock"
    new_bob.log_path = cluster.dir / "bob2.log"
    new_bob.start()
    new_fp = fp(new_bob)
    wait_until(lambda: any(p["fingerprint"] == new_fp and p["online"] for p in alice.call("peers.list")["peers"]),
               what="the new key connected")
    bob_fp = fp(bob)
    wait_for(d, lambda d: "⚠" in (conv_text(d, f"peer:{new_fp}") or "") and "⚠" in (conv_text(d, f"peer:{bob_fp}") or ""),
             what="clash markers on both bobs")
    open_conv(d, f"peer:{new_fp}")
    warning_text = "const w = document.getElementById('warning'); return w.hidden ? '' : w.textContent"
    wait_for(d, lambda d: "Name clash" in d.execute_script(warning_text), what="the clash warning")
    assert bob_fp.split("-")[0] in d.execute_script(warning_text), "the warning names the other key"
    shown = alice.call("trust.show", {"peer": new_fp})
    screenshot(d, "web-key-change")
    # "Compare safety number" opens the confirmation window (another origin: no script of
    # the page can click "The numbers match" there).
    main = d.current_window_handle
    before = set(d.window_handles)
    d.execute_script("document.querySelector('#warning button.compare').click()")
    switch_to_new_window(d, before)
    try:
        wait_for(d, lambda d: d.execute_script("return document.getElementById('safety-number')?.textContent")
                 == shown["peer"]["safetyNumber"], what="the safety number")
        screenshot(d, "web-verify")
        # Issue 29/31: as in Signal, the same number on both screens and "the numbers
        # match"; nothing asks the person to type what this screen shows (reading aloud
        # would become copy and paste), and no fingerprint of theirs sits beside a field.
        panel = d.execute_script("""const p = document.getElementById('app');
            return {inputs: p.querySelectorAll('input, textarea').length, text: p.textContent}""")
        assert panel["inputs"] == 0, panel
        assert "Their fingerprint" not in panel["text"] and new_fp not in panel["text"], panel["text"]
        # Only this node's own fingerprint, for a colleague who types it in a terminal.
        assert d.find_element(By.ID, "your-fingerprint").text == shown["yourFingerprint"]
        # The QR code decodes (zbarimg, Debian's zbar-tools) to trust.show's qrText.
        assert qr_text(d) == shown["qrText"]
        # "They differ": not verified, said in the error style.
        d.find_element(By.ID, "verify-differ").click()
        result = d.execute_script("const r = document.getElementById('verify-result'); return [r.className, r.textContent]")
        assert "error" in result[0].split() and "Do not trust" in result[1], result
        assert next(p for p in alice.call("peers.list")["peers"] if p["fingerprint"] == new_fp)["trust"] == "pinned"
        d.find_element(By.ID, "verify-match").click()
        wait_until(lambda: next(p for p in alice.call("peers.list")["peers"] if p["fingerprint"] == new_fp)["trust"]
                   == "verified", what="verified at the daemon")
        wait_for(d, lambda d: "ok" in d.execute_script("return document.getElementById('verify-result').className").split(),
                 what="the outcome shown")
        result = d.execute_script(
            "const r = document.getElementById('verify-result'); return [r.className, r.textContent, getComputedStyle(r).color]")
        assert "ok" in result[0].split() and "error" not in result[0].split() and result[1].startswith("✓ Verified"), result
        # In the success colour (--ok, green), not the error colour.
        red, green, _ = [int(x) for x in re.findall(r"\d+", result[2])[:3]]
        assert green > red, result
        d.close()
    finally:
        d.switch_to.window(main)
    d.execute_script("window.dispatchEvent(new Event('focus'))")
    wait_for(d, lambda d: d.execute_script("return document.getElementById('conv-trust').textContent") == "verified",
             what="verified in the page")
    assert new_bob.call("trust.show", {"peer": fp(alice)})["peer"]["safetyNumber"] == shown["peer"]["safetyNumber"], \
        "the other screen shows the same number"


def start_parley_web(node, open_file):
    """`parley web` for `node`: (process, sign-in link, port)."""
    proc = subprocess.Popen(
        [PARLEY, "web", "--no-open", "--socket", str(node.socket), "--open-file", str(open_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = SIGN_IN_RE.search(line)
        if m:
            return proc, m.group(1), int(m.group(2))
    proc.kill()
    pytest.fail(f"parley web printed no sign-in link: {proc.stderr.read()}")


def test_a_held_key_is_accepted_in_the_confirmation_window(web):
    """Under `new_identities = "hold"` a new key waits for the person. Accepting it gives it
    reach, so it is a click in the confirmation window (the page's own socket is refused
    trust.accept: test_the_page_cannot_call_methods_left_out_for_the_browser)."""
    d, cluster = web["driver"], web["cluster"]
    hana = cluster.node("hana", extra_args=["--new-identities", "hold"]).start()
    ivan = cluster.node("ivan", peers=[hana.address]).start()
    ivan_fp = fp(ivan)
    wait_until(lambda: any(p["fingerprint"] == ivan_fp and p["trust"] == "pending" for p in hana.call("peers.list")["peers"]),
               timeout=20, what="ivan held at hana")
    proc, url, _ = start_parley_web(hana, cluster.dir / "hana-web.html")
    main = d.current_window_handle
    d.switch_to.new_window("tab")
    page = d.current_window_handle
    try:
        d.get(url)
        open_conv(d, f"peer:{ivan_fp}")
        wait_for(d, lambda d: d.execute_script("return !!document.getElementById('accept-key')"), what="Accept…")
        before = set(d.window_handles)
        d.find_element(By.ID, "accept-key").click()
        switch_to_new_window(d, before)
        wait_for(d, lambda d: d.execute_script("return document.getElementById('safety-number')?.textContent")
                 == hana.call("trust.show", {"peer": ivan_fp})["peer"]["safetyNumber"], what="the key's safety number")
        assert next(p for p in hana.call("peers.list")["peers"] if p["fingerprint"] == ivan_fp)["trust"] == "pending"
        d.find_element(By.ID, "accept-go").click()
        wait_until(lambda: next(p for p in hana.call("peers.list")["peers"] if p["fingerprint"] == ivan_fp)["trust"]
                   == "pinned", what="accepted at the daemon")
        d.close()
        d.switch_to.window(page)
        d.close()
    finally:
        d.switch_to.window(main)
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_block_in_the_page_unblock_in_the_confirmation_window(web):
    """Taking trust away is a click in the page; giving it back (like verifying and
    accepting) is a click in the confirmation window, which no script of the page can make."""
    d, alice, carol = web["driver"], web["alice"], web["carol"]
    carol_fp = fp(carol)
    trust = lambda: next(p for p in alice.call("peers.list")["peers"] if p["fingerprint"] == carol_fp)["trust"]
    open_conv(d, f"peer:{carol_fp}")
    wait_for(d, lambda d: d.execute_script(
        "const b = [...document.querySelectorAll('#conv-actions button')].find(b => b.textContent === 'Block');"
        "if (b) b.click(); return !!b"), what="the Block button")
    wait_until(lambda: trust() == "blocked", what="blocked at the daemon")
    wait_for(d, lambda d: d.execute_script("return !!document.getElementById('unblock-key')"), what="Unblock…")
    main = d.current_window_handle
    before = set(d.window_handles)
    d.find_element(By.ID, "unblock-key").click()
    switch_to_new_window(d, before)
    try:
        wait_for(d, lambda d: d.execute_script("return !!document.getElementById('unblock-go')"), what="the window")
        d.find_element(By.ID, "unblock-go").click()
        wait_until(lambda: trust() == "pinned", what="unblocked at the daemon")
        d.close()
    finally:
        d.switch_to.window(main)


def qr_text(driver):
    """What the verify panel's QR code says, decoded by zbarimg from the image's bytes."""
    src = driver.execute_script("return document.getElementById('verify-qr')?.src")
    assert src and src.startswith("data:image/"), src
    zbarimg = shutil.which("zbarimg")
    if not zbarimg:
        pytest.fail("zbarimg is needed to decode the QR code: scripts/install-deps.sh test")
    with tempfile.NamedTemporaryFile(suffix=".gif") as f:
        f.write(base64.b64decode(src.split(",", 1)[1]))
        f.flush()
        out = subprocess.run([zbarimg, "--raw", "-q", f.name], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out
    return out.stdout.strip()


def switch_to_new_window(driver, before):
    handle = wait_until(lambda: next((h for h in driver.window_handles if h not in before), None),
                        what="the confirmation window")
    driver.switch_to.window(handle)
    return handle


def test_a_reinstalled_colleague_is_moved_to_the_new_key_in_the_confirmation_window(web):
    """Issue 31: "a colleague reinstalled: two alice entries" without a terminal. The move
    is done in the confirmation window (localhost, another origin than the page), with the
    safety number read from the NEW device: a wrong number changes nothing, the right one
    replaces the key and the old key's history stays in the conversation. A script in the
    page can neither call trust.replace nor reach into that window."""
    d, cluster, alice, port = web["driver"], web["cluster"], web["alice"], web["port"]
    # erin (not bob: the later tests talk to him) chats, then reinstalls: a new key, same name.
    bob = cluster.node("erin", peers=[alice.address]).start()
    wait_until(lambda: alice.online("erin"), timeout=20, what="erin online")
    old_fp = fp(bob)
    bob.call("messages.send", {"to": alice.whoami()["fingerprint"], "body": "said before the reinstall"})
    wait_until(lambda: any(m["body"] == "said before the reinstall"
                           for m in alice.call("messages.list", {"peer": old_fp})["messages"]), what="erin's message")
    new_bob = cluster.node("erin", state_dir=cluster.dir / "erin2-state", peers=[alice.address])
    new_bob.socket = cluster.dir / "erin2.sock"
    new_bob.log_path = cluster.dir / "erin2.log"
    new_bob.start()
    new_fp = fp(new_bob)
    wait_until(lambda: any(p["fingerprint"] == new_fp and p["online"] for p in alice.call("peers.list")["peers"]),
               what="erin's new key connected")
    # A script in the page: trust.replace is refused on its WebSocket, its origin cannot
    # open the window's WebSocket, and the window it opens is closed to it.
    answer = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        (async () => {""" + SIGNED_IN_WS + """
        ws.onmessage = (e) => { ws.close(); done(JSON.parse(e.data)); };
        ws.send(JSON.stringify({jsonrpc: "2.0", id: 1, method: "trust.replace",
            params: {peer: arguments[0], newFingerprint: arguments[1], safetyNumber: arguments[2]}}));
        })().catch((e) => done(String(e)));""", old_fp, new_fp, alice.call("trust.show", {"peer": new_fp})["peer"]["safetyNumber"])
    assert answer["error"]["code"] == -32006 and "confirmation window" in answer["error"]["message"], answer
    assert ws_handshake(port, f"http://127.0.0.1:{port}", host=f"localhost:{port}") != 101
    main = d.current_window_handle
    before = set(d.window_handles)
    reach = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const w = window.open(`http://localhost:${location.port}/confirm.html`, "_blank");
        const t0 = Date.now();
        const poll = () => {  // until the window is at localhost (bounded)
          let r = null;
          try { if (w.location.href.startsWith("http://localhost")) r = "readable: " + w.document.body.textContent; }
          catch (e) { r = e.name; }
          if (r || Date.now() - t0 > 10000) { w.close(); done(r || "timeout"); } else setTimeout(poll, 50);
        };
        poll();""")
    assert reach == "SecurityError", reach
    for handle in set(d.window_handles) - before:  # if the script's close() did not
        d.switch_to.window(handle)
        d.close()
    d.switch_to.window(main)
    assert any(p["fingerprint"] == old_fp for p in alice.call("peers.list")["peers"]), "nothing was replaced"

    # The person: on the new key's conversation, "bob reinstalled? Move to this key…".
    open_conv(d, f"peer:{new_fp}")
    wait_for(d, lambda d: d.execute_script(
        "return !!document.querySelector(`#warning button.move-key[data-old='${arguments[0]}']`)", old_fp),
        what="the move button")
    d.execute_script("document.querySelector(`#warning button.move-key[data-old='${arguments[0]}']`).click()", old_fp)
    switch_to_new_window(d, before)
    try:
        assert d.current_url == f"http://localhost:{port}/confirm.html", "the secret left the address bar"
        wait_for(d, lambda d: d.execute_script("return !!document.getElementById('replace-number')"), what="the form")
        text = d.find_element(By.ID, "app").text
        assert alice.call("trust.show", {"peer": new_fp})["peer"]["safetyNumber"] not in text, "the number is never shown here"
        screenshot(d, "web-move-key")
        assert not axe_serious(d), "the confirmation window is accessible"
        # A wrong number (what the OLD device shows) changes nothing.
        box = d.find_element(By.ID, "replace-number")
        box.send_keys(bob.call("trust.show", {"peer": fp(alice)})["peer"]["safetyNumber"], Keys.ENTER)
        wait_for(d, lambda d: "error" in (d.execute_script("return document.getElementById('replace-result').className") or ""),
                 what="the wrong number refused")
        assert "nothing was changed" in d.find_element(By.ID, "replace-result").text
        assert any(p["fingerprint"] == old_fp for p in alice.call("peers.list")["peers"]), "a wrong number replaced the key"
        # The number on the new device, as the person reads it (spaces as they come).
        box.clear()
        box.send_keys(new_bob.call("trust.show", {"peer": fp(alice)})["peer"]["safetyNumber"], Keys.ENTER)
        wait_for(d, lambda d: "ok" in (d.execute_script("return document.getElementById('replace-result').className") or ""),
                 what="the key moved")
        d.close()
    finally:
        d.switch_to.window(main)
    peers = {p["fingerprint"]: p for p in alice.call("peers.list")["peers"]}
    assert old_fp not in peers and peers[new_fp]["trust"] == "verified"
    assert [k["fingerprint"] for k in alice.call("trust.show", {"peer": new_fp})["previousKeys"]] == [old_fp]
    # The conversation keeps the old key's history, under a line that says so.
    d.execute_script("window.dispatchEvent(new Event('focus'))")
    wait_for(d, lambda d: conv_text(d, f"peer:{old_fp}") is None, what="one erin left in the list")
    open_conv(d, f"peer:{new_fp}")
    wait_for(d, lambda d: "said before the reinstall" in message_texts(d), what="the old key's history")
    assert d.execute_script("return document.querySelectorAll('#messages li.key-divider').length") == 1


def test_a_colleague_is_added_by_address_in_the_confirmation_window(web):
    """Issue 31: first contact by address without a terminal. The person types the address
    in the confirmation window (a script in the page cannot call peers.connect, nor fill
    the window); whoever answers is a contact that is not verified, and the window says so."""
    d, cluster, alice, port = web["driver"], web["cluster"], web["alice"], web["port"]
    dave = cluster.node("dave").start()
    dave_fp = fp(dave)
    assert not any(p["fingerprint"] == dave_fp for p in alice.call("peers.list")["peers"])
    main = d.current_window_handle
    before = set(d.window_handles)
    d.find_element(By.ID, "add-by-address").click()
    switch_to_new_window(d, before)
    try:
        wait_for(d, lambda d: d.execute_script("return !!document.getElementById('connect-address')"), what="the form")
        box = d.find_element(By.ID, "connect-address")
        # Nobody there: the reason, and nothing added.
        box.send_keys("127.0.0.1:1", Keys.ENTER)
        wait_for(d, lambda d: "error" in (d.execute_script("return document.getElementById('connect-result').className") or ""),
                 what="the refusal")
        assert "127.0.0.1:1" in d.find_element(By.ID, "connect-result").text
        box.clear()
        box.send_keys(dave.address, Keys.ENTER)
        wait_for(d, lambda d: "ok" in (d.execute_script("return document.getElementById('connect-result').className") or ""),
                 timeout=30, what="connected")
        result = d.find_element(By.ID, "connect-result").text
        assert "dave" in result and short_fp(dave_fp) in result and "not verified" in result, result
        assert "null" not in result, result
        # Where a colleague reaches this node (node.status reachableAt), to give them.
        reachable = alice.call("node.status")["reachableAt"]
        mine = d.find_element(By.ID, "my-address").text
        assert all(a in mine for a in reachable) and (reachable or "no address" in mine), (reachable, mine)
        # The terminal says the same (`parley status`).
        out = subprocess.run([PARLEY, "status", "--socket", str(alice.socket)], capture_output=True, text=True, timeout=30)
        assert all(a in out.stdout for a in reachable) and (not reachable or "address:" in out.stdout), out
        screenshot(d, "web-add-by-address")
        assert not axe_serious(d), "the confirmation window is accessible"
        d.close()
    finally:
        d.switch_to.window(main)
    assert next(p for p in alice.call("peers.list")["peers"] if p["fingerprint"] == dave_fp)["trust"] == "pinned"
    d.execute_script("window.dispatchEvent(new Event('focus'))")
    wait_for(d, lambda d: conv_text(d, f"peer:{dave_fp}") is not None, what="dave in the list")
    # Opened without the page (another local user, another site, a bookmark): not signed
    # in, nothing to do, and where the chat is.
    d.switch_to.new_window("tab")
    try:
        d.get(f"http://localhost:{port}/")
        wait_for(d, lambda d: "not signed in" in (d.execute_script("return document.body.innerText") or "").lower(),
                 what="not signed in")
        assert d.execute_script("return document.getElementById('connect-address')") is None
        d.close()
    finally:
        d.switch_to.window(main)
    # The window's host serves no chat, and its WebSocket takes no request of the chat's.
    assert http_get(port, "/app.js", {"Host": f"localhost:{port}"})[0] == 404
    assert http_get(port, "/confirm.js")[0] == 404


def test_the_page_cannot_call_methods_left_out_for_the_browser(web):
    d = web["driver"]
    before = web["alice"].whoami()["noiseKey"]
    answer = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        (async () => {""" + SIGNED_IN_WS + """
        ws.onmessage = (e) => { ws.close(); done(JSON.parse(e.data)); };
        ws.send(JSON.stringify({jsonrpc: "2.0", id: 1, method: "node.rotate_key"}));
        })().catch((e) => done(String(e)));""")
    assert answer["id"] == 1 and answer["error"]["code"] == -32006 and "terminal" in answer["error"]["message"]
    assert web["alice"].whoami()["noiseKey"] == before
    # Nor vouch for a key, nor dial: those are the confirmation window's (another origin).
    bob_fp = fp(web["bob"])
    answers = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const calls = arguments[0];
        (async () => {""" + SIGNED_IN_WS + """
        const answers = [];
        ws.onmessage = (e) => { answers.push(JSON.parse(e.data)); if (answers.length === calls.length) { ws.close(); done(answers); } };
        calls.forEach(([method, params], i) => ws.send(JSON.stringify({jsonrpc: "2.0", id: i + 1, method, params})));
        })().catch((e) => done(String(e)));""", [
        ["trust.verify", {"peer": bob_fp, "fingerprint": bob_fp}], ["trust.accept", {"peer": bob_fp}],
        ["trust.unblock", {"peer": bob_fp}], ["peers.connect", {"address": "127.0.0.1:1"}],
        ["trust.replace", {"peer": bob_fp, "newFingerprint": bob_fp, "safetyNumber": "1"}]])
    assert [a["error"]["code"] for a in answers] == [-32006] * 5, answers
    assert next(p for p in web["alice"].call("peers.list")["peers"] if p["fingerprint"] == bob_fp)["trust"] != "verified"


def test_a_flooding_page_is_slowed_not_served(web):
    d = web["driver"]
    answers = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const answers = [];
        (async () => {""" + SIGNED_IN_WS + """
        ws.onmessage = (e) => { answers.push(JSON.parse(e.data)); if (answers.length === 150) { ws.close(); done(answers); } };
        ws.onerror = () => done(answers);
        for (let i = 1; i <= 150; i++) ws.send(JSON.stringify({jsonrpc: "2.0", id: i, method: "node.status"}));
        })().catch((e) => done(String(e)));""")
    assert len(answers) == 150, "every request is answered"
    limited = [a for a in answers if "error" in a]
    assert limited and all("too many requests" in a["error"]["message"] for a in limited)
    assert 150 - len(limited) >= 60, "the burst goes through"


def test_open_websockets_are_bounded(web):
    d = web["driver"]
    result = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import('/auth.js').then((auth) => {
          const sockets = [];
          let opened = 0, failed = 0;
          const settle = () => { if (opened + failed === 10) { sockets.forEach(s => s.close()); done([opened, failed]); } };
          for (let i = 0; i < 10; i++) {
            const ws = new WebSocket(`ws://${location.host}/ws`);
            sockets.push(ws);
            ws.onopen = () => auth.signIn(ws, auth.storedSecret()).then(() => { opened++; settle(); }, () => { failed++; settle(); });
            ws.onerror = () => { failed++; settle(); };
          }
        });""")
    opened, failed = result
    assert opened <= 8 - 1 and failed >= 3, result  # the page itself holds one of the 8
    # Sockets that never sign in hold no daemon connection and are bounded apart.
    port = web["port"]
    idle = [RawWebSocket(port, f"http://127.0.0.1:{port}") for _ in range(20)]
    assert sum(ws.status == 101 for ws in idle) <= 16, [ws.status for ws in idle]
    for ws in idle:
        ws.close()
    # The page's own connection still works.
    wait_for(d, lambda d: d.execute_script("return document.body.dataset.connection") == "open", what="the page connected")


def test_the_open_file_signs_in_and_keeps_no_token_on_any_command_line(web):
    d, env = web["driver"], web
    assert (os.stat(env["open_file"]).st_mode & 0o777) == 0o600
    assert secret_in_sign_in_file(env["open_file"]) == env["token"]
    # What xdg-open would do: open the file, in a new tab (its own sessionStorage); it
    # moves on to the link, and the page takes the secret from the fragment.
    first = d.current_window_handle
    d.switch_to.new_window("tab")
    try:
        d.get(f"file://{env['open_file']}")
        wait_for(d, lambda d: d.current_url == f"http://127.0.0.1:{env['port']}/" and
                 d.execute_script("return document.body.dataset.ready === 'true'"), what="signed in through the open file")
        # A tab opened without the link is not signed in, and says what to do.
        d.get(f"http://127.0.0.1:{env['port']}/")
        d.execute_script("sessionStorage.clear(); location.reload()")
        wait_for(d, lambda d: d.execute_script("return document.body.dataset.connection") == "signed-out",
                 what="a tab without the secret")
        assert "sign-in" in d.find_element(By.ID, "sign-in-problem").text
    finally:
        d.close()
        d.switch_to.window(first)
    cmdline = Path(f"/proc/{env['proc'].pid}/cmdline").read_bytes()
    assert env["token"].encode() not in cmdline


def test_the_browser_is_started_on_the_open_file_not_on_the_link(web, tmp_path):
    """Without --no-open, parley web runs xdg-open (here a stand-in on PATH that records
    its arguments): it gets the open file's path, never a token."""
    fake = tmp_path / "bin"
    fake.mkdir()
    record = tmp_path / "xdg-open-args"
    (fake / "xdg-open").write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {record}\n")
    (fake / "xdg-open").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", XDG_RUNTIME_DIR=str(tmp_path / "run"))
    (tmp_path / "run").mkdir(mode=0o700)
    proc = subprocess.Popen([PARLEY, "web", "--socket", str(web["alice"].socket)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        printed = ""
        while "Sign in:" not in printed:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            printed += line
        secret = SIGN_IN_RE.search(printed).group(3)
        wait_until(lambda: record.exists() and record.read_text().strip(), what="xdg-open started")
        args = record.read_text().split()
        open_file = tmp_path / "run" / "parley" / "web.html"
        assert args == [f"file://{open_file}"], args
        assert secret not in record.read_text()
        assert (os.stat(open_file).st_mode & 0o777) == 0o600
        assert (os.stat(open_file.parent).st_mode & 0o777) == 0o700
        assert secret_in_sign_in_file(open_file) == secret
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    # Stopped: the open file is gone with it.
    assert not (tmp_path / "run" / "parley" / "web.html").exists()


def test_a_port_in_use_is_a_clear_error(web):
    r = subprocess.run([PARLEY, "web", "--no-open", "--port", str(web["port"]), "--socket", str(web["alice"].socket),
                        "--open-file", str(web["cluster"].dir / "second.html")], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and "in use" in r.stderr and "--port" in r.stderr, r


# ---- attacks over plain HTTP --------------------------------------------------------------

def test_the_page_is_public_but_foreign_hosts_and_sites_are_refused(web):
    port = web["port"]
    # The page holds no secret (that is in the link's fragment), so it is served to anyone
    # with our Host; no response sets a cookie.
    for path in ["/", "/index.html", "/app.js", "/auth.js", "/style.css"]:
        status, headers, body = http_get(port, path)
        assert status == 200, (path, status)
        assert "Set-Cookie" not in headers
        assert "default-src 'none'" in headers["Content-Security-Policy"]
    status, headers, body = http_get(port, "/")
    assert status == 200 and b"<title>Parley</title>" in body
    for name, value in [("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY")]:
        assert headers[name] == value
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    # DNS rebinding: the browser would send the attacker's host name.
    for host in ["evil.example", f"evil.example:{port}", f"127.0.0.1:{port}.evil.example", "127.0.0.1"]:
        status, _, _ = http_get(port, "/", {"Host": host})
        assert status == 421, (host, status)
    # Another site's fetch (the browser says so).
    status, _, _ = http_get(port, "/", {"Origin": "http://evil.example"})
    assert status == 403
    status, _, _ = http_get(port, "/app.js", {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"})
    assert status == 403


def test_a_websocket_from_a_foreign_origin_is_refused_and_one_not_signed_in_gets_nothing(web):
    port = web["port"]
    origin = f"http://127.0.0.1:{port}"
    assert ws_handshake(port, origin) == 101, "control: our own origin upgrades"
    for other in ["http://evil.example", f"http://localhost:{port + 1}", None]:
        assert ws_handshake(port, other) != 101, other
    # A page from a file (Origin: null; the sign-in file, or another site's sandboxed frame)
    # only gets the server's proof, then the socket ends: it can never sign in.
    ws = RawWebSocket(port, "null")
    answer = ws.call("node.whoami")
    ws.close()
    assert answer[0] in ("close", "eof") and "result" not in json.dumps(answer), answer
    ws = RawWebSocket(port, "null")
    ws.send_text(json.dumps({"auth": "hello", "nonce": "00" * 32}))
    assert json.loads(ws.recv()[1])["auth"] == "proof"
    ws.send_text(json.dumps({"auth": "proof", "proof": "00" * 32}))
    assert ws.recv()[0] in ("close", "eof")
    ws.close()
    assert ws_handshake(port, origin, host="evil.example") != 101, "rebinding"
    # Upgraded but not signed in: a request is not relayed; the socket is closed.
    ws = RawWebSocket(port, origin)
    answer = ws.call("node.whoami")
    ws.close()
    assert answer[0] in ("close", "eof") and "result" not in json.dumps(answer), answer
    if answer[0] == "close":
        assert answer[1] == 1008 and "sign-in" in answer[2], answer
    # A wrong secret: the server proves itself (to a page that had the right one), then
    # refuses the proof.
    ws = RawWebSocket(port, origin)
    try:
        ws.sign_in("ab" * 32, origin)
        pytest.fail("a server proof for the wrong secret checked")
    except AssertionError as e:
        assert "could not prove" in str(e)
    ws.close()
    ws = RawWebSocket(port, origin)
    assert ws.sign_in(web["token"], origin) == ("text", '{"auth":"ok"}'), "control: the right secret signs in"
    assert json.loads(ws.call("node.whoami")[1])["result"]["name"] == "alice"
    ws.close()


def test_no_get_changes_state(web):
    port, alice, bob = web["port"], web["alice"], web["bob"]
    before = len(bob.messages(fp(alice)))
    rooms_before = len(alice.call("rooms.list")["rooms"])
    for path in ["/ws?method=messages.send&to=bob&body=x", "/?method=messages.send",
                 "/messages.send?to=bob&body=x", "/rooms.create?name=x"]:
        status, _, _ = http_get(port, path)
        assert status in (200, 404), (path, status)
    for method in ["POST", "PUT", "DELETE"]:
        status, _, _ = http_get(port, "/", method=method)
        assert status == 405
    # The daemon saw nothing: no message, no room.
    alice.call("node.status")
    assert len(bob.messages(fp(alice))) == before
    assert len(alice.call("rooms.list")["rooms"]) == rooms_before


def test_another_local_user_cannot_use_it(web):
    port = web["port"]
    try:
        other = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    if os.getuid() != 0:
        pytest.skip("needs root to act as another user")
    def as_nobody(code):
        return subprocess.run(["setpriv", f"--reuid={other.pw_uid}", f"--regid={other.pw_gid}", "--clear-groups",
                               "/usr/bin/python3", "-c", code], capture_output=True, text=True, timeout=20)
    # Loopback is shared: they can fetch the public page, but a WebSocket that does not
    # sign in gets nothing relayed (web_auth.py's client, run as them).
    # (Its source is passed inline: the checkout may be in a directory they cannot read.)
    code = (Path(__file__).with_name("web_auth.py").read_text() +
            f"\nws = RawWebSocket({port}, 'http://127.0.0.1:{port}')\n"
            f"print(json.dumps([ws.status, ws.call('node.whoami')]))")
    r = as_nobody(code)
    status, answer = json.loads(r.stdout)
    assert status == 101 and answer[0] in ("close", "eof") and "alice" not in json.dumps(answer), r
    # The open file, and the secret in it, are not theirs to read.
    r = as_nobody(f"open({str(web['open_file'])!r}).read()")
    assert r.returncode != 0 and "Permission denied" in r.stderr
    # Nor is the token on the command line of any process.
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        assert web["token"].encode() not in cmdline


def test_the_page_reconnects_after_the_daemon_restarts_and_misses_nothing(web):
    """Last: it restarts alice's daemon. The relay's control connection ends, the page
    reconnects and resubscribes with `since` (the last eventId it saw)."""
    d, alice, bob = web["driver"], web["alice"], web["bob"]
    d.get(f"http://127.0.0.1:{web['port']}/")
    wait_for(d, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"), what="the page ready")
    open_conv(d, f"peer:{fp(bob)}")
    alice.stop()
    wait_for(d, lambda d: d.execute_script("return document.body.dataset.connection") != "open", what="the page sees the loss")
    alice.start()
    wait_until(lambda: alice.online("bob"), timeout=20, what="bob back")
    wait_for(d, lambda d: d.execute_script("return document.body.dataset.connection") == "open", timeout=20,
             what="the page reconnected")
    bob.call("messages.send", {"to": "alice", "body": "after the restart"})
    wait_for(d, lambda d: "after the restart" in message_texts(d), what="a message after the restart, live")


def test_sidebar_previews_recent_first_title_and_announcements(web):
    """The sidebar shows each conversation's last message and puts the most recent first;
    the tab title counts unread messages; only new messages are announced to screen
    readers (the list is not a live region); no empty badge; no "pinned" jargon."""
    d, alice, bob, carol = web["driver"], web["alice"], web["bob"], web["carol"]
    assert d.execute_script("return document.getElementById('messages').getAttribute('aria-live')") is None
    # The empty header badge takes no room.
    assert d.execute_script(
        "const b = document.createElement('span'); b.className = 'badge'; document.body.append(b);"
        "const shown = getComputedStyle(b).display; b.remove(); return shown") == "none"
    open_conv(d, f"peer:{fp(carol)}")
    bob.call("messages.send", {"to": "alice", "body": "fresh news from bob"})

    def first_entry(d):
        return d.execute_script("return document.querySelector('#conversations li')?.dataset.key")
    wait_for(d, lambda d: first_entry(d) == f"peer:{fp(bob)}", what="bob's conversation first")
    entry = conv_text(d, f"peer:{fp(bob)}")
    assert "fresh news from bob" in entry and "pinned" not in entry and fp(bob) not in entry, entry
    # (bob's name carries a clash marker since the key-change test: "bob (⚠ …)".)
    wait_for(d, lambda d: re.fullmatch(r"bob.*: fresh news from bob", d.execute_script(
        "return document.getElementById('announcer').textContent")), what="the new message announced")
    def daemon_unread():
        return sum(p["unread"] for p in alice.call("peers.list")["peers"]) + sum(
            r["unread"] for r in alice.call("rooms.list")["rooms"])
    wait_for(d, lambda d: d.title == f"({daemon_unread()}) Parley", what="the unread count in the title")
    carol.call("messages.send", {"to": "alice", "body": "and carol"})
    wait_for(d, lambda d: first_entry(d) == f"peer:{fp(carol)}", what="carol first again")
    # A picture that loads after the list was scrolled to its end keeps the end in view.
    d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const l = document.getElementById('messages'); l.scrollTop = l.scrollHeight;
        requestAnimationFrame(() => requestAnimationFrame(done));""")
    d.execute_script("""
        const l = document.getElementById('messages');
        const img = document.createElement('img');
        img.src = 'data:image/svg+xml,' + encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="400"/>');
        l.lastElementChild.append(img);""")
    wait_for(d, lambda d: d.execute_script(
        "const i = document.querySelector('#messages img:last-of-type'); const l = document.getElementById('messages');"
        "return i.complete && l.scrollHeight - l.scrollTop - l.clientHeight < 5"), what="the newest still in view")



EMOJI_COLOUR_PIXELS = """
    const [text, glyph] = arguments;
    const body = [...document.querySelectorAll('#messages li.msg .body')].find(e => e.textContent === text);
    if (!body) return -1;
    const c = document.createElement('canvas'); c.width = 64; c.height = 64;
    const g = c.getContext('2d');
    g.font = getComputedStyle(body).font; g.fillStyle = '#000'; g.textBaseline = 'top';
    g.fillText(glyph, 4, 4);
    const px = g.getImageData(0, 0, 64, 64).data;
    let coloured = 0;
    for (let i = 0; i < px.length; i += 4)
      if (px[i + 3] > 0 && Math.abs(px[i] - px[i + 1]) + Math.abs(px[i + 1] - px[i + 2]) > 60) coloured++;
    return coloured;"""


def test_an_emoji_is_drawn_in_colour_not_as_an_empty_box(web):
    """With the page's own font (its stack names Noto Color Emoji; the package Recommends
    fonts-noto-color-emoji) an emoji in a message is drawn as a colour picture, not an
    outline box (which would be black on white: no coloured pixel). A glyph no font has is
    the control: it gives no coloured pixel, so the measure can fail."""
    d, bob = web["driver"], web["bob"]
    bob.call("messages.send", {"to": "alice", "body": "party 🎉"})
    open_conv(d, f"peer:{fp(bob)}")
    wait_for(d, lambda d: "party 🎉" in message_texts(d), what="the message with an emoji")
    assert d.execute_script(EMOJI_COLOUR_PIXELS, "party 🎉", "\U0010fffd") == 0, "the control glyph"
    coloured = d.execute_script(EMOJI_COLOUR_PIXELS, "party 🎉", "🎉")
    assert coloured > 50, f"🎉 drawn with {coloured} coloured pixels: no colour emoji font (fonts-noto-color-emoji)"


def axe_source():
    """axe-core's axe.min.js, from PyPI's axe-playwright-python (scripts/install-deps.sh
    test installs it for Debian's python3; no Debian package carries axe-core)."""
    import importlib.util
    spec = importlib.util.find_spec("axe_playwright_python")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("axe-core is needed for the accessibility audit: scripts/install-deps.sh test")
    return (Path(list(spec.submodule_search_locations)[0]) / "axe.min.js").read_text()


def axe_serious(driver):
    """Serious and critical violations axe-core finds in the page as it is now."""
    driver.execute_script(axe_source())
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations.map("
        "  v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))),"
        "  e => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]))")
    return [v for v in result if v["impact"] in ("serious", "critical")]


def test_an_accessibility_audit_of_the_main_screens_finds_nothing_serious(web):
    """axe-core (the engine behind Chrome's Lighthouse accessibility audit) over the list,
    a conversation with messages, the verification panel, a room, the search results, a
    dialog, and the narrow dark layout."""
    d, bob, alice = web["driver"], web["bob"], web["alice"]
    d.set_script_timeout(60)
    screens = {}
    bob.call("messages.send", {"to": "alice", "body": "audit: a message with an emoji 🎉"})
    if not any(r["name"] == "audit" for r in alice.call("rooms.list")["rooms"]):
        alice.call("rooms.create", {"name": "audit", "members": [fp(bob)]})
    open_conv(d, f"peer:{fp(bob)}")
    wait_for(d, lambda d: len(message_texts(d)) > 0, what="bob's conversation")
    screens["conversation"] = axe_serious(d)
    main = d.current_window_handle
    before = set(d.window_handles)
    d.find_element(By.ID, "verify").click()
    switch_to_new_window(d, before)
    try:
        wait_for(d, lambda d: d.execute_script("return document.getElementById('safety-number')?.textContent"),
                 what="the verification window")
        screens["verification"] = axe_serious(d)
        d.close()
    finally:
        d.switch_to.window(main)
    room = next(r for r in alice.call("rooms.list")["rooms"] if r["name"] == "audit")
    open_conv(d, f"room:{room['id']}")
    wait_for(d, lambda d: d.find_element(By.ID, "room-panel").is_displayed(), what="the room panel")
    screens["room"] = axe_serious(d)
    box = d.find_element(By.ID, "search-input")
    box.clear()
    box.send_keys("audit", Keys.ENTER)
    wait_for(d, lambda d: d.execute_script("return document.querySelectorAll('#search-hits li').length > 0"),
             what="search hits")
    screens["search"] = axe_serious(d)
    d.find_element(By.ID, "search-close").click()
    d.find_element(By.ID, "new-room").click()
    screens["dialog"] = axe_serious(d)
    d.execute_script("document.getElementById('dialog').close()")
    d.set_window_size(420, 800)
    d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        screens["narrow dark"] = axe_serious(d)
    finally:
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        d.set_window_size(1200, 800)
    serious = {name: v for name, v in screens.items() if v}
    assert not serious, json.dumps(serious, indent=1, ensure_ascii=False)
