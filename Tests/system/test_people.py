"""Issue 28: several people on one host, each with their own parleyd (as parleyd@NAME
runs it: as the person, state and sockets in directories only the person may enter), and
files that travel by descriptor both ways.

Real local users (useradd, removed at the end) who share one primary group (`users`, as
on many shared hosts), real daemons and clients run as those users with setpriv. The
threat model: another local user cannot connect to a person's sockets, cannot make a
daemon read a path it chose (a send of a file the sender cannot read fails in the client
with a clear error and nothing is sent; a send with attachments is all or nothing), and
cannot read received files or the daemon's copies."""
import hashlib
import os
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from parley_harness import PARLEY, Node, RPCError, wait_until

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="creates local users: run as root (CI does)"),
    pytest.mark.skipif(shutil.which("setpriv") is None or shutil.which("useradd") is None,
                       reason="setpriv/useradd (util-linux, passwd) missing"),
]

SHARED_GROUP = "users"


class Person:
    def __init__(self, base: Path, name: str):
        self.name = name
        self.home = base / name
        self.pw = None

    def run(self, *args, umask=0o022, check=False, timeout=120, cwd=None):
        """A command as this person: their uid, the shared primary group, no other groups."""
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "LANG": "C.UTF-8"}
        cmd = ["setpriv", f"--reuid={self.name}", f"--regid={SHARED_GROUP}", "--clear-groups",
               "sh", "-c", f'umask {umask:03o}; exec "$@"', "sh", *args]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                           cwd=str(cwd or self.home))
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(map(str, args))} as {self.name} failed ({p.returncode}): {p.stderr}")
        return p

    def parley(self, node, *args, **kw):
        return self.run(PARLEY, *args, "--socket", str(node.socket), **kw)


@pytest.fixture
def people():
    """Three people (alice, bob, carol), homes 0700 under a fresh base directory."""
    tag = secrets.token_hex(3)
    base = Path(tempfile.mkdtemp(prefix="parley-people-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    made = []
    nodes = []
    try:
        out = {}
        for role in ("alice", "bob", "carol"):
            name = f"{role[0]}{tag}"
            p = Person(base, name)
            subprocess.run(["useradd", "--no-create-home", "--home-dir", str(p.home), "--gid", SHARED_GROUP,
                            "--shell", "/usr/sbin/nologin", name], check=True)
            made.append(name)
            p.home.mkdir(mode=0o700)
            shutil.chown(p.home, name, SHARED_GROUP)
            out[role] = p
        out["base"] = base
        out["nodes"] = nodes
        yield out
    finally:
        for n in nodes:
            n.stop()
        shutil.rmtree(base, ignore_errors=True)
        for name in made:
            subprocess.run(["userdel", name], capture_output=True)


def person_env(person):
    """The environment of a process of the person's (no root's HOME or XDG directories)."""
    env = {"HOME": str(person.home)}
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "RUNTIME_DIRECTORY", "STATE_DIRECTORY",
                 "CONFIGURATION_DIRECTORY", "PARLEY_SOCKET"):
        env[name] = ""
    return env


def own_daemon(people, person, peers=(), extra_args=()):
    """The person's own parleyd, run as them: state and sockets inside their 0700 home
    (as parleyd@NAME's /var/lib/parley-user/NAME and /run/parley-user/NAME)."""
    n = Node(person.name, people["base"], peers=peers, state_dir=person.home / "state",
             launcher=["setpriv", f"--reuid={person.name}", f"--regid={SHARED_GROUP}", "--clear-groups"],
             extra_args=extra_args, env=person_env(person))
    run = person.home / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    shutil.chown(run, person.name, SHARED_GROUP)
    n.socket = run / "control.sock"
    people["nodes"].append(n)
    return n.start()


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_random(path, size, owner):
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 4 << 20)
            f.write(os.urandom(n))
            left -= n
    shutil.chown(path, owner, SHARED_GROUP)
    return path


def transfers(node):
    return node.call("files.list", {"limit": 100})["transfers"]


def two_people(people):
    alice = own_daemon(people, people["alice"])
    bob = own_daemon(people, people["bob"], peers=[alice.address])
    wait_until(lambda: alice.online(people["bob"].name) and bob.online(people["alice"].name),
               what="alice's and bob's instances online")
    return alice, bob


