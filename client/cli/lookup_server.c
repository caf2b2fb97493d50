/* lookup_server.c — the ring `ringkeeper lookup --server` routes with: the active ring fetched and
 * verified by the client library, or its last-known-good file when the server cannot give one. */
#include <inttypes.h>

#include "cli.h"

/* Client library failures to exit codes and the words that start their message; anything not
 * listed is a failure (1). */
static const struct {
    int status;
    int exit_code;
    const char *prefix;
} client_exits[] = {
    {RK_EUNREACHABLE, RK_EXIT_UNREACHABLE, "server unreachable: "},
    {RK_EEXPECT, RK_EXIT_REFUSED, "ring refused: "},
    {RK_ECLUSTER, RK_EXIT_REFUSED, "ring refused: "},
    {RK_EFINGERPRINT, RK_EXIT_REFUSED, "ring refused: "},
    {RK_EOLDVERSION, RK_EXIT_REFUSED, "ring refused: "},
    {RK_EUNKNOWNHASH, RK_EXIT_REFUSED, "ring refused: "},
    {RK_EDOCUMENT, RK_EXIT_REFUSED, "ring refused: "},
    {RK_EINVAL, RK_EXIT_USAGE, ""},
};

static size_t exit_index(int status)
{
    size_t i = 0;
    while (i < sizeof client_exits / sizeof client_exits[0] && client_exits[i].status != status)
        i++;
    return i;
}

int rk_cli_client_failed(const char *cmd, rk_client *c, const rk_error *err)
{
    long status = 0;
    size_t i = exit_index(err->code);
    int known = i < sizeof client_exits / sizeof client_exits[0];
    int rc = known ? client_exits[i].exit_code : RK_EXIT_FAIL;
    /* RK_EHTTP's message starts "HTTP <status>": a 4xx is bad input, as for the other commands */
    if (err->code == RK_EHTTP && sscanf(err->message, "HTTP %ld", &status) == 1)
        rc = rk_cli_status_exit(status);
    rk_cli_fail(cmd, rc, "%s%s", known ? client_exits[i].prefix : "", err->message);
    rk_client_status st = {0};
    if (c)
        rk_client_status_get(c, &st);
    if (st.last_error == RK_ECACHE)
        rk_cli_fail(cmd, rc, "%s", st.last_message);
    return rc;
}

/* Whether the client discarded a ring its own store never issued (a poisoned --cache file): the
 * note saying so is printed, although the lookup succeeds. */
static int discarded(rk_client *c)
{
    rk_client_status st;
    rk_client_status_get(c, &st);
    return st.discarded > 0;
}

/* Says on stderr that the ring is the last-known-good one, and why. */
static void cache_note(rk_client *c, const char *cache)
{
    rk_client_status st;
    rk_client_status_get(c, &st);
    if (!st.from_cache)
        return;
    if (st.last_error == RK_EUNREACHABLE)
        rk_cli_fail("lookup", RK_EXIT_OK,
                    "server unreachable: using the last-known-good ring v%" PRId64 " from %s",
                    st.version, cache);
    else
        rk_cli_fail("lookup", RK_EXIT_OK, "%s", st.last_message);
    if (st.last_error == RK_EOLDVERSION)
        rk_cli_fail("lookup", RK_EXIT_OK,
                    "routed with v%" PRId64 " from %s; if that file is bad (damaged, or saved "
                    "from a hostile server), run once with --reset-cache: it takes the server's "
                    "active ring and rewrites the file",
                    st.version, cache);
}

int rk_cli_lookup_snapshot(const rk_cli_lookup_server *ls, rk_snapshot **out)
{
    rk_client_config cfg = {.server = ls->server.url,
                            .cluster = ls->server.cluster,
                            .expect_hash = ls->expect_hash,
                            .expect_scheme = ls->expect_scheme,
                            .expect_vnode_factor = (uint32_t)ls->expect_vnode_factor,
                            .token = ls->server.token,
                            .cache_file = ls->cache_file,
                            .reset_cache = ls->reset_cache,
                            .ca_file = ls->server.ca_file,
                            .timeout_ms = (long)ls->server.timeout * 1000,
                            /* a one-shot lookup is no member of the fleet unless asked */
                            .client_id = ls->client_id ? ls->client_id : ""};
    rk_error err = {0};
    rk_client *c = rk_client_new(&cfg, &err);
    if (!c)
        return rk_cli_client_failed("lookup", NULL, &err);
    int rc =
        rk_client_fetch(c, &err) == RK_OK ? RK_EXIT_OK : rk_cli_client_failed("lookup", c, &err);
    /* the ring is good but the fallback the user asked for is not there: refuse, route nothing */
    if (rc == RK_EXIT_OK && err.code == RK_ECACHE)
        rc = rk_cli_fail("lookup", RK_EXIT_USAGE, "--cache: %s", err.message);
    else if (rc == RK_EXIT_OK && (err.code != RK_OK || discarded(c))) /* routed, with a note */
        rk_cli_fail("lookup", RK_EXIT_OK, "%s", err.message);
    *out = rc == RK_EXIT_OK ? rk_client_acquire(c) : NULL;
    if (rc == RK_EXIT_OK && !*out)
        rc = rk_cli_fail("lookup", RK_EXIT_FAIL, "no ring was accepted");
    if (rc == RK_EXIT_OK)
        cache_note(c, ls->cache_file);
    rk_client_free(c);
    return rc;
}
