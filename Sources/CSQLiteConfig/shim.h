#include <sqlite3.h>

/// `sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0)`: `sqlite3_config` is variadic, which
/// Swift cannot call. With memory statistics on (SQLite's default), every allocation
/// SQLite makes takes a global mutex to count itself, and Debian's SQLite is built
/// without the lookaside allocator, so that is every cursor, record and statement
/// allocation: ~16,000 instructions per message one in flight (callgrind,
/// docs/BENCHMARKS.md, issue 32 part 6). Parley reads none of those statistics and sets
/// no soft heap limit (which needs them). Takes effect only before SQLite initializes
/// (the first connection opened in the process); later it returns SQLITE_MISUSE and
/// changes nothing.
static inline int parley_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