def test_two_people_on_one_host_have_their_own_identity_and_exchange_a_file_as_themselves(people):
    pa, pb, pc = people["alice"], people["bob"], people["carol"]
    alice, bob = two_people(people)
    # Each person's `parley whoami` shows their own identity.
    fa = pa.parley(alice, "whoami", "--json", check=True).stdout
    fb = pb.parley(bob, "whoami", "--json", check=True).stdout
    assert alice.whoami()["fingerprint"] in fa and bob.whoami()["fingerprint"] in fb
    assert alice.whoami()["fingerprint"] != bob.whoami()["fingerprint"]
    # They chat.
    pa.parley(alice, "send", pb.name, "hello bob", "--wait", check=True)
    # Alice sends a file from her home (the daemon could not open that path itself).
    report = write_random(pa.home / "report.bin", 8 << 20, pa.name)
    out = pa.parley(alice, "send", pb.name, "--attach", "report.bin", cwd=pa.home, check=True).stdout
    assert "offered" in out and "report.bin" in out
    # "offered" is alice's side: the offer reaches bob's daemon a moment later (a bare
    # files.list right after lost that race on a loaded machine).
    wait_until(lambda: any(t["direction"] == "in" for t in transfers(bob)), what="bob's daemon has alice's offer")
    [t] = [t for t in transfers(bob) if t["direction"] == "in"]
    # Bob gets it into ~/in, written by his own parley: his file, his umask, byte-identical.
    inbox = pb.home / "in"
    pb.run("mkdir", str(inbox), check=True)
    got = pb.parley(bob, "get", t["id"][:8], "--to", str(inbox), umask=0o027, check=True).stdout
    saved = inbox / "report.bin"
    assert str(saved) in got, got
    st = os.stat(saved)
    assert st.st_uid == pwd_uid(pb.name) and stat.S_IMODE(st.st_mode) == 0o640
    assert digest(saved) == digest(report)
    # Never overwritten: a second get into the same directory makes "report (1).bin"; into
    # an existing file it refuses.
    again = pb.parley(bob, "get", t["id"][:8], "--to", str(inbox), check=True).stdout
    assert str(inbox / "report (1).bin") in again
    refused = pb.parley(bob, "get", t["id"][:8], "--to", str(saved))
    assert refused.returncode != 0 and "never overwritten" in refused.stderr
    assert digest(saved) == digest(report)
    # The daemons' copies and received files are theirs alone: carol cannot read them.
    [done] = [x for x in transfers(bob) if x["id"] == t["id"]]
    received = Path(done["path"])
    assert received.is_file()
    for path in (received, pa.home / "state" / "outgoing", received.parent):
        p = pc.run("ls", "-l", str(path))
        assert p.returncode != 0 and "Permission denied" in p.stderr, (path, p.stdout, p.stderr)
    p = pc.run("cat", str(received))
    assert p.returncode != 0 and "Permission denied" in p.stderr


def pwd_uid(name):
    import pwd
    return pwd.getpwnam(name).pw_uid


def test_another_person_cannot_connect_to_a_persons_sockets(people):
    pa, pb = people["alice"], people["bob"]
    alice = own_daemon(people, pa)
    # Bob shares alice's primary group; her socket directory is hers alone.
    for path in (alice.socket, str(alice.socket) + ".fds"):
        p = pb.run("python3", "-c", f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(path)!r})")
        assert p.returncode != 0 and "Permission denied" in p.stderr, p.stderr
    p = pb.parley(alice, "status")
    assert p.returncode != 0 and "ermission denied" in p.stderr
    # Alice herself can, with the same command.
    assert pa.parley(alice, "status").returncode == 0


