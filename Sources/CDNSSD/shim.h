#include <dns_sd.h>
#include <stdlib.h>
#include <avahi-common/malloc.h>

/*
 * Works around a bug in avahi's dns_sd compat library (fixed upstream in avahi PR #569,
 * "libdns_sd: Use allocator with memory set to zero", 2024; not in Debian 12's 0.8-10):
 * sdref_new() allocates a DNSServiceRef with avahi_new() and never sets the callback
 * fields it does not use. When avahi-daemon goes away, generic_client_callback() calls
 * the first callback field that is non-NULL, so a resolve ref calls its uninitialized
 * `service_browser_callback` field: garbage from the heap, and the process crashes.
 *
 * avahi allocates through a replaceable allocator. Ours zeroes every allocation, which
 * makes those fields NULL exactly as the upstream fix does. Install it once, before any
 * DNSService* call; the structure must outlive the process (avahi keeps the pointer).
 */
static void *parley_avahi_zeroed_malloc(size_t size) {
    return calloc(1, size);
}

static inline void parley_avahi_use_zeroing_allocator(void) {
    static const AvahiAllocator allocator = {
        .malloc = parley_avahi_zeroed_malloc,
        .free = free,
        .realloc = realloc,
        .calloc = calloc,
    };
    avahi_set_allocator(&allocator);
}
