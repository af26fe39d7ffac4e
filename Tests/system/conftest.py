"""pytest setup for the system tests: the lab fixture, and a summary of measured times."""
import pytest

import lab as lab_module


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Lets fixtures see whether the test failed (to print the lab's daemon logs).
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture
def lab(request):
    """A fresh two-host lab (h1, h2), torn down after the test whatever happens.
    Skips the test, saying why, where a lab cannot be built (not root, no netns)."""
    reason = lab_module.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with lab_module.Lab(hosts=2) as the_lab:
        yield the_lab
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            the_lab.dump_logs()


def pytest_terminal_summary(terminalreporter):
    if lab_module.MEASUREMENTS:
        terminalreporter.section("measured")
        for name, seconds in lab_module.MEASUREMENTS:
            terminalreporter.write_line(f"{name}: {seconds:.3f} s")
