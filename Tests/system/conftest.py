import pytest

from parley_harness import Cluster


@pytest.fixture
def cluster(request):
    c = Cluster()
    yield c
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        for n in c.nodes:
            print(f"--- log of {n.name} ---\n{n.log_tail(80)}")
    c.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
