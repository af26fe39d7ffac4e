"""Issues 8 and 14, rooms on a real (simulated) LAN: three hosts in network namespaces,
each with its own avahi-daemon, finding each other by mDNS. Needs root; skipped otherwise."""
import time

import lab as lab_module
from parley_harness import wait_until
from test_lab_parleyd import HOSTS, lab3, lab_node  # noqa: F401  (lab3 is a fixture)


def room(node, name):
    for r in node.call("rooms.list")["rooms"]:
        if r["name"] == name:
            return r
    return None


def members(node, name):
    r = room(node, name)
    return sorted(m["name"] for m in r["members"]) if r else None


def room_bodies(node, name, direction="in"):
    return [(m["fromName"], m["body"]) for m in node.messages("#" + name) if m["direction"] == direction]


def accept(nodes, name):
    for n in nodes:
        wait_until(lambda: (room(n, name) or {}).get("status") == "invited", timeout=20, what=f"{n.name} is invited")
        n.cli("room", "accept", "#" + name)


def joined(node, name):
    r = room(node, name)
    return sorted(m["name"] for m in r["members"] if m["joined"]) if r else None


def start_all(lab):
    nodes = {h: lab_node(lab, h).start() for h in HOSTS}
    for a in HOSTS:
        for b in HOSTS:
            if a != b:
                wait_until(lambda: nodes[a].online(b), timeout=30, what=f"{a} sees {b} online")
    return nodes


def test_room_member_cut_off_receives_everything_once_on_return(lab3):  # noqa: F811
    nodes = start_all(lab3)
    h1, h2, h3 = nodes["h1"], nodes["h2"], nodes["h3"]
    h1.cli("room", "create", "lab", "h2", "h3")
    accept([h2, h3], "lab")
    for n in nodes.values():
        wait_until(lambda: joined(n, "lab") == ["h1", "h2", "h3"], timeout=20, what=f"{n.name} sees the room")

    lab3.lanlab("cut", "h3")
    t0 = time.monotonic()
    for i in range(3):
        h1.cli("send", "#lab", f"h1 #{i}")
        h2.cli("send", "#lab", f"h2 #{i}")
    wait_until(lambda: not h1.online("h3") and not h2.online("h3"), timeout=20, what="h3 offline")
    wait_until(lambda: room_bodies(h2, "lab") == [("h1", f"h1 #{i}") for i in range(3)], timeout=20,
               what="h2 hears h1 meanwhile")
    assert room(h1, "lab")["queued"] == 3
    lab3.lanlab("heal", "h3")
    expected = sorted([("h1", f"h1 #{i}") for i in range(3)] + [("h2", f"h2 #{i}") for i in range(3)])
    wait_until(lambda: sorted(room_bodies(h3, "lab")) == expected, timeout=60, what="h3 gets all six on return")
    lab_module.record("room: link healed -> the cut-off member has every message", time.monotonic() - t0)
    wait_until(lambda: room(h1, "lab")["queued"] == 0 and room(h2, "lab")["queued"] == 0, timeout=20,
               what="every room message delivered to every member")
    got = room_bodies(h3, "lab")
    assert len(got) == 6
    for sender in ("h1", "h2"):
        assert [b for s, b in got if s == sender] == [f"{sender} #{i}" for i in range(3)]


def test_room_member_removal_is_honoured_on_the_lan(lab3):  # noqa: F811
    nodes = start_all(lab3)
    h1, h2, h3 = nodes["h1"], nodes["h2"], nodes["h3"]
    h2.cli("room", "create", "ops", "h1", "h3")
    accept([h1, h3], "ops")
    for n in nodes.values():
        wait_until(lambda: joined(n, "ops") == ["h1", "h2", "h3"], timeout=20, what=f"{n.name} sees the room")
    h2.cli("room", "promote", "#ops", "h1")
    wait_until(lambda: {m["name"]: m["role"] for m in room(h1, "ops")["members"]}["h1"] == "admin", timeout=20,
               what="h1 is admin")
    h1.cli("send", "#ops", "before", "--wait")
    h1.cli("room", "remove", "#ops", "h3")

    def agreed():
        views = [room(n, "ops") for n in nodes.values()]
        return len({(v["version"], tuple(sorted(m["fingerprint"] for m in v["members"]))) for v in views}) == 1
    wait_until(agreed, timeout=20, what="the three hosts agree on the room")
    assert members(h2, "ops") == ["h1", "h2"] and room(h3, "ops")["member"] is False
    h1.cli("send", "#ops", "after from h1", "--wait")
    h2.cli("send", "#ops", "after from h2", "--wait")
    # Barriers: "--wait" returns once h3 stored and acknowledged each, which it does after
    # every record that came before on the same session, so a room message wrongly sent to
    # h3 (written before the barrier was even queued) would be stored by now.
    h1.cli("send", "h3", "barrier", "--wait")
    h2.cli("send", "h3", "barrier", "--wait")
    assert room_bodies(h3, "ops") == [("h1", "before")]


def test_a_removed_hostile_member_cannot_take_the_room_over_on_the_lan(lab3, tmp_path):  # noqa: F811
    """Issue 14, item 1 on the LAN: mallory (parley-adversary in h3's namespace) joins
    #desk, is removed by its owner h1, then signs from before its removal: remove h1,
    promote itself, add a key of its own. h1 and h2 keep it out and chat on."""
    nodes = start_all(lab3)
    h1, h2 = nodes["h1"], nodes["h2"]
    state = tmp_path / "mallory.ops"
    target = f"{lab3.ip('h1')}:7744"

    def mallory(*args):
        p = lab3.exec("h3", ["env", f"PARLEY_ADVERSARY_STATE={state}", lab_module.binary("parley-adversary"),
                             "room-member", target, "6d" * 32, "mallory", *args], timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout

    assert "hello" in mallory("hello")
    wait_until(lambda: any(p["name"] == "mallory" for p in h1.call("peers.list")["peers"]), timeout=20,
               what="h1 knows mallory")
    created = h1.call("rooms.create", {"name": "desk", "members": ["h2", "mallory"]})["room"]
    accept([h2], "desk")
    assert f"joined {created['id']}" in mallory("join")
    wait_until(lambda: len(joined(h2, "desk")) == 3, timeout=20, what="h2 sees mallory joined")
    h1.cli("room", "remove", "#desk", "mallory")
    wait_until(lambda: members(h2, "desk") == ["h1", "h2"], timeout=20, what="h2 applies the removal")
    t0 = time.monotonic()
    out = mallory("takeover", created["id"])
    assert "sent 4" in out, out
    h1.cli("send", "h2", "barrier", "--wait")
    for n in (h1, h2):
        assert members(n, "desk") == ["h1", "h2"], n.name
        assert {m["name"]: m["role"] for m in room(n, "desk")["members"]} == {"h1": "owner", "h2": "member"}
    h2.cli("send", "#desk", "still ours", "--wait")
    lab_module.record("room: takeover attempt refused, honest members chat on", time.monotonic() - t0)
    assert ("h2", "still ours") in room_bodies(h1, "desk")
    assert all(b != "mallory is still here" for _, b in room_bodies(h1, "desk"))
