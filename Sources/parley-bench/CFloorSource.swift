/// The C floor program of rows 3i and 4i (`CFloorBench`), compiled by the bench with the
/// system's cc against the same SQLite and libsodium parleyd links. Kept here, as source
/// the bench writes out, so that an installed `parley-bench` carries it.
enum CFloorSource {
    static let text = #"""
        /* parley-bench's C floor (rows 3i and 4i): the durable work of one chat message on both
         * sides, with the same SQLite and libsodium as parleyd and nothing else. Sender A: parse a
         * messages.send request line by hand, store the message (lean schema: integer peer ids,
         * 16-byte BLOB ids, one unique index), commit with synchronous=FULL, answer with one JSON
         * line, seal the record (ChaCha20-Poly1305 IETF). Receiver B: open it, store it
         * de-duplicated with its journal row, commit FULL, write the message.received line, seal
         * an ack. A: open the ack, mark delivered with its journal row (commit relaxed, as parleyd's
         * marks), write the message.delivered line. One transaction per side per batch of BATCH
         * messages (1: one in flight). Usage: floor DIR COUNT BATCH. Prints the messages done. */
        #include <sodium.h>
        #include <sqlite3.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <stddef.h>
        #include <stdint.h>

        #define BODY_MAX 4096
        #define OUT_MAX (4 << 20)
        /* The largest batch: OUT_MAX holds its three lines per message (under 1 KiB each). */
        #define BATCH_MAX 1024

        static void die(sqlite3 *db, const char *what) {
            fprintf(stderr, "floor: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
            exit(1);
        }

        static void exec(sqlite3 *db, const char *sql) {
            char *err = NULL;
            if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
                fprintf(stderr, "floor: %s: %s\n", sql, err);
                exit(1);
            }
        }

