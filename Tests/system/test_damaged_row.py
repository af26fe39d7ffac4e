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
