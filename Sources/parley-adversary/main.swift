// parley-adversary: a hostile peer for Parley's adversarial tests. It speaks (or
// mangles) the real wire protocol against a parleyd on loopback or in the LAN lab.
// Every mode is bounded in count and time. Not installed; used by Tests/system.
//
// One mode a function, grouped by what it attacks (Modes/); what they share (the
// connection, the handshake, sealing and reading records) is in Conn.swift and
// HostilePeer.swift.
import Foundation

let usage = """
    usage: parley-adversary MODE HOST:PORT [N]
      random-bytes T N      send N random bytes, report whether the daemon closed
      slowloris T N SECS    open N connections, send half a frame, hold SECS
      frame-silence T SECS  announce a 65535-byte frame, send nothing, report close time
      flood T N             N connection attempts (connect, close), report refused/accepted
      wrong-noise-key T     valid signature, but the card names another Noise key
      forged-card T         card claiming another identity (signature does not verify)
      replay T              valid session, then replay a transport message
      reorder T             valid session, then send message 2 before message 1
      honest T NAME         complete a real handshake as NAME, print OK
      chat-flood T COUNT SIZE  as a new peer, stream COUNT chats of SIZE bytes (at most 65536),
                            reading the answers as they come; print "acked A refused R
                            reasons X,Y" once every chat is answered (or 120 s passed)
      identities T N SOURCES [HOLD]  N connections, each a fresh identity completing the handshake,
                            from 127.0.1.1 ... 127.0.1.SOURCES in turn (SOURCES 0: from the
                            usual address), or from the addresses of SOURCES in turn when it
                            is a comma-separated list (the lab host's own IPv4/IPv6 addresses);
                            all are held HOLD seconds (default 1) after the last; print
                            "connected C failed F" once all were tried, then "established E
                            refused R failed F" (E: still open after HOLD)
      ping-flood T SECS     as a new peer with a 4 KiB receive buffer that never reads, send
                            frames of ~5,000 pings each for SECS seconds; print the MiB the
                            victim took and whether it closed the session
      room-flood T ROOMS OPS  as a new (pinned) peer, send signed creates of ROOMS rooms
                            naming the target as member, then OPS add/remove changes in
                            the first room; ping; print "alive" or "closed"
      room-member T SEED NAME ACTION [ROOM]
                            as a room member with a fixed identity (SEED: 64 hex digits),
                            take the room operations the target sends, then ACTION:
                              hello   nothing more (the target pins the card)
                              join    accept every invitation; print "joined ROOMID"
                              takeover  after its removal from ROOM: back-dated operations
                                      (remove the creator, promote itself, add a key of
                                      its own, join as that key) and a room message
                              backdate  remove every other member with parents = the root
                              remove-behind ROOM FINGERPRINT  remove that member with
                                      parents = the operation that added it (issue 29 H2:
                                      a demoted admin signing from before the member joined)
                              squat   a create whose nonce is ROOM's id, naming the target
                              junk N  N operations in ROOM with random parents
                              reverse N  N valid adds in a chain, sent children first
                              early-chat ALICE  a room message to the target before its
                                      join reached it (print "held" if not acknowledged),
                                      then the join to ALICE (HOST:PORT) only; print
                                      "acked-after-join" once the target acknowledges
                              sync-say ROOM BODY [SEQ]  (room sync, bit 3) a room message
                                      of its own, validly signed; print "message-acked K"
                              sync-forge ROOM  one message in the creator's name it did not
                                      sign, one of its own altered after signing, one valid;
                                      print "valid-acked K" and "forged-acked K"
                              sync-flood ROOM N  N forged messages, then a ping; print
                                      "closed" or "alive"
                              sync-equivocate ROOM  two different validly signed messages
                                      with one sequence; print "message-acked K"
                              card-attacks ROOM VICTIM NAME  (room cards, bit 4) a forged
                                      card for VICTIM's key (64 hex digits), a stranger's
                                      valid card, and a puppet key of its own added and
                                      joined with a card named NAME; then a ping; print
                                      "puppet HEX", "ops-acked K", "alive" or "closed"
                              sync-have ROOM  an empty summary of ROOM; print "pushed N" (the
                                      signed messages the target sent it; kept in
                                      $PARLEY_ADVERSARY_STATE.signed)
                              sync-relay ROOM  pass on, unchanged, the messages sync-have
                                      kept; print "relayed N", "relayed-acked K"
                            print what it sent, then "acked K" (operations acknowledged)
      forge-address T VICTIM ADDR  as a new peer announcing address gossip, send a signed
                            address record naming VICTIM (identity, 64 hex digits) at ADDR
                            (HOST:PORT) but signed with its own key; then a ping; print
                            "closed" if the target ended the session, else "alive"
      sign-address ADDR KEYFILE MS  no connection: print (hex) an address record of ADDR
                            (HOST:PORT) as the identity in KEYFILE (an identity.key) signs it,
                            dated MS (Unix ms; a test plants a stale one in a relay's store)
      dial-back T PORT N    as a new peer announcing address gossip, ask N times to be dialled
                            back at PORT (of the adversary's own host: the request has no host);
                            print the outcomes in order ("connected", "failed", "refused")
      tags-probe T VICTIM   as a new peer announcing address gossip, send a chat, then contact
                            tags naming VICTIM (identity, 64 hex digits), then a ping; print
                            "record" if an address record about VICTIM came before the pong,
                            else "nothing"
      old-peer T SECS       a peer that predates conversation records (no features in its
                            handshake): send a chat, then for SECS seconds acknowledge
                            every chat and print "chat BODY" for each, and "record 0xNN"
                            for any other record type from 0x09 up
      forge-action T MSGID [ROOMID]  as a new (pinned) peer announcing conversation records:
                            send a chat of its own, then an edit, a delete and a reaction
                            of MSGID (someone else's message), then an edit of its own
                            chat; with ROOMID also a room edit, delete and reaction of
                            MSGID in that room (of which it is not a member); ping; print
                            "acked N" (acks for the records) and "alive"
      file T ATTACK         as a new (pinned) peer announcing files, offer a 3-chunk file
                            and serve the target's fileWants (accept it within 60 s):
                              honest      the real thing
                              traversal   named "../../etc/passwd"
                              control     a name with escape, newline, bidi controls and
                                          a Windows device name ("CON.txt" after them)
                              huge        an offer of 2^63 bytes (answered at once)
                              corrupt-once  chunk 1 wrong the first time, right when re-fetched
                              corrupt     chunk 1 wrong every time
                              bigger      chunk 0 longer than the chunk size
                              lying-hash  every chunk matches its hash, the offer's list hash is wrong
                              old-format  the offer's file hash is BLAKE2b of the whole file (an older Parley)
                              garbage-thumbnail  an "image/jpeg" offer whose thumbnail is 32 KiB
                                          of random bytes (neither JPEG nor PNG)
                            print "offered ID", "want FROM" for each want, then "end OUTCOME
                            TEXT" or "closed"
      offer-flood T COUNT   as a new (pinned) peer announcing files, stream COUNT offers of
                            2^63 bytes (refused at once), reading the answers; print "ended E"
                            (fileEnd answers), then send a chat and print "chat acked" or
                            "chat lost"
    """

let modes: [String: (ModeArguments) -> Void] = [
    "random-bytes": runRandomBytes,
    "slowloris": runSlowloris,
    "frame-silence": runFrameSilence,
    "flood": runConnectionFlood,
    "wrong-noise-key": runWrongNoiseKey,
    "forged-card": runForgedCard,
    "replay": { runReplayOrReorder($0, replay: true) },
    "reorder": { runReplayOrReorder($0, replay: false) },
    "honest": runHonest,
    "chat-flood": runChatFlood,
    "identities": runIdentities,
    "ping-flood": runPingFlood,
    "room-flood": runRoomFlood,
    "room-member": runRoomMember,
    "old-peer": runOldPeer,
    "forge-action": runForgeAction,
    "file": runFileAttack,
    "offer-flood": runOfferFlood,
    "dial-back": runDialBack,
    "tags-probe": runTagsProbe,
    "forge-address": runForgeAddress,
    "sign-address": runSignAddress
]

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else {
    print(usage)
    exit(2)
}
guard let run = modes[arguments[0]] else { fail("unknown mode \(arguments[0])") }
let (host, port) = parseTarget(arguments[1])
run(ModeArguments(host: host, port: port, all: arguments))
