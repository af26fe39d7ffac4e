"""Issue 30 in the routed lab: a room across two subnets works without `parley connect`.

    subnet A 10.79.0.0/24: h1 alice, h2 carol      router r      subnet B 10.79.1.0/24: h3 bob

mDNS does not cross the router (its reflector is off and it drops UDP 5353). alice and bob
became contacts once, while the office's reflector was on (carol was not running then);
carol knows only alice (mDNS on subnet A). Nobody is given an address (no --peer, no
`parley connect`). alice puts bob and carol in #lab: they reach each other through the
room (co-members' signed address records), across the router, and the room works while
alice is away.
"""
import pytest

import lab as lab_module
from parley_harness import wait_until
from test_rooms import accept, joined_names, room_messages

FAST = ["--ping-interval-ms", "1000", "--dead-after-ms", "3000"]


@pytest.fixture
def routed(request):
    reason = lab_module.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with lab_module.Lab(hosts=3, routed=2) as the_lab:
        yield the_lab
        failed = getattr(request.node, "report_call", None)
        for n in the_lab.nodes:
            if failed is not None and failed.failed:
                print(f"--- log of {n.name} ---\n{n.log_tail(60)}")
            n.stop()


def test_a_room_across_two_subnets_works_without_connect(routed):
    alice = routed.node("h1", "alice", extra_args=FAST)
    carol = routed.node("h2", "carol", extra_args=FAST)
    bob = routed.node("h3", "bob", extra_args=FAST)

    # Last week, with the reflector on: alice and bob met by mDNS and wrote to each other.
    # (carol's host hears none of it: its avahi-daemon would otherwise still hold bob's
    # advertisement in its cache today.)
    routed.lanlab("drop-mdns", "h2", "on")
    routed.lanlab("reflector", "on")
    alice.start()
    bob.start()
    wait_until(lambda: alice.online("bob") and bob.online("alice"), timeout=40,
               what="alice and bob find each other across the reflector")
    alice.cli("send", "bob", "hello bob", "--wait")
    bob.cli("send", "alice", "hello alice", "--wait")

    # Today: no multicast across the router. carol, on alice's subnet, finds only alice.
    routed.lanlab("reflector", "off")
    routed.lanlab("drop-mdns", "r", "on")
    routed.lanlab("drop-mdns", "h2", "off")
    carol.start()
    wait_until(lambda: carol.online("alice") and alice.online("carol"), timeout=40,
               what="carol and alice find each other on subnet A")
    alice.cli("send", "carol", "hello carol", "--wait")
    carol.cli("send", "alice", "hello alice", "--wait")
    assert not carol.online("bob") and not bob.online("carol")
    assert all(not n.peers for n in (alice, bob, carol)), "nobody was given an address"

    alice.call("rooms.create", {"name": "lab", "members": ["bob", "carol"]})
    accept([bob, carol], "lab", timeout=40)
    for node in (alice, bob, carol):
        wait_until(lambda: joined_names(node, "lab") == ["alice", "bob", "carol"], timeout=40,
                   what=f"{node.name} sees everyone joined")
    # bob and carol learn each other's signed address records through the room and get a
    # session across the router: no `parley connect`.
    wait_until(lambda: bob.online("carol") and carol.online("bob"), timeout=60,
               what="bob and carol reach each other across the router through the room")

    # alice's laptop goes home: the room goes on between the two subnets.
    alice.stop()
    wait_until(lambda: not bob.online("alice") and not carol.online("alice"), timeout=30, what="alice gone")
    bob.call("messages.send", {"to": "#lab", "body": "from subnet B"})
    carol.call("messages.send", {"to": "#lab", "body": "from subnet A"})
    wait_until(lambda: ("bob", "from subnet B") in [(m["fromName"], m["body"]) for m in room_messages(carol, "lab")],
               timeout=30, what="carol gets bob's room message")
    wait_until(lambda: ("carol", "from subnet A") in [(m["fromName"], m["body"]) for m in room_messages(bob, "lab")],
               timeout=30, what="bob gets carol's room message")
    # carol, shown by name (not only a fingerprint), can be written to directly.
    bob.cli("send", "carol", "direct, across the router", "--wait", "--timeout", "30")
