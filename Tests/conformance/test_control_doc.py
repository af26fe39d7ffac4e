"""Item 10: what docs/CONTROL.md says about the CLI's options and the example session."""
import json
import subprocess

from conftest import PARLEY


def test_socket_option_goes_after_the_subcommand(daemon):
    p = subprocess.run([PARLEY, "whoami", "--socket", str(daemon.sock_path), "--json"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["identityKey"] == daemon.call("node.whoami")["identityKey"]


def test_an_option_before_the_subcommand_is_a_usage_error(daemon):
    """CONTROL.md: options go after the subcommand; before it they are refused (exit 2)."""
    p = subprocess.run([PARLEY, "--socket", str(daemon.sock_path), "whoami", "--json"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)


def test_subscribe_result_and_notification_shape(daemon):
    """The example session of CONTROL.md: `subscribe` answers `lastEventId`; notifications
    carry `eventId`; MessageInfo has `readAt` and `room`."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(daemon.sock_path))
    f = s.makefile("rwb")
    f.write(b'{"jsonrpc":"2.0","id":1,"method":"messages.subscribe"}\n')
    f.flush()
    first = json.loads(f.readline())
    assert set(first["result"]) == {"subscribed", "lastEventId"}
    s.close()
