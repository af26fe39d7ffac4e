"""Item 7: the network-key file format (docs/PROTOCOL.md "Optional network key") and its
permission error, checked against a real parleyd."""
import os
import subprocess

import pytest

from conftest import PARLEYD, write_network_key
from parley_wire import ACK, Identity, Session, chat, parse_ids

KEY = bytes(range(0xa0, 0xc0))


@pytest.mark.parametrize("text", [
    KEY.hex() + "\n",
    KEY.hex() + "\r\n",
    KEY.hex().upper(),
    KEY.hex()[:32] + "\n" + KEY.hex()[32:] + "\n",
    " ".join(KEY.hex()[i:i + 4] for i in range(0, 64, 4)) + "\n",
], ids=["LF", "CRLF", "upper case", "two lines", "spaced groups"])
def test_accepted_formats_give_the_same_key(daemons, workdir, text):
    d = daemons(args=["--network-key", write_network_key(workdir / "office.key", KEY, text)])
    me = Identity()
    s = Session.established(d.address, me, psk=KEY, card=me.card(name="pykeyfile"))
    msg_id = os.urandom(16)
    s.send_records(chat(b"keyed", msg_id=msg_id))
    assert parse_ids(s.wait_for(ACK)) == [msg_id]


def start_expecting_refusal(workdir, key_path):
    p = subprocess.run([PARLEYD, "--state-dir", str(workdir / "refused"), "--network-key", key_path, "--no-mdns",
                        "--listen", "127.0.0.1:0", "--socket", str(workdir / "refused.sock")],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode != 0, "parleyd started with a bad network key file"
    return p.stdout + p.stderr


@pytest.mark.parametrize("text", [
    "# office key\n" + KEY.hex() + "\n",
    KEY.hex() + "\t\n",
    KEY.hex()[:62] + "\n",
    KEY.hex() + "00\n",
    "\ufeff" + KEY.hex() + "\n",
], ids=["comment", "tab", "63 digits", "66 digits", "BOM"])
def test_anything_else_is_refused(workdir, text):
    out = start_expecting_refusal(workdir, write_network_key(workdir / "bad.key", KEY, text))
    assert "64 hex digits" in out, out


def test_loose_permissions_use_the_key_files_wording(workdir):
    path = write_network_key(workdir / "loose.key", KEY, mode=0o644)
    out = start_expecting_refusal(workdir, path)
    assert f"permissions 0644 for '{path}' are too open" in out, out
    assert f"chmod 600 '{path}'" in out, out
