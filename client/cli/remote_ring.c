/* remote_ring.c — a version of a cluster fetched from the server and built into a ring: a given
 * version, the active one (GET .../ring) or the latest (GET .../versions?limit=1); and the two
 * sides of plan and simulate, each a file or such a version. */
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "cli.h"

/* The number of the newest version of the cluster, or 0 with *rc set. */
static long long latest_version(const char *cmd, const rk_cli_server *s, int *rc)
{
    rk_cli_body list = {0};
    *rc = rk_cli_call(cmd, s, NULL, &list, "GET", "/versions?limit=1");
    if (*rc != RK_EXIT_OK)
        return 0;
    json_t *doc = json_loadb(list.data, list.len, 0, NULL);
    free(list.data);
    json_t *first = json_array_get(json_object_get(doc, "versions"), 0);
    long long v = json_integer_value(json_object_get(first, "version"));
    int empty = doc && !first;
    json_decref(doc);
    if (v <= 0)
        *rc = rk_cli_fail(cmd, empty ? RK_EXIT_USAGE : RK_EXIT_FAIL, "cluster %s: %s", s->cluster,
                          empty ? "it has no versions" : "unexpected answer to the version list");
    return v;
}

rk_ring *rk_cli_fetch_ring(const char *cmd, const rk_cli_server *s, const char *version,
                           rk_cli_default_version dflt, int *rc)
{
    rk_cli_body doc = {0};
    long long latest = !version && dflt == RK_CLI_LATEST ? latest_version(cmd, s, rc) : 1;
    if (latest <= 0)
        return NULL;
    if (version)
        *rc = rk_cli_call(cmd, s, NULL, &doc, "GET", "/versions/%s", version);
    else if (dflt == RK_CLI_LATEST)
        *rc = rk_cli_call(cmd, s, NULL, &doc, "GET", "/versions/%lld", latest);
    else
        *rc = rk_cli_call(cmd, s, NULL, &doc, "GET", "/ring");
    if (*rc != RK_EXIT_OK)
        return NULL;
    rk_ring *r = rk_cli_ring_from_text(cmd, "the server's version document", doc.data, doc.len);
    free(doc.data);
    *rc = r ? RK_EXIT_OK : RK_EXIT_FAIL;
    return r;
}

int rk_cli_load_sides(const char *cmd, const char *const file[2], const char *const version[2],
                      rk_cli_server *s, rk_ring *r[2], char label[2][64])
{
    static const rk_cli_default_version dflt[2] = {RK_CLI_ACTIVE, RK_CLI_LATEST};
    static const char *const dflt_name[2] = {"active", "latest"};
    int rc = file[0] && file[1] ? RK_EXIT_OK : rk_cli_server_check(cmd, s);
    for (int i = 0; i < 2 && rc == RK_EXIT_OK; i++) {
        if (file[i])
            snprintf(label[i], 64, "%s", file[i]);
        else if (version[i])
            snprintf(label[i], 64, "%s v%s", s->cluster, version[i]);
        else
            snprintf(label[i], 64, "%s (%s)", s->cluster, dflt_name[i]);
        r[i] = file[i] ? rk_cli_load_ring(cmd, file[i])
                       : rk_cli_fetch_ring(cmd, s, version[i], dflt[i], &rc);
        if (file[i] && !r[i])
            rc = RK_EXIT_USAGE;
    }
    return rc;
}
