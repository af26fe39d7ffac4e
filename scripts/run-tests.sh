#!/usr/bin/env bash
# Builds everything, runs the unit tests (swift test) and the system tests
# (real parleyd processes, Tests/system, pytest). Exit status is non-zero if any fails.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests
swift test --skip-build --disable-swift-testing 2>&1 | tee /tmp/parley-unit-tests.log
unit=${PIPESTATUS[0]}
[ "$unit" -eq 0 ] || { echo "unit tests failed" >&2; exit "$unit"; }
if compgen -G "Tests/system/test_*.py" >/dev/null; then
  PARLEY_BIN_DIR="$(swift build --show-bin-path)" python3 -m pytest -q Tests/system
fi
