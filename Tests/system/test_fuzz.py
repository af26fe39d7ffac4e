"""libFuzzer over Parley's parsers of untrusted input (scripts/fuzz.sh, Fuzz/): each
target runs PARLEY_FUZZ_SECONDS (default 30) from the committed seeds in Fuzz/Corpus,
one per CPU at a time (FUZZ_JOBS), and none may crash, hang or trip a sanitizer. Skipped, with the reason, when this
toolchain cannot link libFuzzer (clang's fuzzer runtime is missing)."""
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TARGETS = ["FuzzFrameDecoder", "FuzzHandshakeResponder", "FuzzCardDecoder",
           "FuzzAppRecord", "FuzzJSONRPC", "FuzzConfigFile", "FuzzWebRelay"]
# scripts/fuzz.sh's exit status when the toolchain has no libFuzzer (automake's "skip").
SKIPPED = 77
# A cold build of the fuzz package (ParleyCore, ParleyControlProtocol, ParleyWebCore,
# ParleyConfiguration and what they need, sanitized) on a slow 2-core machine.
BUILD_ALLOWANCE_SECONDS = 1800
# Per target on top of its fuzzing time: start-up, loading the corpus, the final stats.
# (An upper bound as if they ran one at a time; side by side they take about half.)
PER_TARGET_OVERHEAD_SECONDS = 60


def test_fuzz_targets_do_not_crash():
    seconds = int(os.environ.get("PARLEY_FUZZ_SECONDS", "30"))
    assert seconds > 0, "PARLEY_FUZZ_SECONDS must be a positive number of seconds"
    result = subprocess.run(
        [str(REPO / "scripts/fuzz.sh"), str(seconds)], cwd=REPO, capture_output=True, text=True,
        env={**os.environ, "FUZZ_TARGETS": " ".join(TARGETS)},
        timeout=BUILD_ALLOWANCE_SECONDS + len(TARGETS) * (seconds + PER_TARGET_OVERHEAD_SECONDS))
    output = result.stdout + result.stderr
    if result.returncode == SKIPPED:
        pytest.skip("clang's libFuzzer runtime is missing from this Swift toolchain "
                    "(swiftc -sanitize=fuzzer,address cannot link a fuzzer):\n" + output.strip())
    assert result.returncode == 0, output
    for target in TARGETS:
        match = re.search(rf"^\s+{target}\s+execs: (\d+)\s+cov: (\d+)\s+ft: (\d+)\s+crashes: (\d+)$",
                          output, re.MULTILINE)
        assert match, f"no result line for {target}:\n{output}"
        execs, cov, _, crashes = map(int, match.groups())
        assert crashes == 0, output
        # A target that ran nothing or covered nothing is broken, not safe.
        assert execs > 0 and cov > 0, f"{target} did not run:\n{output}"
    print(output[output.index("fuzz results"):])
