"""Issue 27: the Debian package, built with `make deb` and proven on booted Debian 12 hosts
(scripts/debhost: systemd as PID 1, the shipped hardened unit, the real sandbox).

- the .deb: contents where Debian expects them, Depends from dpkg-shlibdeps, the Recommends,
  a conffile, lintian without errors, and no binary that needs a Swift library or the
  toolchain's directory (readelf): it runs where /opt/swift does not exist;
- on a fresh host: `apt install ./parley_*.deb` creates the parley user, starts parleyd
  under the shipped unit (policy-rc.d honoured), a colleague added to group parley runs
  `parley status` with no flags; someone else is told what to do;
- two hosts on one LAN (scripts/lanlab's namespaces) find each other over mDNS through
  their own avahi-daemons and chat (`parley send` with no flags); an upgrade to a rebuilt
  package keeps the identity and the messages; remove keeps the state, purge deletes it;
- `make dist`'s tarball builds with networking disabled and nothing but what it carries.

Slow parts, measured and printed at the end ("measured"): `make deb` (a static release
build: many minutes on 2 cores, once per session), the cached root (built once per
checkout, minutes), each boot (seconds).
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

import debhost
import lab as lab_module
from debhost import DebHost, lab_netns

REPO = Path(__file__).resolve().parents[2]
# A cold static release build on 2 shared cores; then packaging.
MAKE_DEB_TIMEOUT = 3600
MAKE_DIST_TIMEOUT = 900
# Resolving 29 packages' manifests and building parley-mdns from the tarball, offline.
OFFLINE_BUILD_TIMEOUT = 1800
# Two daemons that just started: avahi announces, each browses and resolves the other.
DISCOVERY_TIMEOUT = 90
DELIVERY_TIMEOUT = 60
UPGRADE_VERSION_SUFFIX = "+test1"
# scripts/run-tests.sh gives each test 900 s (pytest-timeout); the first test of this module
# also builds the package (MAKE_DEB_TIMEOUT) and the host root, so the module gets more.
pytestmark = pytest.mark.timeout(MAKE_DEB_TIMEOUT + MAKE_DIST_TIMEOUT + OFFLINE_BUILD_TIMEOUT)

SWIFT_LIBRARY = re.compile(r"lib(swift\w*|Foundation\w*|_Foundation\w*|FoundationEssentials|dispatch|BlocksRuntime"
                           r"|_FoundationICU|XCTest)\.so")


def version_text() -> str:
    """What --version must print: ParleyVersion.string and the protocol."""
    swift = (REPO / "Sources/ParleyControlProtocol/ParleyVersion.swift").read_text()
    version = re.search(r'static let string = "([^"]+)"', swift).group(1)
    proto = re.search(r'static let name = "([^"]+)"', (REPO / "Sources/ParleyCore/ProtocolVersion.swift").read_text()).group(1)
    return f"{version} (protocol {proto})"


def deb_version() -> str:
    return subprocess.run(["dpkg-parsechangelog", "-SVersion"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()


def make_deb(version: str) -> Path:
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    out = subprocess.run(["make", "deb", f"DEB_VERSION={version}"], cwd=REPO, capture_output=True, text=True,
                         timeout=MAKE_DEB_TIMEOUT)
    assert out.returncode == 0, f"make deb failed:\n{out.stdout[-6000:]}\n{out.stderr[-6000:]}"
    deb = REPO / "dist" / f"parley_{version}_{arch}.deb"
    assert deb.exists(), f"make deb did not write {deb}:\n{out.stdout[-2000:]}"
    return deb


@pytest.fixture(scope="session")
def deb() -> Path:
    """dist/parley_<version>_<arch>.deb, built once per session. PARLEY_DEB=path uses a
    package built before instead (to rerun the host tests quickly; CI never sets it)."""
    if os.environ.get("PARLEY_DEB"):
        return Path(os.environ["PARLEY_DEB"]).resolve()
    started = time.monotonic()
    path = make_deb(deb_version())
    lab_module.record("make deb (static release build + package)", time.monotonic() - started)
    return path


@pytest.fixture(scope="session")
def upgrade_deb(deb) -> Path:
    """The same sources packaged again under a higher version, as an upgrade.
    PARLEY_UPGRADE_DEB=path: one built before (with PARLEY_DEB; CI never sets it)."""
    if os.environ.get("PARLEY_UPGRADE_DEB"):
        return Path(os.environ["PARLEY_UPGRADE_DEB"]).resolve()
    started = time.monotonic()
    path = make_deb(deb_version() + UPGRADE_VERSION_SUFFIX)
    lab_module.record("make deb again (up to date: packaging only)", time.monotonic() - started)
    return path


@pytest.fixture(scope="session")
def root():
    reason = debhost.unavailable_reason()
    if reason:
        pytest.skip(reason)
    path, seconds = debhost.build_root()
    lab_module.record("debhost root (cached after the first build)", seconds)
    return path


def extract(deb: Path, dest: Path) -> Path:
    subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True, timeout=120)
    return dest


def elf_files(tree: Path):
    for p in sorted(tree.rglob("*")):
        if p.is_file() and not p.is_symlink():
            with open(p, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield p


def swift_runtime_needs(binary: Path) -> list[str]:
    """What in `readelf -d` ties the binary to a Swift toolchain: NEEDED Swift runtime or
    Foundation libraries, RPATH/RUNPATH entries (the toolchain's lib directory)."""
    out = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True, check=True).stdout
    problems = []
    for line in out.splitlines():
        if "(NEEDED)" in line and SWIFT_LIBRARY.search(line):
            problems.append(line.strip())
        if "(RUNPATH)" in line or "(RPATH)" in line:
            problems.append(line.strip())
    return problems


