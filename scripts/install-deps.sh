#!/usr/bin/env bash
# Installs the Debian packages Parley needs, only those that are missing.
#   scripts/install-deps.sh build   # to build and run parleyd/parley
#   scripts/install-deps.sh test    # also what the test suite needs (avahi, lab tools, pytest,
#                                   # python3-nacl for the conformance client in Tests/conformance,
#                                   # chromium + chromedriver + selenium for the web client's tests)
#   scripts/install-deps.sh bench   # also the benchmark's references (ngircd, openssl, sshd) and
#                                   # the LAN lab its row 8 runs in
#   scripts/install-deps.sh package # `make deb` and the package's tests on booted Debian hosts
#                                   # (Tests/system/test_package.py); `test` includes it
set -euo pipefail
want=${1:-build}

# libavahi-common-dev: CDNSSD installs avahi's zeroing allocator (avahi-common/malloc.h).
build_pkgs=(pkg-config libsodium-dev libseccomp-dev libavahi-compat-libdnssd-dev libavahi-common-dev libsqlite3-dev)
# Thumbnails of pictures the user sends (issue 18): parleyd runs vipsthumbnail (libvips-tools)
# in a child process under bubblewrap (bwrap). Both are optional at run time (without them an
# offer simply has no thumbnail, or the child runs with rlimits only), but wanted by default.
build_pkgs+=(libvips-tools bubblewrap)
# The lab (scripts/lanlab) needs iproute2, util-linux (nsenter, unshare, setsid), mount, dbus,
# avahi-daemon, and libnss-mdns (its postinst adds mdns4_minimal to /etc/nsswitch.conf);
# avahi-utils' avahi-browse and avahi-publish observe and publish in it.
# nftables: the routed lab drops mDNS or a port on its router or a host (issue 19).
lab_pkgs=(avahi-daemon avahi-utils libnss-mdns dbus iproute2 util-linux mount nftables)
# The web client's browser tests (Tests/system/test_web.py): headless Chromium driven by
# Debian's Selenium through chromedriver, from Debian (no downloaded drivers); only axe-core
# comes from PyPI (below).
# fonts-noto-color-emoji: emoji in the page (and its screenshots) instead of empty boxes.
# zbar-tools: zbarimg decodes the verify panel's QR code (the page's encoder is Debian's
# node-qrcode-generator, vendored into the assets: nothing to install for it).
web_test_pkgs=(chromium chromium-driver python3-selenium fonts-noto-color-emoji python3-pip zbar-tools)
# axe-core, for test_web.py's accessibility audit: no Debian package carries it (`apt-cache
# search axe` finds none), so the axe.min.js that PyPI's axe-playwright-python ships is used,
# installed for Debian's python3 without its dependencies (only the file is read, and
# injected into the page by Selenium; Playwright is not needed).
pip_test_pkgs=("axe-playwright-python==0.1.8")
pip_test_module=axe_playwright_python
install_pip_test_pkgs() {
  [ "$want" = test ] || return 0
  /usr/bin/python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$pip_test_module') is None)" \
    2>/dev/null && return 0
  echo "install-deps: installing from PyPI for /usr/bin/python3: ${pip_test_pkgs[*]}" >&2
  local sudo=""
  [ "$(id -u)" != 0 ] && sudo=sudo
  $sudo /usr/bin/python3 -m pip install -q --no-deps --break-system-packages "${pip_test_pkgs[@]}"
}
# parley notify's test: a private session bus and a notification server written with python3-dbus.
notify_test_pkgs=(dbus python3-dbus python3-gi)
# The bench smoke test (Tests/system/test_bench_smoke.py) checks rows 3i/4i beside their C
# floor under valgrind and row 4d beside Redis: the test run installs those references too,
# so the smoke never passes with a reference silently absent.
bench_smoke_pkgs=(valgrind binutils gcc redis-server)
test_pkgs=(python3 python3-pytest python3-pytest-timeout python3-nacl "${lab_pkgs[@]}" tmux faketime sqlite3
  "${web_test_pkgs[@]}" "${notify_test_pkgs[@]}" "${bench_smoke_pkgs[@]}")
# The references `make bench` measures Parley against (docs/BENCHMARKS.md); row 8 runs in
# the lab, driven by scripts/bench-discovery.py.
# valgrind counts instructions per message (rows 3i, 4i); objcopy (binutils) strips the DWARF 5
# debug info valgrind 3.19 cannot read, and cc builds its sigsuspend shim (CallgrindBench.swift).
bench_pkgs=(ngircd redis-server openssl python3 valgrind binutils gcc "${lab_pkgs[@]}")
# Rows 10s/10t: OpenSSH's sftp as the file rows' reference. The bench starts its own sshd on a
# loopback port with a host key and config in a temporary directory (the system's sshd is never
# started or touched; the policy below keeps the package from starting it).
bench_pkgs+=(openssh-server openssh-client)

# `make deb` (dpkg-buildpackage, debhelper; lintian checks the result) and the booted hosts
# the package is tested on (scripts/debhost: mmdebstrap builds a Debian 12 root,
# systemd-container's systemd-nspawn boots it); readelf (binutils) checks that no binary
# needs a Swift library.
package_pkgs=(dpkg-dev debhelper lintian binutils mmdebstrap systemd-container util-linux)

pkgs=("${build_pkgs[@]}")
[ "$want" = test ] && pkgs+=("${test_pkgs[@]}" "${package_pkgs[@]}")
[ "$want" = package ] && pkgs+=("${package_pkgs[@]}")
[ "$want" = bench ] && pkgs+=("${bench_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  install_pip_test_pkgs
  exit 0
fi

echo "install-deps: installing missing Debian packages: ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to apt-get install ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
# Installing avahi-daemon or ngircd must not start a daemon on this machine's real network
# (tests run their own inside network namespaces): forbid service starts during install.
policy=/usr/sbin/policy-rc.d
created_policy=no
if [ ! -e "$policy" ] && [ "${PARLEY_ALLOW_SERVICE_START:-0}" != 1 ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod +x "$policy" && created_policy=yes
fi
trap '[ "$created_policy" = yes ] && $SUDO rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || true
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_pip_test_pkgs
