#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ (a separate SwiftPM package) with
# -sanitize=fuzzer,address and runs each for SECONDS, starting from the committed seeds in
# Fuzz/Corpus/<Target>/. Prints per target: executions, coverage (libFuzzer's cov: and
# ft:) and crashes. Exit status: 0 if no target crashed, 1 if one did, 2 on a usage or
# build error, 77 if this toolchain cannot build fuzzers (no libFuzzer runtime).
#
#   scripts/fuzz.sh [SECONDS]        default 60; `make fuzz FUZZ_SECONDS=N`
#   scripts/fuzz.sh --seeds          regenerate Fuzz/Corpus from real encoders and exit
#   FUZZ_TARGETS="FuzzCardDecoder"   run only these targets (space-separated)
#   FUZZ_JOBS=N                      targets fuzzed at once (default: the CPU count)
#
# New inputs the fuzzer finds go to Fuzz/.build/fuzz/corpus/<Target> (not committed);
# crashing inputs to Fuzz/.build/fuzz/artifacts/<Target>/, and their paths are printed.
# A crash is fixed in the source and its input becomes an XCTest regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SWIFT=${SWIFT:-swift}
FUZZ_DIR=$ROOT/Fuzz
WORK=$FUZZ_DIR/.build/fuzz
ALL_TARGETS="FuzzFrameDecoder FuzzHandshakeResponder FuzzCardDecoder FuzzAppRecord FuzzJSONRPC FuzzConfigFile FuzzWebRelay"
TARGETS=${FUZZ_TARGETS:-$ALL_TARGETS}
# swift-protobuf's FuzzTesting builds the same way: the fuzz entry point lives in main.swift,
# so main.swift must be parsed as a library (libFuzzer's runtime provides main()).
# -O on a debug build: two to three times the executions per second of -Onone, without
# release's whole-module builds of every dependency; preconditions stay checked.
FUZZ_FLAGS=(-Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -O)
# An input that runs longer than this is reported as a hang (a crash for our purposes):
# every target handles one input in milliseconds.
PER_INPUT_TIMEOUT=10

if [ "${1:-}" = "--seeds" ]; then
  # MakeSeeds is an ordinary executable: built without the fuzzer flags, in its own
  # scratch path so the two builds do not invalidate each other.
  "$SWIFT" build --package-path "$FUZZ_DIR" --scratch-path "$FUZZ_DIR/.build-seeds" --product MakeSeeds
  exec "$FUZZ_DIR/.build-seeds/debug/MakeSeeds" "$ROOT"
fi

SECONDS_PER_TARGET=${1:-60}
case $SECONDS_PER_TARGET in
  ''|*[!0-9]*|0) echo "usage: scripts/fuzz.sh [SECONDS > 0] | --seeds" >&2; exit 2 ;;
esac

# Can this toolchain link a fuzzer at all? (Swift for Linux ships libclang_rt.fuzzer;
# some distributions' toolchains do not.) Probe with a one-line program.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
cat >"$probe/probe.swift" <<'EOF'
@_cdecl("LLVMFuzzerTestOneInput")
public func probe(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { 0 }
EOF
if ! swiftc_out=$("${SWIFTC:-swiftc}" -sanitize=fuzzer,address -parse-as-library \
      "$probe/probe.swift" -o "$probe/probe" 2>&1); then
  echo "fuzz: SKIPPED: this Swift toolchain cannot link libFuzzer (-sanitize=fuzzer,address):" >&2
  echo "$swiftc_out" | head -5 >&2
  exit 77
fi

mkdir -p "$WORK/logs"
for target in $TARGETS; do
  echo "fuzz: building $target"
  build_log=$WORK/logs/build-$target.log
  if ! "$SWIFT" build --package-path "$FUZZ_DIR" -c debug "${FUZZ_FLAGS[@]}" --product "$target" \
       >"$build_log" 2>&1; then
    grep -E 'error:' "$build_log" | head -20 >&2 || tail -40 "$build_log" >&2
    echo "fuzz: build of $target failed (log: ${build_log#$ROOT/})" >&2
    exit 2
  fi
done
BIN=$("$SWIFT" build --package-path "$FUZZ_DIR" -c debug "${FUZZ_FLAGS[@]}" --show-bin-path)

# Swift's own crash backtracer reads the crashed process's memory, which ASan reports as
# a second, confusing error; libFuzzer prints the stack of a trap itself.
export SWIFT_BACKTRACE=${SWIFT_BACKTRACE:-enable=no}

# Runs one target for SECONDS_PER_TARGET and writes its summary line to
# $WORK/logs/<Target>.result (the first word "FAILED" if it crashed), its complaint to stderr.
run_target() {
  local target=$1
  local corpus=$WORK/corpus/$target
  local artifacts=$WORK/artifacts/$target
  local log=$WORK/logs/$target.log
  mkdir -p "$corpus" "$artifacts"
  touch "$log.start"  # artifacts newer than this are this run's
  echo "fuzz: running $target for ${SECONDS_PER_TARGET}s (log: ${log#$ROOT/})"
  # The first directory receives new inputs; the committed seeds are only read.
  local status=0
  "$BIN/$target" "$corpus" "$FUZZ_DIR/Corpus/$target" \
    -max_total_time="$SECONDS_PER_TARGET" -timeout="$PER_INPUT_TIMEOUT" \
    -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  # libFuzzer's last status line ("#N DONE cov: C ft: F ..." or, after a crash, the last
  # pulse line) and its final stats.
  local last execs cov ft crashes line
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(echo "$last" | sed -n 's/^#\([0-9]*\).*/\1/p')
  cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  crashes=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' \
              -o -name 'leak-*' -o -name 'slow-unit-*' \) -newer "$log.start" 2>/dev/null | wc -l || true)
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
  line=$(printf '%-24s execs: %-10s cov: %-6s ft: %-6s crashes: %s' \
         "$target" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$crashes")
  if [ "$crashes" -ne 0 ]; then
    {
      echo "fuzz: $target FAILED (exit $status); last lines of its log:"
      grep -E 'ERROR|Fatal error|/Sources/|Test unit written|SUMMARY' "$log" | head -30 || tail -20 "$log"
      echo "fuzz: reproduce with: ${BIN#$ROOT/}/$target <artifact above>"
    } >&2
    echo "FAILED $line" >"$WORK/logs/$target.result"
  else
    echo "$line" >"$WORK/logs/$target.result"
  fi
}

# The targets share nothing (each its own corpus, artifacts and log), so they run
# FUZZ_JOBS at a time (default: one per CPU): each still fuzzes SECONDS_PER_TARGET, and
# on CI's two cores the run takes half as long. A target is single-threaded.
JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $JOBS in ''|*[!0-9]*|0) JOBS=1 ;; esac
running=0
for target in $TARGETS; do
  rm -f "$WORK/logs/$target.result"
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$target" &
  running=$((running + 1))
done
wait

failed=0
summary=()
for target in $TARGETS; do
  line=$(cat "$WORK/logs/$target.result" 2>/dev/null || echo "FAILED $target: no result (the run died)")
  case $line in FAILED\ *) failed=1; line=${line#FAILED } ;; esac
  summary+=("$line")
done

echo
echo "fuzz results (${SECONDS_PER_TARGET}s per target):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