        static sqlite3_stmt *prep(sqlite3 *db, const char *sql) {
            sqlite3_stmt *s;
            if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) die(db, sql);
            return s;
        }

        static sqlite3 *open_store(const char *dir, const char *name) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, name);
            sqlite3 *db;
            if (sqlite3_open(path, &db) != SQLITE_OK) die(db, path);
            exec(db,
                 "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA locking_mode = EXCLUSIVE;"
                 "CREATE TABLE IF NOT EXISTS peer (id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE);"
                 "CREATE TABLE IF NOT EXISTS message (row INTEGER PRIMARY KEY, peer INTEGER NOT NULL, id BLOB NOT NULL,"
                 " seq INTEGER NOT NULL, created INTEGER NOT NULL, state INTEGER NOT NULL, at INTEGER, body BLOB NOT NULL);"
                 "CREATE UNIQUE INDEX IF NOT EXISTS message_id ON message (id, peer);"
                 "CREATE TABLE IF NOT EXISTS event (id INTEGER PRIMARY KEY, message_row INTEGER NOT NULL, kind INTEGER NOT NULL);"
                 "INSERT OR IGNORE INTO peer (id, key) VALUES (1, randomblob(32));");
            return db;
        }

        static size_t put(char *out, size_t at, const char *s) {
            size_t n = strlen(s);
            memcpy(out + at, s, n);
            return at + n;
        }

        static size_t put_hex(char *out, size_t at, const unsigned char *b, size_t n) {
            sodium_bin2hex(out + at, 2 * n + 1, b, n);
            return at + 2 * n;
        }

        static size_t put_int(char *out, size_t at, long long v) { return at + (size_t)sprintf(out + at, "%lld", v); }

        /* A JSON string's content after `"key":"` in line; no escapes in the bench's bodies, but
         * a backslash is refused rather than misread. */
        static int field(const char *line, const char *key, const char **start, size_t *len) {
            const char *p = strstr(line, key);
            if (!p) return 0;
            p += strlen(key);
            const char *e = p;
            while (*e && *e != '"') {
                if (*e == '\\') return 0;
                e++;
            }
            if (*e != '"') return 0;
            *start = p;
            *len = (size_t)(e - p);
            return 1;
        }

        struct rec {
            unsigned char id[16];
            long long seq, created;
            size_t body_len;
            char body[BODY_MAX];
        };

        int main(int argc, char **argv) {
            if (argc != 4) {
                fprintf(stderr, "usage: floor DIR COUNT BATCH\n");
                return 2;
            }
            int count = atoi(argv[2]), batch = atoi(argv[3]);
            if (count <= 0 || batch <= 0 || sodium_init() < 0) return 2;
            sqlite3 *a = open_store(argv[1], "a.sqlite"), *b = open_store(argv[1], "b.sqlite");
            sqlite3_stmt *a_insert = prep(a, "INSERT INTO message (peer, id, seq, created, state, body) VALUES (1, ?, ?, ?, 0, ?)");
            sqlite3_stmt *a_mark = prep(a, "UPDATE message SET state = 1, at = ? WHERE id = ? AND peer = 1 AND state = 0 RETURNING row");
            sqlite3_stmt *a_event = prep(a, "INSERT INTO event (message_row, kind) VALUES (?, 2)");
            sqlite3_stmt *b_insert = prep(b, "INSERT INTO message (peer, id, seq, created, state, at, body) VALUES (1, ?, ?, ?, 2, ?, ?)"
                                             " ON CONFLICT (id, peer) DO NOTHING");
            sqlite3_stmt *b_event = prep(b, "INSERT INTO event (message_row, kind) VALUES (?, 1)");
            unsigned char key[crypto_aead_chacha20poly1305_ietf_KEYBYTES];
            crypto_aead_chacha20poly1305_ietf_keygen(key);
            unsigned char nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES] = {0};
            uint64_t counter = 0;
            static struct rec recs[4096];
            static unsigned char wire[4096][sizeof(struct rec) + 16];
            static unsigned long long wire_len[4096];
            static char out[OUT_MAX];
            char request[512];
            long long seq = 0;
            if (batch > BATCH_MAX) batch = BATCH_MAX;
            int done = 0;
            while (done < count) {
                int n = count - done < batch ? count - done : batch;
                size_t o = 0;
                /* A: requests in, stored, answered. */
                exec(a, "PRAGMA synchronous = FULL; BEGIN IMMEDIATE");
                for (int k = 0; k < n; k++) {
                    snprintf(request, sizeof request,
                             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"messages.send\",\"params\":{\"to\":\"bob\","
                             "\"body\":\"floor-%08d-0123456789abcdef0123456789abcdef0123456789abcdef01\"}}",
                             done + k, done + k);
                    const char *body, *to;
                    size_t body_len, to_len;
                    if (!field(request, "\"body\":\"", &body, &body_len) || !field(request, "\"to\":\"", &to, &to_len)) return 3;
                    struct rec *r = &recs[k];
                    randombytes_buf(r->id, sizeof r->id);
                    r->seq = ++seq;
                    r->created = 1700000000000LL + seq;
                    r->body_len = body_len;
                    memcpy(r->body, body, body_len);
                    sqlite3_reset(a_insert);
                    sqlite3_bind_blob(a_insert, 1, r->id, 16, SQLITE_STATIC);
                    sqlite3_bind_int64(a_insert, 2, r->seq);
                    sqlite3_bind_int64(a_insert, 3, r->created);
                    sqlite3_bind_blob(a_insert, 4, r->body, (int)body_len, SQLITE_STATIC);
                    if (sqlite3_step(a_insert) != SQLITE_DONE) die(a, "insert");
                    o = put(out, o, "{\"jsonrpc\":\"2.0\",\"id\":");
                    o = put_int(out, o, done + k);
                    o = put(out, o, ",\"result\":{\"message\":{\"id\":\"");
                    o = put_hex(out, o, r->id, 16);
                    o = put(out, o, "\",\"sequence\":");
                    o = put_int(out, o, r->seq);
                    o = put(out, o, ",\"state\":\"queued\"}}}\n");
                }
                exec(a, "COMMIT");
                for (int k = 0; k < n; k++) {
                    memcpy(nonce, &counter, sizeof counter);
                    counter++;
                    crypto_aead_chacha20poly1305_ietf_encrypt(wire[k], &wire_len[k], (const unsigned char *)&recs[k],
                                                              offsetof(struct rec, body) + recs[k].body_len, NULL, 0, NULL,
                                                              nonce, key);
                }
                /* B: records opened, stored with their journal rows, acknowledged, notified. */
                static struct rec in[4096];
                exec(b, "BEGIN IMMEDIATE");
                for (int k = 0; k < n; k++) {
                    unsigned long long len;
                    memcpy(nonce, &(uint64_t){counter - (uint64_t)n + (uint64_t)k}, sizeof counter);
                    if (crypto_aead_chacha20poly1305_ietf_decrypt((unsigned char *)&in[k], &len, NULL, wire[k], wire_len[k], NULL,
                                                                  0, nonce, key) != 0)
                        return 4;
                    sqlite3_reset(b_insert);
                    sqlite3_bind_blob(b_insert, 1, in[k].id, 16, SQLITE_STATIC);
                    sqlite3_bind_int64(b_insert, 2, in[k].seq);
                    sqlite3_bind_int64(b_insert, 3, in[k].created);
                    sqlite3_bind_int64(b_insert, 4, in[k].created + 1);
                    sqlite3_bind_blob(b_insert, 5, in[k].body, (int)in[k].body_len, SQLITE_STATIC);
                    if (sqlite3_step(b_insert) != SQLITE_DONE) die(b, "insert");
                    if (sqlite3_changes(b) == 1) {
                        sqlite3_reset(b_event);
                        sqlite3_bind_int64(b_event, 1, sqlite3_last_insert_rowid(b));
                        if (sqlite3_step(b_event) != SQLITE_DONE) die(b, "event");
                    }
                    o = put(out, o, "{\"jsonrpc\":\"2.0\",\"method\":\"message.received\",\"params\":{\"message\":{\"id\":\"");
                    o = put_hex(out, o, in[k].id, 16);
                    o = put(out, o, "\",\"from\":\"bob\",\"body\":\"");
                    memcpy(out + o, in[k].body, in[k].body_len);
                    o += in[k].body_len;
                    o = put(out, o, "\",\"sequence\":");
                    o = put_int(out, o, in[k].seq);
                    o = put(out, o, "},\"eventId\":");
                    o = put_int(out, o, done + k);
                    o = put(out, o, "}}\n");
                }
                exec(b, "COMMIT");
                unsigned char ack[4096 * 16 + 16], ack_plain[4096 * 16];
                unsigned long long ack_len, plain_len;
                for (int k = 0; k < n; k++) memcpy(ack_plain + 16 * k, in[k].id, 16);
                memcpy(nonce, &counter, sizeof counter);
                crypto_aead_chacha20poly1305_ietf_encrypt(ack, &ack_len, ack_plain, 16ULL * (unsigned long long)n, NULL, 0,
                                                          NULL, nonce, key);
                if (crypto_aead_chacha20poly1305_ietf_decrypt(ack_plain, &plain_len, NULL, ack, ack_len, NULL, 0, nonce, key) != 0)
                    return 4;
                counter++;
                /* A: delivery marks with their journal rows (relaxed commit), notified. */
                exec(a, "PRAGMA synchronous = NORMAL; BEGIN IMMEDIATE");
                for (int k = 0; k < n; k++) {
                    sqlite3_reset(a_mark);
                    sqlite3_bind_int64(a_mark, 1, 1700000000000LL + done + k);
                    sqlite3_bind_blob(a_mark, 2, ack_plain + 16 * k, 16, SQLITE_STATIC);
                    long long row = 0;
                    int rc;
                    while ((rc = sqlite3_step(a_mark)) == SQLITE_ROW) row = sqlite3_column_int64(a_mark, 0);
                    if (rc != SQLITE_DONE) die(a, "mark");
                    if (row) {
                        sqlite3_reset(a_event);
                        sqlite3_bind_int64(a_event, 1, row);
                        if (sqlite3_step(a_event) != SQLITE_DONE) die(a, "event");
                    }
                    o = put(out, o, "{\"jsonrpc\":\"2.0\",\"method\":\"message.delivered\",\"params\":{\"id\":\"");
                    o = put_hex(out, o, ack_plain + 16 * k, 16);
                    o = put(out, o, "\",\"to\":\"bob\",\"eventId\":");
                    o = put_int(out, o, done + k);
                    o = put(out, o, "}}\n");
                }
                exec(a, "COMMIT");
                if (o > OUT_MAX) return 5;
                done += n;
            }
            printf("%d\n", done);
            sqlite3_close(a);
            sqlite3_close(b);
            return 0;
        }
        """#
}
