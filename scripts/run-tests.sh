#!/usr/bin/env bash
# Builds everything, runs the unit tests (swift test), the protocol conformance suite
# (Tests/conformance) and the system tests (real parleyd processes, Tests/system, pytest).
# Exit status is non-zero if any fails, and also if any test skipped: CI installs
# everything the suite needs (scripts/install-deps.sh test), so a skip there is a missing
# install step, never a pass (Tests/ci_guard.py).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests
swift test --skip-build --disable-swift-testing 2>&1 | tee /tmp/parley-unit-tests.log
# XCTest on Linux ends with "Executed N tests, with K tests skipped and F failures".
if grep -qE 'with [1-9][0-9]* tests? skipped' /tmp/parley-unit-tests.log; then
  echo "unit tests: some were skipped (a tool CI must have is missing):" >&2
  grep -E "Test skipped - |' skipped \(" /tmp/parley-unit-tests.log >&2 || true
  exit 1
fi
# Every pytest stage runs under Debian's python3, which has everything the suite needs from
# Debian's packages (installed by scripts/install-deps.sh test): pytest, pytest-timeout,
# python3-nacl for the conformance client, python3-selenium for the browser tests. One
# interpreter, so a module can never skip itself for running under the wrong one.
PY=/usr/bin/python3
"$PY" -c 'import pytest, pytest_timeout, nacl.bindings, selenium' 2>/dev/null \
  || { echo "python3-pytest, -pytest-timeout, -nacl or -selenium missing: run scripts/install-deps.sh test" >&2; exit 1; }
BIN_DIR="$(swift build --show-bin-path)"
# -p ci_guard: a skip fails the run. --timeout: a hung test fails alone, with its stack,
# instead of eating CI's 90 minutes (the slowest test, test_fuzz.py, takes about 7 min).
pytest() {
  PYTHONPATH="$PWD/Tests${PYTHONPATH:+:$PYTHONPATH}" PARLEY_BIN_DIR="$BIN_DIR" \
    "$PY" -m pytest -p ci_guard --timeout=900 "$@"
}
# The conformance suite: an independent client written from docs/PROTOCOL.md against a
# real parleyd.
pytest -q Tests/conformance
# --durations: the slowest system tests in the CI log, to keep the suite's time in view.
pytest -q --durations=20 Tests/system
