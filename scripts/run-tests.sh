#!/usr/bin/env bash
# Builds everything, runs the unit tests (swift test) and the system tests
# (real parleyd processes, Tests/system, pytest) and the protocol conformance suite
# (Tests/conformance). Exit status is non-zero if any fails.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests
swift test --skip-build --disable-swift-testing 2>&1 | tee /tmp/parley-unit-tests.log
unit=${PIPESTATUS[0]}
[ "$unit" -eq 0 ] || { echo "unit tests failed" >&2; exit "$unit"; }
# pytest: the first python3 that has it (a pyenv python, or Debian's python3-pytest).
PY=""
for p in python3 /usr/bin/python3; do
  if "$p" -m pytest --version >/dev/null 2>&1; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "pytest not found: run scripts/install-deps.sh test" >&2; exit 1; }
# The conformance suite (Tests/conformance): an independent client written from
# docs/PROTOCOL.md against a real parleyd. Its crypto comes from python3-nacl (Debian), so it
# runs under the first python3 that has both pytest and nacl (a pyenv python may lack nacl).
CPY=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import pytest, nacl.bindings' >/dev/null 2>&1; then CPY=$p; break; fi
done
[ -n "$CPY" ] || { echo "pytest or python3-nacl not found: run scripts/install-deps.sh test" >&2; exit 1; }
PARLEY_BIN_DIR="$(swift build --show-bin-path)" "$CPY" -m pytest -q Tests/conformance
# The browser tests (Tests/system/test_web*.py) need Selenium: Debian's python3-selenium,
# so the first python3 that has both pytest and selenium (a pyenv python may lack it).
WPY=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import pytest, selenium' >/dev/null 2>&1; then WPY=$p; break; fi
done
[ -n "$WPY" ] || { echo "pytest or python3-selenium not found: run scripts/install-deps.sh test" >&2; exit 1; }
# --durations: the slowest system tests in the CI log, to keep the suite's time in view.
PARLEY_BIN_DIR="$(swift build --show-bin-path)" "$PY" -m pytest -q --durations=20 Tests/system \
  --ignore=Tests/system/test_web.py --ignore=Tests/system/test_web_files.py
# Every browser test file, under the python that has selenium (under another one a browser
# test module skips itself, and that skip must never stand in for a run).
PARLEY_BIN_DIR="$(swift build --show-bin-path)" "$WPY" -m pytest -q Tests/system/test_web.py Tests/system/test_web_files.py