# --- the .deb itself -------------------------------------------------------------------

def test_deb_contents_and_control_fields(deb, tmp_path):
    files = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    paths = {line.split()[-1].lstrip(".") for line in files.splitlines()}
    for expected in ["/usr/bin/parleyd", "/usr/bin/parley", "/usr/bin/parley-mdns",
                     "/lib/systemd/system/parleyd.service", "/usr/lib/systemd/user/parley-web.service",
                     "/usr/lib/sysusers.d/parley.conf", "/usr/lib/tmpfiles.d/parley.conf",
                     "/etc/parley/parleyd.toml",
                     "/usr/share/man/man8/parleyd.8.gz", "/usr/share/man/man1/parley.1.gz",
                     # zsh on Debian reads vendor-completions, not site-functions
                     "/usr/share/bash-completion/completions/parley", "/usr/share/zsh/vendor-completions/_parley",
                     "/usr/share/fish/vendor_completions.d/parley.fish",
                     "/usr/share/doc/parley/copyright", "/usr/share/doc/parley/changelog.gz"]:
        assert expected in paths, f"{expected} missing from the package:\n{files}"

    def field(name):
        return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True, text=True,
                              check=True).stdout.strip()

    depends = field("Depends")
    for lib in ["libsodium23", "libavahi-compat-libdnssd1", "libsqlite3-0", "libc6"]:
        assert lib in depends, f"Depends lacks {lib} (dpkg-shlibdeps): {depends}"
    assert "swift" not in depends.lower()
    recommends = field("Recommends")
    for pkg in ["avahi-daemon", "libnss-mdns", "libvips-tools", "bubblewrap", "fonts-noto-color-emoji"]:
        assert pkg in recommends, recommends

    control = tmp_path / "control"
    subprocess.run(["dpkg-deb", "-e", str(deb), str(control)], check=True)
    assert (control / "conffiles").read_text().split() == ["/etc/parley/parleyd.toml"]
    postinst = (control / "postinst").read_text()
    assert "systemd-sysusers" in postinst and "parley.conf" in postinst, "postinst creates the parley user"
    assert "deb-systemd-helper" in postinst and "deb-systemd-invoke" in postinst, "postinst enables and starts parleyd"
    postrm = (control / "postrm").read_text()
    assert "rm -rf /var/lib/parley" in postrm, "purge deletes the state"
    assert "/var/lib/parley-user" in postrm and "/run/parley-user" in postrm, "purge deletes each person's state"
    assert "parleyd@*.service" in (control / "prerm").read_text(), "remove stops each person's instance"
    assert "try-restart 'parleyd@*.service'" in postinst, "an upgrade restarts each person's instance"