def test_the_daemon_only_sends_what_the_sender_could_open_and_all_or_nothing(people):
    """The confused deputy of issue 28, as on a host with the system service: the daemon
    runs as its own user, a member of its group sends. A file only the daemon's user may
    read (its network key, say) cannot be sent by the member: the member's parley cannot
    open it, and there is no way to hand the daemon a path."""
    tag = secrets.token_hex(3)
    group = f"pg{tag}"
    subprocess.run(["groupadd", group], check=True)
    try:
        pa, pb = people["alice"], people["bob"]  # alice runs the service, bob is a member
        base = people["base"] / "service"
        base.mkdir(mode=0o750)
        shutil.chown(base, pa.name, group)
        service = Node("service", people["base"], state_dir=base / "state",
                       launcher=["setpriv", f"--reuid={pa.name}", f"--regid={group}", "--clear-groups"],
                       env=person_env(pa))
        service.socket = base / "control.sock"
        people["nodes"].append(service)
        service.start()
        peer = Node("peer", people["base"], peers=[service.address])
        people["nodes"].append(peer)
        peer.start()
        wait_until(lambda: service.online("peer"), what="the service sees its peer")
        secret = base / "office.key"
        secret.write_bytes(b"the office network key")
        shutil.chown(secret, pa.name, group)
        os.chmod(secret, 0o600)
        readable = base / "notes.txt"
        readable.write_text("fine to send")
        shutil.chown(readable, pa.name, group)
        os.chmod(readable, 0o644)

        def member(*args):
            env = {"PATH": "/usr/bin:/bin", "HOME": str(pb.home)}
            return subprocess.run(["setpriv", f"--reuid={pb.name}", f"--regid={SHARED_GROUP}", f"--groups={group}",
                                   PARLEY, *args, "--socket", str(service.socket)],
                                  capture_output=True, text=True, env=env, timeout=60)

        assert member("status").returncode == 0, "the member reaches the service"
        p = member("send", "peer", "--attach", str(secret))
        assert p.returncode != 0 and f"cannot attach {secret}: cannot be opened: Permission denied" in p.stderr, p.stderr
        assert "Nothing was sent" in p.stderr
        # One readable file and one that is not: nothing at all is offered.
        p = member("send", "peer", "--attach", str(readable), "--attach", str(secret))
        assert p.returncode != 0 and "Nothing was sent" in p.stderr
        # Nor the text that came with them.
        p = member("send", "peer", "the key, as asked", "--attach", str(secret))
        assert p.returncode != 0 and "Nothing was sent" in p.stderr
        assert transfers(service) == [] and transfers(peer) == []
        assert service.call("messages.list", {"peer": "peer"})["messages"] == []
        # The path form is gone: a raw files.send naming the key is refused by the daemon.
        with pytest.raises(RPCError) as e:
            service.call("files.send", {"to": "peer", "path": str(secret)})
        assert "descriptor socket" in str(e.value)
        # And the readable file alone goes.
        assert member("send", "peer", "--attach", str(readable)).returncode == 0
        wait_until(lambda: [t for t in transfers(peer) if t["name"] == "notes.txt"], what="the offer at the peer")
        assert not [t for t in transfers(peer) if t["name"] == "office.key"]
    finally:
        subprocess.run(["groupdel", group], capture_output=True)


def test_instances_get_their_own_port_and_keep_it_across_restarts(people):
    a = Node("ports-a", people["base"], state_dir=people["base"] / "ports-a-state")
    b = Node("ports-b", people["base"], state_dir=people["base"] / "ports-b-state")
    people["nodes"] += [a, b]
    a.start()
    b.start()
    assert a.port != b.port
    first = a.port
    assert (a.state_dir / "listen-port").read_text().strip() == str(first)
    a.stop()
    a.listen_arg = "127.0.0.1:0"  # as the unit says: any port, the remembered one first
    a.start()
    assert a.port == first
    # Taken by someone else meanwhile: another free port, remembered from then on.
    a.stop()
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", first))
    squatter.listen()
    try:
        a.listen_arg = "127.0.0.1:0"
        a.start()
        assert a.port != first
        assert (a.state_dir / "listen-port").read_text().strip() == str(a.port)
    finally:
        squatter.close()


@pytest.mark.parametrize("problem", ["others-may-write", "someone-elses"])
def test_a_download_dir_that_is_not_the_daemons_own_private_directory_is_refused(people, problem):
    downloads = people["base"] / f"downloads-{problem}"
    downloads.mkdir()
    if problem == "others-may-write":
        os.chmod(downloads, 0o777)
        hint = "chmod go-w"
    else:
        shutil.chown(downloads, people["carol"].name, SHARED_GROUP)
        os.chmod(downloads, 0o755)
        hint = "sudo chown root"
    conf = people["base"] / f"{problem}.toml"
    conf.write_text(f'[parleyd]\ndownload_dir = "{downloads}"\n')
    n = Node(f"dl-{problem}", people["base"], extra_args=["--config", str(conf)])
    people["nodes"].append(n)
    n.start(wait=False)
    assert n.proc.wait(timeout=30) != 0
    log = n.log_path.read_text()
    assert f"download_dir {downloads}" in log and hint in log, log[-2000:]


