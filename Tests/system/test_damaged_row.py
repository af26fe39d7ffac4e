"""A store row damaged outside parleyd (a disk error, a bad hand edit) costs that one message,
never the conversation: `parley read` and `parley export` show the rest and say what is left
out, `export` exits 1 (not a complete copy, so `export && forget-messages` stops), and the
log says what is wrong with the row without its content."""
import sqlite3

from parley_harness import wait_until
from test_conversation import sent
from test_everyday import pair


def test_a_damaged_message_row_is_left_out_and_named_not_the_whole_conversation(cluster):
    alice, bob = pair(cluster)
    for text in ("first, intact", "second, to be damaged", "third, intact"):
        sent(alice, "bob", text)
    wait_until(lambda: len(bob.messages("alice")) == 3, what="bob has the three messages")
    cursor = next(m["cursor"] for m in bob.messages("alice") if m["body"] == "second, to be damaged")
    bob.stop()
    with sqlite3.connect(bob.state_dir / "parley.sqlite") as c:
        c.execute("PRAGMA ignore_check_constraints = ON")
        assert c.execute("UPDATE message SET id = x'0102' WHERE row_id = ?", (cursor,)).rowcount == 1
    c.close()
    bob.start()

    page = bob.call("messages.list", {"peer": "alice"})
    assert [m["body"] for m in page["messages"]] == ["first, intact", "third, intact"]
    assert page["unreadable"] == [cursor]

    read = bob.cli("read", "alice")
    assert "first, intact" in read.stdout and "third, intact" in read.stdout
    assert "could not be read" in read.stderr and str(cursor) in read.stderr

    export = bob.cli("export", "alice", check=False)
    assert export.returncode == 1, export
    assert "first, intact" in export.stdout and "third, intact" in export.stdout
    assert "not in this export" in export.stderr

    log = bob.log_path.read_text(errors="replace")
    assert "a stored message could not be read" in log and "message.id" in log
    assert "second, to be damaged" not in log, "the row's content is never logged"


def damage(node, sql, *args):
    """Changes a row of a stopped node's store, CHECK constraints off, as damage would."""
    with sqlite3.connect(node.state_dir / "parley.sqlite") as c:
        c.execute("PRAGMA ignore_check_constraints = ON")
        assert c.execute(sql, args).rowcount == 1, sql
    c.close()


def test_search_leaves_a_damaged_row_out_and_names_it(cluster):
    alice, bob = pair(cluster)
    for text in ("lunch first", "lunch damaged", "lunch last"):
        sent(alice, "bob", text)
    wait_until(lambda: len(bob.messages("alice")) == 3, what="bob has the three messages")
    damaged = next(m for m in bob.messages("alice") if m["body"] == "lunch damaged")
    cursor, damaged_id = damaged["cursor"], damaged["id"]
    bob.stop()
    damage(bob, "UPDATE message SET state = 9 WHERE row_id = ?", cursor)
    bob.start()

    found = bob.call("messages.search", {"query": "lunch"})
    assert sorted(h["message"]["body"] for h in found["hits"]) == ["lunch first", "lunch last"]
    assert found["unreadable"] == [cursor]
    assert "unreadable" not in bob.call("messages.search", {"query": "first"}), "absent when none"
    out = bob.cli("search", "lunch")
    assert "lunch first" in out.stdout and "could not be read" in out.stderr and str(cursor) in out.stderr

    # Naming it by id: the person is told it is damaged, not that it does not exist.
    react = bob.cli("react", damaged_id[:8], "ok", check=False)
    assert react.returncode != 0 and "damaged" in react.stderr, react

    log = bob.log_path.read_text(errors="replace")
    assert log.count("a stored message could not be read") == 1, "each damaged row is logged once"
    assert "message.state" in log and "lunch damaged" not in log


def test_a_damaged_queued_message_never_stalls_the_ones_after_it_and_parleyd_starts(cluster):
    alice, bob = pair(cluster)
    bob.stop()
    for text in ("queued one, to be damaged", "queued two", "queued three"):
        alice.cli("send", "bob", text)
    queued = [m for m in alice.messages("bob") if m["body"].startswith("queued")]
    assert len(queued) == 3
    alice.stop()
    damage(alice, "UPDATE message SET id = x'0102' WHERE row_id = ?", queued[0]["cursor"])

    # parleyd starts with the damaged queued row, and what reads it answers.
    alice.start()
    alice.call("peers.list")
    alice.call("node.status")
    bob.start()
    wait_until(lambda: [m["body"] for m in bob.messages("alice") if m["body"].startswith("queued")]
               == ["queued two", "queued three"], what="bob receives the messages after the damaged one")
    assert not any("to be damaged" in m["body"] for m in bob.messages("alice")), "a damaged row is never sent"
    page = alice.call("messages.list", {"peer": "bob"})
    assert page["unreadable"] == [queued[0]["cursor"]]
    log = alice.log_path.read_text(errors="replace")
    assert "a stored message could not be read" in log and "message.id" in log
    assert "to be damaged" not in log
