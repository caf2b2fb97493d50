/* client_example.c — an application's use of libringkeeper: fetch the ring of one cluster at
 * startup (or run from the last-known-good file), route keys, refresh in the background, and read
 * from the previous owner while data moves after a cut-over.
 *
 * usage: client_example SERVER CLUSTER CACHE_FILE WAIT_SECONDS KEY...
 *   e.g. client_example http://127.0.0.1:7070 cache /var/lib/app/ring.lkg 0 user:1 user:2
 * Prints "KEY<TAB>NODE_ID<TAB>ADDR" per key; with WAIT_SECONDS > 0 it then waits that long for the
 * refresher to accept a newer ring, and prints "KEY<TAB>NODE_ID<TAB>ADDR<TAB>PREVIOUS_ID<TAB>
 * PREVIOUS_ADDR" per key under the new ring. Lines for people start with '#'.
 * Exit codes: 0 ok, 1 no ring (server and cache both failed), 2 usage, 3 no new ring in time.
 *
 * Build: cc client_example.c $(pkg-config --cflags --libs ringkeeper) -o client_example
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ringkeeper.h>

/* What this application was built for: a ring with another hash or vnode factor would send keys to
 * the wrong nodes, so the client refuses it (RK_EEXPECT) and keeps the ring it has. */
#define EXPECT_HASH         "xxh3_64"
#define EXPECT_VNODE_FACTOR 160

static void route(const rk_snapshot *s, const char *key, int dual)
{
    const rk_node *previous = NULL;
    const rk_node *owner = rk_snapshot_owner(s, key, strlen(key), &previous);
    printf("%s\t%s\t%s", key, owner->id, owner->addr);
    /* During a migration, read from `owner` first and fall back to `previous` for data that has
     * not moved yet; write to `owner` only. */
    if (dual)
        printf("\t%s\t%s", previous ? previous->id : "-", previous ? previous->addr : "-");
    printf("\n");
}

static void route_all(rk_client *c, char **keys, int n, int dual)
{
    rk_snapshot *s = rk_client_acquire(c); /* new reference: lookups never wait for a refresh */
    if (!s)
        return;
    printf("# ring v%" PRId64 " (fingerprint %s)%s\n", rk_snapshot_version(s),
           rk_ring_fingerprint_hex(rk_snapshot_ring(s)),
           rk_snapshot_previous(s) ? ", previous ring kept for dual reads" : "");
    for (int i = 0; i < n; i++)
        route(s, keys[i], dual);
    rk_snapshot_release(s);
    fflush(stdout); /* a log reader sees the routes at once */
}

/* Waits up to `seconds` for the background refresher to put a version newer than `version` in
 * service. */
static int wait_for_change(rk_client *c, int64_t version, unsigned seconds)
{
    struct timespec tick = {0, 100 * 1000000L};
    for (unsigned i = 0; i < seconds * 10; i++) {
        rk_client_status st;
        rk_client_status_get(c, &st);
        if (st.version > version)
            return 1;
        nanosleep(&tick, NULL);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: client_example SERVER CLUSTER CACHE_FILE WAIT_SECONDS KEY...\n");
        return 2;
    }
    rk_client_config cfg = {.server = argv[1],
                            .cluster = argv[2],
                            .cache_file = argv[3],
                            .expect_hash = EXPECT_HASH,
                            .expect_vnode_factor = EXPECT_VNODE_FACTOR};
    unsigned wait_s = (unsigned)strtoul(argv[4], NULL, 10);
    rk_error err = {0};
    rk_client_status st;
    int rc = 0;

    rk_client *c = rk_client_new(&cfg, &err);
    if (!c) {
        fprintf(stderr, "client_example: %s (%s)\n", err.message, rk_errname(err.code));
        return 2;
    }
    /* At startup: the server's ring, or else the last-known-good file. */
    if (rk_client_fetch(c, &err) != RK_OK) {
        fprintf(stderr, "client_example: no ring: %s (%s)\n", err.message, rk_errname(err.code));
        rk_client_free(c);
        return 1;
    }
    rk_client_status_get(c, &st);
    /* With RK_OK, err may hold a note: "running from the last-known-good file ... because ...",
     * or (RK_ECACHE) a ring accepted but not saved. */
    if (st.from_cache || err.code == RK_ECACHE)
        printf("# %s\n", err.message);
    route_all(c, argv + 5, argc - 5, 0);

    /* Long polls of 30 s; a refused ring or an unreachable server leaves the current ring in
     * service and is counted in rk_client_status. */
    if (rk_client_start_refresher(c, 30, 1000, &err) != RK_OK) {
        fprintf(stderr, "client_example: refresher: %s\n", err.message);
        rk_client_free(c);
        return 1;
    }
    if (wait_s > 0) {
        if (wait_for_change(c, st.version, wait_s)) {
            route_all(c, argv + 5, argc - 5, 1);
            /* An application calls this once the data has moved; here the demonstration ends. */
            rk_client_drop_previous(c);
        } else {
            printf("# no new ring within %u s\n", wait_s);
            rc = 3;
        }
    }
    rk_client_stop_refresher(c); /* returns promptly, also during a long poll */
    rk_client_status_get(c, &st);
    printf("# v%" PRId64 " in service; accepted %" PRIu64 ", refused %" PRIu64 ", errors %" PRIu64
           "\n",
           st.version, st.accepted, st.refused, st.errors);
    rk_client_free(c);
    return rc;
}