def test_the_owner_only_rule_holds_even_for_a_process_that_gets_past_the_directory(people):
    """Defence in depth: bob shares alice's primary group; a process of his that can get
    past file permissions (CAP_DAC_OVERRIDE, no root uid) still is not served, because
    alice's socket directory does not let the group in, so her daemon serves only her."""
    pa, pb = people["alice"], people["bob"]
    alice = own_daemon(people, pa)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(pb.home)}
    p = subprocess.run(["setpriv", f"--reuid={pb.name}", f"--regid={SHARED_GROUP}", "--clear-groups",
                        "--inh-caps=+dac_override", "--ambient-caps=+dac_override",
                        PARLEY, "status", "--socket", str(alice.socket)],
                       capture_output=True, text=True, env=env, timeout=30)
    assert p.returncode != 0, p.stdout
    assert f"this parleyd belongs to {pa.name} and serves nobody else" in p.stderr, p.stderr
    # The descriptor socket says the same.
    code = ("import socket, json; s = socket.socket(socket.AF_UNIX); s.connect(%r); "
            "s.sendall(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"files.open\",\"params\":{\"id\":\"abcd\"}}\\n'); "
            "print(s.recv(4096).decode())") % (str(alice.socket) + ".fds")
    p = subprocess.run(["setpriv", f"--reuid={pb.name}", f"--regid={SHARED_GROUP}", "--clear-groups",
                        "--inh-caps=+dac_override", "--ambient-caps=+dac_override", "python3", "-c", code],
                       capture_output=True, text=True, env=env, timeout=30)
    assert "not permitted" in p.stdout, (p.stdout, p.stderr)


def test_copies_no_transfer_needs_are_removed_at_start_and_a_copy_goes_when_sent(people):
    a = Node("copies-a", people["base"], state_dir=people["base"] / "copies-a-state")
    people["nodes"].append(a)
    a.start()
    b = Node("copies-b", people["base"], state_dir=people["base"] / "copies-b-state", peers=[a.address])
    people["nodes"].append(b)
    b.start()
    wait_until(lambda: a.online("copies-b") and b.online("copies-a"), what="a and b online")
    src = people["base"] / "copied.bin"
    src.write_bytes(os.urandom(300_000))
    [t] = a.send_files("copies-b", [src])["transfers"]
    outgoing = a.state_dir / "outgoing"
    [copy] = list(outgoing.iterdir())
    src.unlink()  # the person may delete the original at once
    a.stop()
    (outgoing / "stray").write_bytes(b"left by a crash between the copy and the offer")
    a.start()
    assert [p.name for p in outgoing.iterdir()] == [copy.name], "the stray went, the pending copy stayed"
    wait_until(lambda: b.online("copies-a"), what="b sees a again")
    b.call("files.accept", {"id": t["id"]})
    wait_until(lambda: [x for x in transfers(b) if x["id"] == t["id"] and x["state"] == "completed"],
               what="the file at b")
    wait_until(lambda: not list(outgoing.iterdir()), what="a's copy removed once the transfer completed")


def test_a_group_member_is_served_when_the_daemon_cannot_see_other_users_processes(people):
    """Under the shipped unit (ProtectProc=invisible) parleyd cannot read another user's
    /proc/PID/status, so a member of its group was refused; the groups now come from the
    socket (SO_PEERGROUPS). Here the daemon runs with a /proc mounted hidepid=2."""
    tag = secrets.token_hex(3)
    group = f"pg{tag}"
    subprocess.run(["groupadd", group], check=True)
    try:
        pa, pb, pc = people["alice"], people["bob"], people["carol"]  # alice runs the service
        base = people["base"] / "hidden"
        base.mkdir(mode=0o750)
        shutil.chown(base, pa.name, group)
        service = Node("hidden", people["base"], state_dir=base / "state", env=person_env(pa),
                       launcher=["unshare", "--mount", "sh", "-c",
                                 'mount -t proc -o hidepid=2 proc /proc && exec "$@"', "sh",
                                 "setpriv", f"--reuid={pa.name}", f"--regid={group}", "--clear-groups"])
        service.socket = base / "control.sock"
        people["nodes"].append(service)
        service.start()

        def run(person, groups):
            env = {"PATH": "/usr/bin:/bin", "HOME": str(person.home)}
            return subprocess.run(["setpriv", f"--reuid={person.name}", f"--regid={SHARED_GROUP}", f"--groups={groups}",
                                   PARLEY, "status", "--socket", str(service.socket)],
                                  capture_output=True, text=True, env=env, timeout=30)

        ok = run(pb, group)
        assert ok.returncode == 0, ok.stderr
        # Not a member: the socket's mode stops them; past it (CAP_DAC_OVERRIDE), the daemon does.
        env = {"PATH": "/usr/bin:/bin", "HOME": str(pc.home)}
        refused = subprocess.run(["setpriv", f"--reuid={pc.name}", f"--regid={SHARED_GROUP}", "--clear-groups",
                                  "--inh-caps=+dac_override", "--ambient-caps=+dac_override",
                                  PARLEY, "status", "--socket", str(service.socket)],
                                 capture_output=True, text=True, env=env, timeout=30)
        assert refused.returncode != 0 and f"you are not in group {group}" in refused.stderr, refused.stderr
    finally:
        subprocess.run(["groupdel", group], capture_output=True)


