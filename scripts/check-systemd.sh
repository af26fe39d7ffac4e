#!/usr/bin/env bash
# Checks the systemd unit without a running systemd:
#   1. installs the systemd files into a temporary DESTDIR (make install-systemd),
#      with dummy executables at the unit's Exec*= paths;
#   2. `systemd-analyze verify --root=DESTDIR` must pass and print nothing
#      (verify exits 0 on warnings such as a misspelt key, so any output fails);
#   3. `systemd-sysusers --dry-run` must accept parley.sysusers.conf;
#   4. `systemd-analyze security --offline=true`: the overall exposure score must
#      be at most MAX_EXPOSURE (default 1.5, lower is better); the score is printed.
# For parleyd.service and for an instance of the per-person template parleyd@.service.
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_EXPOSURE=${MAX_EXPOSURE:-1.5}
PREFIX=${PREFIX:-/usr/local}
units="parleyd.service parleyd@checkuser.service"

command -v systemd-analyze >/dev/null || { echo "check-systemd: systemd-analyze not found" >&2; exit 2; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
make -s install-systemd DESTDIR="$root" PREFIX="$PREFIX" >/dev/null
unit_dir=$root$PREFIX/lib/systemd/system

# verify --root resolves everything inside the root: it needs the targets our unit
# and its default dependencies refer to (copied from the host) and executables at
# every Exec*= path (dummies: verify only checks they exist and are executable).
mkdir -p "$root/usr/lib/systemd/system"
for dir in /usr/lib/systemd/system /lib/systemd/system; do
  [ -d "$dir" ] && cp -L "$dir"/*.target "$root/usr/lib/systemd/system/" 2>/dev/null || true
done
cat "$unit_dir/parleyd.service" "$unit_dir/parleyd@.service" | grep -E '^Exec[A-Za-z]*=' | while IFS='=' read -r _ command; do
  path=${command%% *}
  path=${path#[-@:+!]}
  path=${path#[-@:+!]}
  if [ ! -e "$root$path" ]; then
    mkdir -p "$(dirname "$root$path")"
    printf '#!/bin/sh\nexit 0\n' >"$root$path"
    chmod 0755 "$root$path"
  fi
done

status=0
for unit in $units; do
echo "== systemd-analyze verify $unit"
if ! out=$(systemd-analyze verify --man=no --root="$root" "$unit" 2>&1) || [ -n "$out" ]; then
  echo "$out"
  echo "check-systemd: FAIL: systemd-analyze verify reported problems" >&2
  status=1
else
  echo "ok"
fi
done

echo "== systemd-sysusers --dry-run parley.conf"
if command -v systemd-sysusers >/dev/null; then
  if ! out=$(systemd-sysusers --dry-run --root="$root" "$root$PREFIX/lib/sysusers.d/parley.conf" 2>&1); then
    echo "$out"
    echo "check-systemd: FAIL: systemd-sysusers rejected parley.sysusers.conf" >&2
    status=1
  else
    echo "ok"
  fi
else
  echo "skipped (systemd-sysusers not found)"
fi

for unit in $units; do
echo "== systemd-analyze security --offline=true $unit"
report=$(systemd-analyze security --offline=true --root="$root" "$unit" 2>&1) || true
score=$(printf '%s\n' "$report" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\).*/\1/p' | tail -1)
if [ -z "$score" ]; then
  printf '%s\n' "$report"
  echo "check-systemd: FAIL: could not find the overall exposure level in the report" >&2
  exit 1
fi
# Items that still cost exposure, for whoever tightens the unit next.
printf '%s\n' "$report" | grep -E '^✗' || true
echo "exposure score: $score (maximum $MAX_EXPOSURE)"
if awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s > m) }'; then
  echo "check-systemd: FAIL: exposure $score is above $MAX_EXPOSURE" >&2
  status=1
fi
done
exit $status
