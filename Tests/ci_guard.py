"""A pytest plugin for the suite's CI run (scripts/run-tests.sh loads it with `-p ci_guard`).

A skipped test is a test that did not run: CI installs everything the suite needs (tmux,
faketime, the lab, Chromium, libFuzzer, bubblewrap...), so a skip there means a missing
install step or a broken probe, and it must not pass as green. With this plugin loaded,
any skip fails the run and is listed with its reason. Running a single file by hand
without `-p ci_guard` still skips politely where a tool is missing.
"""
import pytest

_SKIPPED = []


def pytest_runtest_logreport(report):
    # An expected failure (xfail) is reported as skipped too; it ran, so it is not a skip.
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIPPED.append((report.nodeid, reason))


def pytest_terminal_summary(terminalreporter):
    if _SKIPPED:
        terminalreporter.section("skipped tests that CI must run (each fails the run)")
        for nodeid, reason in _SKIPPED:
            terminalreporter.write_line(f"{nodeid}: {reason}")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    if _SKIPPED and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