def test_a_system_service_state_moved_to_a_persons_instance_keeps_identity_history_and_contacts(people):
    """README "Several people on one host", moving a single-identity host: the system
    service's state directory (here a daemon run as root, state 0700 root's) copied with
    `cp -a`, given to the person with `chown -R`, its sockets removed; the person's own
    instance then has the same identity, the history, the verified contact, and the files
    received before the move, which the person `parley get`s as themselves."""
    pa, pb = people["alice"], people["bob"]
    bob = own_daemon(people, pb)
    old_state = people["base"] / "system-state"
    system = Node(pa.name, people["base"], peers=[bob.address], state_dir=old_state)
    people["nodes"].append(system)
    system.start()
    wait_until(lambda: system.online(pb.name) and bob.online(pa.name), what="the system service and bob online")
    fp = system.whoami()["fingerprint"]
    system.call("trust.verify", {"peer": pb.name, "fingerprint": bob.whoami()["fingerprint"]})
    system.call("messages.send", {"to": pb.name, "body": "before the move"})
    bob.call("messages.send", {"to": pa.name, "body": "bob, before the move"})
    wait_until(lambda: {m["body"] for m in system.messages(pb.name)} == {"before the move", "bob, before the move"},
               what="both messages in the system service's store")
    src = people["base"] / "minutes.txt"
    src.write_bytes(b"the minutes, received before the move\n")
    tid = bob.send_files(pa.name, [src])["transfers"][0]["id"]
    # Bob is verified there and the file is small: accepted without asking.
    wait_until(lambda: any(t["id"] == tid and t["state"] == "completed" for t in transfers(system)),
               what="the file received by the system service")
    system.stop()

    new_state = pa.home / "state"
    subprocess.run(["cp", "-a", str(old_state), str(new_state)], check=True)
    subprocess.run(["chown", "-R", f"{pa.name}:{SHARED_GROUP}", str(new_state)], check=True)
    for leftover in new_state.glob("control.sock*"):
        leftover.unlink()
    alice = own_daemon(people, pa, peers=[bob.address])
    assert alice.whoami()["fingerprint"] == fp
    assert {m["body"] for m in alice.messages(pb.name)} == {"before the move", "bob, before the move"}
    [contact] = [p for p in alice.call("peers.list")["peers"] if p["name"] == pb.name]
    assert contact["trust"] == "verified" and contact["fingerprint"] == bob.whoami()["fingerprint"], contact
    # Bob's daemon sees the same key again: one alice, not a second entry.
    wait_until(lambda: alice.online(pb.name) and bob.online(pa.name), what="alice's instance and bob online")
    pa.parley(alice, "send", pb.name, "after the move", "--wait", check=True)
    assert [p["fingerprint"] for p in bob.call("peers.list")["peers"] if p["name"] == pa.name] == [fp]
    # `parley files list` does not point alice at the old place she cannot open.
    listed = pa.parley(alice, "files", "list", check=True).stdout
    assert str(old_state) not in listed and f"parley get {tid[:8]} --to DIR" in listed, listed
    # The file received before the move, fetched by alice as herself.
    inbox = pa.home / "in"
    pa.run("mkdir", str(inbox), check=True)
    pa.parley(alice, "get", tid[:8], "--to", str(inbox), check=True)
    saved = inbox / "minutes.txt"
    assert saved.read_bytes() == src.read_bytes() and os.stat(saved).st_uid == pwd_uid(pa.name)
