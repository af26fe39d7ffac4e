"""docs/PROTOCOL.md "Operation summaries" (record 0x19, features bit 5), from the document
alone: this client, a joined member, sends the daemon the heads of its graph of a room; the
daemon sends it the operations outside their past, and since one head is unknown to it,
answers with its own heads."""
import os
import time
import struct

from parley_wire import ACK, PING, PONG, ROOM_OPERATION, Identity, Session, record
from test_room_sync import acked, collect, daemon_accepts, op_hash
from test_rooms import CREATE, JOIN, create_body, daemon_key, room_op  # noqa: F401 (fixtures below)
from test_rooms import daemon  # noqa: F401

ROOM_OPS_HAVE = 0x19
FEATURES = [(0x10, struct.pack(">I", (1 << 3) | (1 << 5)))]


def joined_room(daemon):  # noqa: F811
    """A session of this client (bits 3 and 5) and a room it created with a second member x
    (joined) and the daemon (which accepts): (session, room, the create's hash, x's join's
    hash, the daemon's join's hash). The daemon holds those three operations."""
    me, x = Identity(), Identity()
    session = Session.established(daemon.address, me, card=me.card(name="sum" + os.urandom(4).hex()),
                                  extra_fields=FEATURES)
    name = b"heads" + os.urandom(3).hex().encode()
    create, create_hash = room_op(me, CREATE, os.urandom(16), 1,
                                  body=create_body(name, [me.identity_key, x.identity_key, daemon_key(daemon)]))
    room = create_hash[:16]
    join_x, jx = room_op(x, JOIN, room, 2, parents=[create_hash])
    session.send_records(record(ROOM_OPERATION, create), record(ROOM_OPERATION, join_x))
    collect(session, lambda rs: {create_hash[:16], jx[:16]} <= acked(rs))
    return session, room, create_hash, jx, op_hash(daemon_accepts(daemon, session, room))


def test_the_daemon_sends_what_a_members_heads_lack_and_answers_an_unknown_head(daemon):  # noqa: F811
    session, room, create_hash, jx, jd = joined_room(daemon)

    unknown = os.urandom(32)
    heads = sorted([create_hash, unknown])
    session.send_records(record(ROOM_OPS_HAVE, room + bytes([len(heads)]) + b"".join(heads)))

    def sent_ops(rs):
        return {op_hash(p) for t, p in rs if t == ROOM_OPERATION}

    got = collect(session, lambda rs: {jx, jd} <= sent_ops(rs) and any(t == ROOM_OPS_HAVE for t, _ in rs),
                  timeout=15)
    assert create_hash not in sent_ops(got), "nothing in the past of a head it listed"
    answer = next(p for t, p in got if t == ROOM_OPS_HAVE)
    assert answer[:16] == room
    n = answer[16]
    theirs = [answer[17 + 32 * i:17 + 32 * (i + 1)] for i in range(n)]
    assert len(answer) == 17 + 32 * n and theirs == sorted(theirs) and n >= 1
    assert set(theirs) <= {create_hash, jx, jd}, "its heads are operations of the room"


def test_a_member_that_asks_again_and_again_is_sent_at_most_twice_the_log_per_session(daemon):  # noqa: F811
    """A joined member that acknowledges what it is sent, drops it and sends the same old
    summary every 2 s: the daemon queues what those heads lack each time, until twice the
    room's log (3 operations: the create and two joins) has gone to this session; then
    nothing more in answer to its summaries. Each acknowledgement goes in one message with
    the next summary: the daemon handles a session's records in order, so the summary after
    the acknowledgement lacks those operations again."""
    session, room, create_hash, jx, jd = joined_room(daemon)
    log_size = 3
    unacked = []

    def summary(heads):
        heads = sorted(heads)
        return record(ROOM_OPS_HAVE, room + bytes([len(heads)]) + b"".join(heads))

    def ops_in(rs):
        return [op_hash(p) for t, p in rs if t == ROOM_OPERATION]

    def ask(heads):
        """The acknowledgement of the last answer, then one summary, in one message."""
        # The daemon reads one summary per 2 s per session and room, timed from when it
        # read the last one: before it sent that one's answer, which this client has
        # received. Both clocks are the host's monotonic clock, so 2.2 s from here is
        # more than 2 s on the daemon's, however late the daemon runs.
        time.sleep(2.2)
        ack = [record(ACK, struct.pack(">H", len(unacked)) + b"".join(h[:16] for h in unacked))] if unacked else []
        session.send_records(*ack, summary(heads))
        unacked.clear()

    sent = []
    for _ in range(2 * log_size // 2):  # 2 lacking operations a time: 6 = twice the log
        ask([create_hash])
        got = ops_in(collect(session, lambda rs: len(ops_in(rs)) >= 2, timeout=15))
        assert set(got) == {jx, jd}, "the operations outside the summary's past"
        sent += got
        unacked += got
    assert len(sent) == 2 * log_size
    # Past twice the room's log: nothing more for this session. Positive evidence that the
    # daemon read this summary: it names a head the daemon lacks, so the daemon answers
    # with its own heads (its first answer on this session); the operations it queues in
    # answer to a summary go out before that answer. Then a ping's pong, read after it.
    ask([create_hash, os.urandom(32)])
    got = collect(session, lambda rs: any(t == ROOM_OPS_HAVE for t, _ in rs), timeout=15)
    session.send_records(record(PING, struct.pack(">Q", 7)))
    got += collect(session, lambda rs: any(t == PONG and p == struct.pack(">Q", 7) for t, p in rs), timeout=15)
    assert ops_in(got) == [], "past twice the room's log: nothing more for this session"
