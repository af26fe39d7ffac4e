"""pytest setup for the system tests: the loopback cluster and lab fixtures, and a
summary of measured times."""
import os
import signal

import pytest

import lab as lab_module
from parley_harness import Cluster


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Lets fixtures see whether the test failed (to print daemon logs).
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


def _failed(request):
    report = getattr(request.node, "report_call", None)
    return report is not None and report.failed


@pytest.fixture
def cluster(request):
    """Real parleyd processes on loopback, stopped after the test."""
    c = Cluster()
    yield c
    if _failed(request):
        for n in c.nodes:
            print(f"--- log of {n.name} ---\n{n.log_tail(80)}")
    c.close()
    leaked = _kill_processes_mentioning(str(c.dir))
    if leaked:
        LEAKS.append((request.node.nodeid, leaked))


# Daemons a test started that outlived its cluster: each would keep ports, CPU and
# sockets busy for the rest of the run. Killed at once and listed at the end.
LEAKS = []


def _kill_processes_mentioning(text):
    leaked = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(text.encode() in a for a in argv):
            try:
                os.kill(int(entry), signal.SIGKILL)
            except ProcessLookupError:
                continue
            leaked.append(" ".join(a.decode(errors="replace") for a in argv if a))
    return leaked


@pytest.fixture
def lab(request):
    """A fresh two-host lab (h1, h2), torn down after the test whatever happens.
    Skips the test, saying why, where a lab cannot be built (not root, no netns)."""
    reason = lab_module.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with lab_module.Lab(hosts=2) as the_lab:
        yield the_lab
        if _failed(request):
            the_lab.dump_logs()


def pytest_terminal_summary(terminalreporter):
    if LEAKS:
        terminalreporter.section("processes that outlived their test (killed)")
        for test, commands in LEAKS:
            for command in commands:
                terminalreporter.write_line(f"{test}: {command}")
    if lab_module.MEASUREMENTS:
        terminalreporter.section("measured")
        for name, seconds in lab_module.MEASUREMENTS:
            terminalreporter.write_line(f"{name}: {seconds:.3f} s")
