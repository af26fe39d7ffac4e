"""`make install` / `make uninstall` into a DESTDIR, with stand-in binaries so no
release build is needed: every file lands where docs/INSTALL.md says, the unit's
ExecStart is substituted, an existing parleyd.toml is never touched, and uninstall
removes exactly what install created."""
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

COMPLETION_STUB = """#!/bin/sh
# Stand-in for the parley CLI: prints what swift-argument-parser would.
[ "$1" = --generate-completion-script ] || exit 64
case "$2" in
  bash) echo '_parley() { :; }'; echo 'complete -F _parley parley' ;;
  zsh) echo '#compdef parley' ;;
  fish) echo 'complete -c parley -f' ;;
  *) exit 64 ;;
esac
"""


def write_executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def files_under(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir()}


@pytest.fixture
def release_bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "release"
    write_executable(bin_dir / "parleyd", "#!/bin/sh\nexit 0\n")
    write_executable(bin_dir / "parley", COMPLETION_STUB)
    write_executable(bin_dir / "parley-mdns", "#!/bin/sh\nexit 0\n")
    return bin_dir


EXPECTED = {
    "usr/local/bin/parleyd",
    "usr/local/bin/parley",
    "usr/local/bin/parley-mdns",  # issue 17: the discovery check is installed too
    "usr/local/lib/systemd/system/parleyd.service",
    "usr/local/lib/systemd/system/parleyd@.service",
    "usr/local/lib/systemd/user/parley-web.service",  # issue 20: parley web as a user unit
    "usr/local/lib/systemd/user/parley-notify.service",  # issue 28: desktop notifications per person
    "usr/local/lib/sysusers.d/parley.conf",
    "usr/local/lib/tmpfiles.d/parley.conf",
    "etc/parley/parleyd.toml.example",
    "usr/local/share/man/man8/parleyd.8",
    "usr/local/share/man/man1/parley.1",
    "usr/local/share/bash-completion/completions/parley",
    "usr/local/share/zsh/site-functions/_parley",
    "usr/local/share/fish/vendor_completions.d/parley.fish",
}


def test_install_then_uninstall(tmp_path: Path, release_bin: Path):
    destdir = tmp_path / "root"
    config = destdir / "etc/parley/parleyd.toml"
    config.parent.mkdir(parents=True)
    config.write_text("name = \"mine\"\n")

    result = make("install", f"DESTDIR={destdir}", f"RELEASE_BIN={release_bin}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert files_under(destdir) == EXPECTED | {"etc/parley/parleyd.toml"}

    unit = (destdir / "usr/local/lib/systemd/system/parleyd.service").read_text()
    assert "ExecStart=/usr/local/bin/parleyd\n" in unit
    assert "@BINDIR@" not in unit
    template = (destdir / "usr/local/lib/systemd/system/parleyd@.service").read_text()
    assert "ExecStart=/usr/local/bin/parleyd --name %i --listen [::]:0\n" in template
    assert "@BINDIR@" not in template
    assert config.read_text() == "name = \"mine\"\n", "an existing parleyd.toml is never overwritten"
    assert os.access(destdir / "usr/local/bin/parleyd", os.X_OK)
    assert "complete -F _parley parley" in (destdir / "usr/local/share/bash-completion/completions/parley").read_text()

    result = make("uninstall", f"DESTDIR={destdir}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert files_under(destdir) == {"etc/parley/parleyd.toml"}

    config.unlink()
    make("install", f"DESTDIR={destdir}", f"RELEASE_BIN={release_bin}")
    make("uninstall", f"DESTDIR={destdir}")
    assert files_under(destdir) == set()
    assert not (destdir / "etc/parley").exists(), "the emptied config directory is removed"


def test_prefix_usr_substitutes_exec_start(tmp_path: Path, release_bin: Path):
    destdir = tmp_path / "root"
    result = make("install", "PREFIX=/usr", f"DESTDIR={destdir}", f"RELEASE_BIN={release_bin}")
    assert result.returncode == 0, result.stdout + result.stderr
    unit = (destdir / "usr/lib/systemd/system/parleyd.service").read_text()
    assert "ExecStart=/usr/bin/parleyd\n" in unit


def test_install_without_release_build_fails_clearly(tmp_path: Path):
    result = make("install-bin", f"DESTDIR={tmp_path / 'root'}", f"RELEASE_BIN={tmp_path / 'nothing'}")
    assert result.returncode != 0
    assert "run 'make release' first" in result.stderr


def test_completions_need_a_real_parley(tmp_path: Path):
    missing = make("install-completions", f"DESTDIR={tmp_path / 'root'}", f"PARLEY_BIN={tmp_path / 'none'}")
    assert missing.returncode != 0
    assert "is missing" in missing.stderr

    stub = tmp_path / "parley"
    write_executable(stub, "#!/bin/sh\necho parley\n")
    result = make("install-completions", f"DESTDIR={tmp_path / 'root'}", f"PARLEY_BIN={stub}")
    assert result.returncode != 0
    assert "did not print a bash completion script" in result.stderr
    assert not (tmp_path / "root").exists() or files_under(tmp_path / "root") == set()