def test_lintian_finds_no_errors(deb):
    out = subprocess.run(["lintian", "--fail-on", "error", "--tag-display-limit", "0", str(deb)],
                         capture_output=True, text=True, timeout=600)
    errors = [l for l in out.stdout.splitlines() if l.startswith("E:")]
    assert out.returncode == 0 and not errors, f"lintian:\n{out.stdout}{out.stderr}"


def test_no_binary_needs_a_swift_library(deb, tmp_path):
    tree = extract(deb, tmp_path / "tree")
    binaries = list(elf_files(tree))
    assert {b.name for b in binaries} >= {"parleyd", "parley", "parley-mdns"}, binaries
    for binary in binaries:
        assert swift_runtime_needs(binary) == [], f"{binary.relative_to(tree)} needs the Swift toolchain"


def test_readelf_check_catches_a_toolchain_linked_binary():
    """The check above can fail: a binary built without --static-swift-stdlib (what
    `make release` used to build) is caught."""
    dynamic = Path(lab_module.binary("parley-mdns"))  # the test build (scripts/run-tests.sh)
    problems = swift_runtime_needs(dynamic)
    assert any("libswiftCore.so" in p for p in problems), problems
    assert any("/opt/swift" in p or "swift" in p for p in problems if "RUNPATH" in p or "RPATH" in p), problems


