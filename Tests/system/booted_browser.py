"""A headless Chromium (this machine's Debian chromium + chromium-driver, driven by Selenium)
for a page served on a booted host's loopback (test_people_booted.py).

The booted Debian image has no browser; its `parley web` listens on the host's own
127.0.0.1. So this program runs on this machine inside the booted host's network namespace
(`nsenter -n -t <its init>`): Chromium, chromedriver and Selenium all see the host's
loopback, and nothing else of it. The test drives it step by step over stdin/stdout, one
JSON object a line each way ({"op": ..., "args": {...}} in; {"ok": result} or
{"error": text} out, after the marker REPLY), so that it can act on the host between steps.

The steps reuse the Selenium helpers of test_web.py, test_web_files.py and
test_web_signin.py (the same page, the same checks as on this machine's loopback)."""
import hashlib
import json
import queue
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service as ChromeService
from selenium.webdriver.common.by import By

from test_web import chromium_paths, dialog_ok, message_texts, open_conv, type_and_send, wait_for
from test_web_files import click_file_button, line_info
from test_web_signin import ATTACKER_SERVER, page_ready, upload_status

REPLY = "@@booted-browser "
# A 3 MiB file through the page and the host's two daemons, on a loaded machine.
FILE_TIMEOUT = 120


def as_uid(uid, argv):
    """`argv` as another local user of the booted host (its numeric uid: the users have no
    name on this machine)."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]


class Browser:
    def __init__(self):
        browser, driver_path = chromium_paths()
        assert browser and driver_path, "chromium and chromium-driver are needed: scripts/install-deps.sh test"
        self.dir = Path(tempfile.mkdtemp(prefix="parley-booted-browser-"))
        self.downloads = self.dir / "downloads"
        self.downloads.mkdir()
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1200,800", f"--user-data-dir={self.dir / 'chrome'}"]:
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        options.add_experimental_option("prefs", {"download.default_directory": str(self.downloads),
                                                  "download.prompt_for_download": False})
        self.d = webdriver.Chrome(service=ChromeService(executable_path=driver_path), options=options)
        self.d.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow",
                                                               "downloadPath": str(self.downloads)})
        self.d.set_script_timeout(15)
        self.squatter = None

    # --- the person's flows ---
    def open(self, url):
        # From a blank page: a link that differs from the open page only in its fragment
        # would not load the page again (no new sign-in).
        self.d.get("about:blank")
        self.d.get(url)

    def sign_in(self, url):
        """Opens the sign-in link: the page proves the server is the person's own and signs in."""
        self.open(url)
        wait_for(self.d, page_ready, timeout=30, what="the page signed in")
        return {"url": self.d.current_url, "cookies": self.d.get_cookies(),
                "me": self.d.find_element(By.ID, "me-name").text,
                "me_fingerprint": self.d.find_element(By.ID, "me-name").get_attribute("title")}

    def refused(self, url):
        """Opens a link whose secret is not this server's (another person's): the page must
        refuse the server and show the chat to nobody."""
        self.open(url)
        wait_for(self.d, lambda d: d.execute_script("return document.body.dataset.connection") == "refused",
                 timeout=30, what="the page refused a server that is not the person's")
        return {"ready": page_ready(self.d), "app_shown": self.d.find_element(By.ID, "app").is_displayed(),
                "problem": self.d.find_element(By.ID, "sign-in-problem").text}

    def send(self, peer, text):
        open_conv(self.d, f"peer:{peer}")
        type_and_send(self.d, text)
        wait_for(self.d, lambda d: text in message_texts(d), what="the message shown")
        return True

    def attach(self, peer, name, size):
        """Picks a new file of random bytes with the page's file input (the 📎 picker) and
        sends it to `peer`; returns its SHA-256."""
        open_conv(self.d, f"peer:{peer}")
        path = self.dir / "out" / name
        path.parent.mkdir(exist_ok=True)
        data = Path("/dev/urandom").open("rb").read(size)
        path.write_bytes(data)
        self.d.find_element(By.ID, "file-input").send_keys(str(path))
        wait_for(self.d, lambda d: d.execute_script("return document.getElementById('dialog').open"),
                 what="the send dialog")
        dialog_ok(self.d)
        return hashlib.sha256(data).hexdigest()

    def accept_and_save(self, peer, tid, name):
        """The offered file: Accept, wait until received, Save (one click: the browser
        downloads it). Returns the downloaded file's SHA-256 and size."""
        open_conv(self.d, f"peer:{peer}")
        wait_for(self.d, lambda d: (i := line_info(d, tid)) and "Accept" in i["buttons"], timeout=60,
                 what="the offer with Accept")
        click_file_button(self.d, tid, "Accept")
        wait_for(self.d, lambda d: (i := line_info(d, tid)) and i["state"] == "received", timeout=FILE_TIMEOUT,
                 what="the file received")
        try:
            click_file_button(self.d, tid, "Save")
        except AssertionError as e:
            raise AssertionError(f"{e}; the line: {line_info(self.d, tid)}") from e
        target = self.downloads / name
        wait_for(self.d, lambda d: target.exists() and not list(self.downloads.glob("*.crdownload")),
                 timeout=60, what="the download")
        data = target.read_bytes()
        severe = [e for e in self.d.get_log("browser") if e["level"] == "SEVERE"]
        return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "severe": severe}

    # --- the attacks, by another local user (uid) ---
    def cookie_replay(self, port, uid):
        """test_web_signin's cookie replay: another user's loopback server sends the
        person's browser through a redirect chain to itself on 127.0.0.1 (same-site with
        parley web) and records what arrives; then replays it."""
        from web_auth import RawWebSocket
        proc = subprocess.Popen(as_uid(uid, ["/usr/bin/python3", "-c", ATTACKER_SERVER]),
                                stdout=subprocess.PIPE, text=True)
        try:
            attacker_port = int(proc.stdout.readline())
            self.d.get(f"http://localhost:{attacker_port}/start")
            lines = queue.Queue()
            threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
            requests = []
            deadline = time.monotonic() + 30
            while not any(p == "/collect" for p, _ in requests) and time.monotonic() < deadline:
                try:
                    requests.append(json.loads(lines.get(timeout=max(deadline - time.monotonic(), 0.01))))
                except queue.Empty:
                    break
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        cookies = [h.get("Cookie") for _, h in requests if h.get("Cookie")]
        origin = f"http://127.0.0.1:{port}"
        headers = {"Cookie": "; ".join(cookies)} if cookies else {}
        ws = RawWebSocket(port, origin, extra_headers=headers)
        answer = ws.call("node.whoami")
        ws.close()
        return {"requests": requests, "cookies": cookies, "ws_status": ws.status, "replay": list(answer),
                "upload": upload_status(port, {"Origin": origin, **headers})}

    def squat(self, port, uid):
        """After the person's parley web died, another user binds its port (web_auth's
        Squatter, run as that user): the open tab reconnects to it and must refuse it and
        send it nothing. Returns what the squatter received."""
        code = ("import signal, sys\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n"
                "from web_auth import Squatter\ns = Squatter(int(sys.argv[1]))\nprint('bound', flush=True)\n"
                "signal.sigwait({signal.SIGTERM})\nsys.stdout.write(s.text())\n")
        self.squatter = subprocess.Popen(as_uid(uid, ["/usr/bin/python3", "-c", code, str(port)]),
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        bound = self.squatter.stdout.readline()
        assert bound.strip() == "bound", self.squatter.stderr.read()
        wait_for(self.d, lambda d: d.execute_script("return document.body.dataset.connection") == "refused",
                 timeout=60, what="the page refused the squatter")
        problem = self.d.find_element(By.ID, "sign-in-problem").text
        app_shown = self.d.find_element(By.ID, "app").is_displayed()
        tried = self.d.execute_async_script("""
            const done = arguments[arguments.length - 1];
            import('/files.js').then((m) => m.upload(new Blob(['secret file']), 'bob', '', () => {}).done)
              .then(() => done('uploaded'), (e) => done(String(e.message)));""")
        self.squatter.terminate()
        received, _ = self.squatter.communicate(timeout=30)
        return {"problem": problem, "app_shown": app_shown, "upload": tried, "received": received}

    def quit(self):
        self.d.quit()
        return True


def main():
    browser = Browser()
    print(REPLY + json.dumps({"ok": "started"}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            result = getattr(browser, request["op"])(**request.get("args", {}))
            print(REPLY + json.dumps({"ok": result}), flush=True)
        except Exception:
            print(REPLY + json.dumps({"error": traceback.format_exc()}), flush=True)
        if request["op"] == "quit":
            return


if __name__ == "__main__":
    main()