def test_binaries_run_without_the_swift_toolchain(deb, tmp_path):
    """With the toolchain's directory hidden (an empty tmpfs over it, in a private mount
    namespace), the packaged binaries start and print the package and protocol versions."""
    tree = extract(deb, tmp_path / "tree")
    toolchain = Path(shutil.which("swift") or "/opt/swift/usr/bin/swift").resolve().parents[2]
    for name in ["parleyd", "parley"]:
        out = subprocess.run(["unshare", "-m", "sh", "-c", 'mount -t tmpfs none "$1" && exec "$2" --version', "-",
                              str(toolchain), str(tree / "usr/bin" / name)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, f"{name} --version without {toolchain}: {out.stdout}{out.stderr}"
        assert out.stdout.strip() == version_text()
    out = subprocess.run(["unshare", "-m", "sh", "-c", 'mount -t tmpfs none "$1" && exec "$2" --help', "-",
                          str(toolchain), str(tree / "usr/bin/parley-mdns")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


# --- one booted host ---------------------------------------------------------------------

def test_install_on_a_booted_host(deb, root):
    with DebHost("office1") as h:
        lab_module.record("debhost boot", h.boot_seconds)
        assert h.run("test", "-e", "/opt/swift").returncode != 0, "the host has no Swift toolchain"
        started = time.monotonic()
        h.install(deb)
        lab_module.record("apt-get install ./parley.deb (incl. starting parleyd)", time.monotonic() - started)

        # Started by the package, under the unit exactly as shipped: no drop-in loosens it.
        h.wait_until("parleyd active", lambda: h.run("systemctl", "is-active", "parleyd").stdout.strip() == "active",
                     timeout=60)
        assert h.run("systemctl", "is-enabled", "parleyd").stdout.strip() == "enabled"
        show = dict(l.split("=", 1) for l in h.check(
            "systemctl", "show", "parleyd", "-p", "FragmentPath", "-p", "DropInPaths", "-p", "User", "-p",
            "ProtectSystem", "-p", "MemoryDenyWriteExecute", "-p", "RestrictNamespaces", "-p", "NoNewPrivileges",
            "-p", "SystemCallFilter", "-p", "NRestarts").splitlines() if "=" in l)
        assert show["FragmentPath"] == "/lib/systemd/system/parleyd.service", show
        assert show["DropInPaths"] == "", show
        assert show["User"] == "parley" and show["ProtectSystem"] == "strict", show
        assert show["MemoryDenyWriteExecute"] == "yes" and show["NoNewPrivileges"] == "yes", show
        assert show["RestrictNamespaces"] != "no" and show["SystemCallFilter"] != "", show
        assert show["NRestarts"] == "0", f"parleyd restarted: {show}"
        shipped = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True).stdout
        assert h.check("cat", "/lib/systemd/system/parleyd.service").encode() in shipped

        assert h.check("parleyd", "--version").strip() == version_text()
        assert h.check("parley", "--version").strip() == version_text()

        # The account, the state directory, the conffile.
        assert h.check("getent", "passwd", "parley").split(":")[6].strip() in ("/usr/sbin/nologin", "/sbin/nologin")
        assert h.check("stat", "-c", "%U %G %a", "/var/lib/parley").strip() == "parley parley 700"
        assert "/etc/parley/parleyd.toml" in h.check("dpkg-query", "-W", "-f=${Conffiles}", "parley")

        # A colleague added to group parley: status with no flags, after logging in.
        h.check("useradd", "-m", "-s", "/bin/bash", "carol")
        h.check("usermod", "-aG", "parley", "carol")
        status = h.as_user("carol", "parley status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert "office1" in status.stdout and version_text().split()[0] in status.stdout, status.stdout
        # Someone not in the group is told what to do.
        h.check("useradd", "-m", "-s", "/bin/bash", "dave")
        refused = h.as_user("dave", "parley status")
        assert refused.returncode != 0
        assert "usermod -aG parley" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
        # Nothing failed while booting, installing and serving.
        assert h.check("systemctl", "--failed", "--no-legend", "--plain").strip() == ""


def test_install_honours_policy_rc_d(deb, root):
    """An admin who forbids service starts (policy-rc.d exit 101, as in image builds) gets
    parleyd installed and enabled, not started."""
    with DebHost("office2") as h:
        h.sh("printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d")
        h.install(deb)
        assert h.run("systemctl", "is-enabled", "parleyd").stdout.strip() == "enabled"
        assert h.run("systemctl", "is-active", "parleyd").stdout.strip() == "inactive"
        h.check("rm", "/usr/sbin/policy-rc.d")
        h.check("systemctl", "start", "parleyd")
        assert h.run("systemctl", "is-active", "parleyd").stdout.strip() == "active"


# --- two booted hosts on one LAN -------------------------------------------------------------

class Office:
    """Two booted hosts, alice-pc and bob-pc, on a lab LAN, with the package installed and
    one person each in group parley."""

    def __init__(self, alice: DebHost, bob: DebHost):
        self.alice, self.bob = alice, bob

    @staticmethod
    def peers(host: DebHost, user: str) -> list:
        out = host.as_user(user, "parley peers --json")
        return json.loads(out.stdout)["peers"] if out.returncode == 0 else []

    def fingerprint(self, host: DebHost, user: str) -> str:
        out = host.as_user(user, "parley whoami --json")
        assert out.returncode == 0, out.stdout + out.stderr
        return json.loads(out.stdout)["fingerprint"]


@pytest.fixture(scope="module")
def office(deb, root):
    reason = lab_module.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with lab_module.Lab(hosts=2) as lab:
        # The booted hosts run their own avahi-daemon in the lab's namespaces: stop the lab's.
        for h in ("h1", "h2"):
            lab.lanlab("stop-avahi", h)
        with DebHost("alice-pc", netns=lab_netns(lab, "h1")) as alice, \
                DebHost("bob-pc", netns=lab_netns(lab, "h2")) as bob:
            for host, user in ((alice, "alice"), (bob, "bob")):
                host.install(deb)
                host.check("useradd", "-m", "-s", "/bin/bash", user)
                host.check("usermod", "-aG", "parley", user)
            yield Office(alice, bob)


def test_two_hosts_find_each_other_over_mdns_and_chat(office):
    a, b = office.alice, office.bob
    # Discovery goes through each host's own avahi-daemon (the lab's are stopped) and no
    # static peer is configured: mDNS or nothing.
    for h in (a, b):
        assert h.run("systemctl", "is-active", "avahi-daemon").stdout.strip() == "active"
        assert re.search(r"^\s*peers\s*=", h.check("cat", "/etc/parley/parleyd.toml"), re.M) is None
    started = time.monotonic()
    a.wait_until("bob-pc online in alice's peers",
                 lambda: any(p["name"] == "bob-pc" and p["online"] for p in office.peers(a, "alice")),
                 timeout=DISCOVERY_TIMEOUT)
    lab_module.record("booted hosts: discovery over mDNS", time.monotonic() - started)

    # No flags at all: parley finds the system service's socket by itself.
    sent = a.as_user("alice", "parley send bob-pc 'hello from the package'")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    b.wait_until("the message on bob-pc",
                 lambda: "hello from the package" in b.as_user("bob", "parley read alice-pc").stdout,
                 timeout=DELIVERY_TIMEOUT)
    reply = b.as_user("bob", "parley send alice-pc 'got it' --wait", timeout=DELIVERY_TIMEOUT + 30)
    assert reply.returncode == 0, reply.stdout + reply.stderr


# A decoder a hostile picture has taken over, as the thumbnail child would run it: it tries
# what an attacker would (read the daemon's state and key, connect to a TCP listener) and
# reports each attempt inside a JPEG comment, which comes back as the offer's thumbnail.
FAKE_VIPSHEADER = """#!/bin/bash
[ "$1" = --version ] && { echo vips-8.14.1; exit 0; }
echo "$1: 64x48 uchar, 3 bands, srgb, pngload"
"""
FAKE_VIPSTHUMBNAIL = r"""#!/bin/bash
# No redirection to /dev/null: each attempt must stand or fall by itself (errors go to the
# daemon's stderr pipe, which it reads and drops).
r=""
if sig=$(head -c 8 "$1") && [[ "$sig" == *PNG* ]]; then r+=" input:read"; else r+=" input:denied"; fi
if names=$(ls /var/lib/parley); then r+=" state:listed"; else r+=" state:denied"; fi
if key=$(cat "/var/lib/parley/@KEY@"); then r+=" key:read"; else r+=" key:denied"; fi
if conf=$(cat /etc/parley/parleyd.toml); then r+=" config:read"; else r+=" config:denied"; fi
if (exec 3<>/dev/tcp/127.0.0.1/7744); then r+=" tcp:connected"; else r+=" tcp:denied"; fi
if echo x > /var/tmp/parley-dropped; then r+=" write:done"; else r+=" write:denied"; fi
if echo x > /dev/null; then r+=" devnull:ok"; else r+=" devnull:denied"; fi
n=$(( ${#r} + 2 ))
printf '\xff\xd8\xff\xfe'
printf "\\x$(printf %02x $((n >> 8)))\\x$(printf %02x $((n & 255)))"
printf '%s' "$r"
printf '\xff\xd9'
"""


def sent_thumbnail(host: DebHost, user: str, picture: str, to: str) -> bytes:
    """`user` sends `picture` to `to`; the thumbnail of that offer, as the sender's daemon made it."""
    sent = host.as_user(user, f"parley send {to} --attach {picture}", timeout=DELIVERY_TIMEOUT)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    listing = json.loads(host.as_user(user, "parley files list --json").stdout)
    newest = listing["transfers"][0]
    assert newest["name"] == picture.rsplit("/", 1)[-1], newest
    out = f"/tmp/thumb-{newest['id'][:8]}.jpg"
    got = host.as_user(user, f"parley files thumbnail {newest['id']} --to {out}")
    assert got.returncode == 0, got.stdout + got.stderr
    return base64.b64decode(host.check("base64", "-w0", out))


def test_the_thumbnail_child_is_confined_under_the_shipped_unit(office):
    """Issue 29: under the system unit (User=parley, RestrictNamespaces=yes: no bubblewrap)
    the thumbnail child runs confined by Landlock and seccomp: it reads its picture by
    descriptor and cannot read /var/lib/parley or /etc/parley, write, or open a socket. Before
    the fix the same child, with rlimits only, read the identity key and connected."""
    a = office.alice
    a.wait_until("bob-pc in alice's peers",
                 lambda: any(p["name"] == "bob-pc" for p in office.peers(a, "alice")), timeout=DISCOVERY_TIMEOUT)
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAADklEQVR4nGP4z8DwHwAFAAH/VscvDQAAAABJRU5ErkJggg==")
    assert a.sh(f"echo {png} | base64 -d > /home/alice/pic.png && chown alice: /home/alice/pic.png").returncode == 0
    # The real tools first: a real thumbnail, made confined.
    real = sent_thumbnail(a, "alice", "/home/alice/pic.png", "bob-pc")
    assert real[:3] == b"\xff\xd8\xff", real[:16]
    journal = a.check("journalctl", "-u", "parleyd", "--no-pager", "-o", "cat")
    assert "confined by Landlock" in journal, journal[-3000:]

    key = sorted(n for n in a.check("ls", "/var/lib/parley").split() if n.endswith(".key") or "identity" in n)
    assert key, a.check("ls", "-l", "/var/lib/parley")
    try:
        for name, text in (("vipsheader", FAKE_VIPSHEADER), ("vipsthumbnail", FAKE_VIPSTHUMBNAIL.replace("@KEY@", key[0]))):
            put = a.run("sh", "-c", f"cat > /usr/local/bin/{name} && chmod 755 /usr/local/bin/{name}", input=text)
            assert put.returncode == 0, put.stderr
        # The tools are found on PATH when the daemon first makes a thumbnail: restart it.
        a.check("systemctl", "restart", "parleyd")
        a.wait_until("parleyd active again", lambda: a.run("systemctl", "is-active", "parleyd").stdout.strip() == "active",
                     timeout=DISCOVERY_TIMEOUT)
        a.wait_until("the control socket answers", lambda: a.as_user("alice", "parley whoami").returncode == 0,
                     timeout=DISCOVERY_TIMEOUT)
        assert a.sh("cp /home/alice/pic.png /home/alice/pic2.png && chown alice: /home/alice/pic2.png").returncode == 0
        report = sent_thumbnail(a, "alice", "/home/alice/pic2.png", "bob-pc")
        text = report[6:-2].decode()
        assert text.split() == ["input:read", "state:denied", "key:denied", "config:denied", "tcp:denied",
                                "write:denied", "devnull:ok"], text
        assert a.run("test", "-e", "/var/tmp/parley-dropped").returncode != 0
    finally:
        a.sh("rm -f /usr/local/bin/vipsheader /usr/local/bin/vipsthumbnail /var/tmp/parley-dropped")
        a.run("systemctl", "restart", "parleyd")
        a.wait_until("the control socket answers", lambda: a.as_user("alice", "parley whoami").returncode == 0,
                     timeout=DISCOVERY_TIMEOUT)


def test_upgrade_keeps_identity_and_messages(office, upgrade_deb):
    """Also a person's own instance (parleyd@erin): restarted on the new binary, same key."""
    a, b = office.alice, office.bob
    before = office.fingerprint(a, "alice")
    pid_before = a.check("systemctl", "show", "-p", "MainPID", "--value", "parleyd").strip()
    a.check("useradd", "-m", "-s", "/bin/bash", "erin")
    a.check("systemctl", "enable", "--now", "parleyd@erin")
    a.wait_until("erin's instance answers", lambda: a.as_user("erin", "parley whoami").returncode == 0, timeout=60)
    erin_before = office.fingerprint(a, "erin")
    erin_pid = a.check("systemctl", "show", "-p", "MainPID", "--value", "parleyd@erin").strip()
    assert "hello from the package" in a.as_user("alice", "parley read bob-pc").stdout
    # The admin's edit of the conffile (a value parleyd accepts: it restarts with it).
    edit = 'log_level = "info"  # set by the admin\n'
    a.sh(f"printf '%s' '{edit}' >> /etc/parley/parleyd.toml")

    a.install(upgrade_deb)
    assert a.check("dpkg-query", "-W", "-f=${Version}", "parley").endswith(UPGRADE_VERSION_SUFFIX)
    a.wait_until("parleyd active after the upgrade",
                 lambda: a.run("systemctl", "is-active", "parleyd").stdout.strip() == "active", timeout=60)
    assert a.check("systemctl", "show", "-p", "MainPID", "--value", "parleyd").strip() != pid_before, \
        "the upgrade restarts parleyd (the new binary runs)"
    assert office.fingerprint(a, "alice") == before, "the identity survives the upgrade"
    a.wait_until("parleyd@erin active after the upgrade",
                 lambda: a.run("systemctl", "is-active", "parleyd@erin").stdout.strip() == "active", timeout=60)
    assert a.check("systemctl", "show", "-p", "MainPID", "--value", "parleyd@erin").strip() != erin_pid, \
        "the upgrade restarts each person's instance (the new binary runs)"
    a.wait_until("erin's instance answers", lambda: a.as_user("erin", "parley whoami").returncode == 0, timeout=60)
    assert office.fingerprint(a, "erin") == erin_before
    assert a.check("cat", "/etc/parley/parleyd.toml").endswith(edit), "the admin's edit survives the upgrade"
    assert a.sh("ls /etc/parley").stdout.split() == ["parleyd.toml"], "no .dpkg-new/.dpkg-dist left to merge"
    history = a.as_user("alice", "parley read bob-pc")
    assert "hello from the package" in history.stdout and "got it" in history.stdout, history.stdout
    # And the upgraded node still talks to the other one.
    sent = a.as_user("alice", "parley send bob-pc 'after the upgrade' --wait", timeout=DELIVERY_TIMEOUT + 30)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert "after the upgrade" in b.as_user("bob", "parley read alice-pc").stdout


def test_remove_keeps_state_and_purge_deletes_it(office, deb):
    """Also each person's own instance (parleyd@NAME): remove stops it and keeps its
    state; purge deletes its state, sockets and enabled link."""
    b = office.bob
    before = office.fingerprint(b, "bob")
    b.check("useradd", "-m", "-s", "/bin/bash", "dora")
    b.check("systemctl", "enable", "--now", "parleyd@dora")
    b.wait_until("parleyd@dora active",
                 lambda: b.run("systemctl", "is-active", "parleyd@dora").stdout.strip() == "active", timeout=60)
    b.wait_until("dora's instance answers", lambda: b.as_user("dora", "parley whoami").returncode == 0, timeout=60)
    dora_before = office.fingerprint(b, "dora")
    for path in ("/var/lib/parley-user/dora", "/run/parley-user/dora/control.sock",
                 "/etc/systemd/system/multi-user.target.wants/parleyd@dora.service"):
        assert b.run("test", "-e", path).returncode == 0, path
    b.check("env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "remove", "-y", "parley")
    assert b.run("systemctl", "is-active", "parleyd").stdout.strip() != "active", "remove stops parleyd"
    assert b.run("systemctl", "is-active", "parleyd@dora").stdout.strip() != "active", "remove stops parleyd@dora"
    assert b.run("pgrep", "-x", "parleyd").returncode != 0, b.run("ps", "-ef").stdout
    assert b.run("test", "-d", "/var/lib/parley").returncode == 0, "remove keeps the state"
    assert b.run("test", "-d", "/var/lib/parley-user/dora").returncode == 0, "remove keeps each person's state"
    assert b.run("test", "-e", "/etc/parley/parleyd.toml").returncode == 0, "remove keeps the conffile"
    # Installed again: dora's instance (still enabled) runs again, with her key.
    b.install(deb)
    b.wait_until("parleyd@dora active again",
                 lambda: b.run("systemctl", "is-active", "parleyd@dora").stdout.strip() == "active", timeout=60)
    b.wait_until("dora's instance answers", lambda: b.as_user("dora", "parley whoami").returncode == 0, timeout=60)
    assert office.fingerprint(b, "dora") == dora_before
    b.check("env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "remove", "-y", "parley")
    assert b.run("pgrep", "-x", "parleyd").returncode != 0, b.run("ps", "-ef").stdout

    b.check("env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "purge", "-y", "parley")
    assert b.run("test", "-e", "/var/lib/parley").returncode != 0, "purge deletes the state"
    for path in ("/var/lib/parley-user", "/run/parley-user", "/etc/parley-user",
                 "/etc/systemd/system/multi-user.target.wants/parleyd@dora.service"):
        assert b.run("test", "-e", path).returncode != 0, f"purge leaves {path}"
    assert b.run("test", "-e", "/etc/parley").returncode != 0, "purge deletes the configuration"
    assert b.run("test", "-e", "/lib/systemd/system/parleyd.service").returncode != 0
    assert b.run("systemctl", "is-enabled", "parleyd").stdout.strip() not in ("enabled", "disabled")
    # Installed again after a purge: a new node (a new key), which is what purge means.
    b.install(deb)
    b.wait_until("parleyd active", lambda: b.run("systemctl", "is-active", "parleyd").stdout.strip() == "active",
                 timeout=60)
    assert office.fingerprint(b, "bob") != before


# --- building without internet ----------------------------------------------------------------

def offline(argv: list, cwd: Path, home: Path, timeout: float) -> subprocess.CompletedProcess:
    """Runs argv with no network (a new, empty network namespace), an empty HOME (no SwiftPM
    caches) and no git configuration (this machine's /etc/gitconfig rewrites github.com to a
    local mirror: without it nothing can be fetched from anywhere)."""
    swift_bin = str(Path(shutil.which("swift") or "/opt/swift/usr/bin/swift").resolve().parent)
    env = {"PATH": f"{swift_bin}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "XDG_CACHE_HOME": str(home / ".cache")}
    return subprocess.run(["unshare", "-n", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_dist_tarball_builds_with_networking_disabled(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("unshare -n needs root")
    version = version_text().split()[0]
    out = subprocess.run(["make", "dist"], cwd=REPO, capture_output=True, text=True, timeout=MAKE_DIST_TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    tarball = REPO / "dist" / f"parley-{version}.tar.gz"
    with tarfile.open(tarball) as t:
        names = t.getnames()
        t.extractall(tmp_path, filter="tar") if hasattr(tarfile, "tar_filter") else t.extractall(tmp_path)
    top = tmp_path / f"parley-{version}"
    assert not [n for n in names if "/.git/" in n or n.endswith("/.git")], "no git metadata in the tarball"
    pins = json.loads((REPO / "Package.resolved").read_text())["pins"]
    for pin in pins:
        base = pin["location"].rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        assert (top / "vendor" / base / "Package.swift").exists(), f"{pin['identity']} is not in vendor/"
    for f in ["debian/rules", "Makefile", "Sources/parleyd/ParleydCommand.swift"]:
        assert (top / f).exists(), f

    home = tmp_path / "home"
    home.mkdir()
    # Control: the environment really cannot fetch. The repository's own manifest (URLs,
    # no vendor/) does not resolve there.
    control = tmp_path / "control"
    shutil.copytree(top, control, ignore=shutil.ignore_patterns("vendor"))
    (control / "Package.swift").write_text((REPO / "Package.swift").read_text())
    fetch = offline(["swift", "package", "resolve"], control, home, timeout=600)
    assert fetch.returncode != 0, "the offline environment fetched packages: the proof below would prove nothing"
    assert "github.com" in fetch.stdout + fetch.stderr, f"it failed for another reason:\n{fetch.stdout}{fetch.stderr}"

    started = time.monotonic()
    built = offline(["swift", "build", "--product", "parley-mdns"], top, home, timeout=OFFLINE_BUILD_TIMEOUT)
    lab_module.record("offline build from the dist tarball (resolve + parley-mdns)", time.monotonic() - started)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    # Every package of the graph came from vendor/.
    deps = offline(["swift", "package", "show-dependencies", "--format", "flatlist"], top, home, timeout=600)
    assert deps.returncode == 0, deps.stderr[-3000:]
    assert "github.com" not in deps.stdout, deps.stdout
    mdns = subprocess.run([str(top / ".build" / "debug" / "parley-mdns"), "--help"], capture_output=True, text=True)
    assert mdns.returncode == 0, mdns.stdout + mdns.stderr
