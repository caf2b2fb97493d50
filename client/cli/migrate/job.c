/* job.c — `ringkeeper migrate`'s view of the job's routes (docs/API.md): one JSON call,
 * the job, the versions' rings, a plan step's arcs, and keys as report text. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migrate.h"

int mig_call(const char *cmd, const rk_cli_server *s, const char *method, const char *route,
             json_t *body, json_t **out, const char *quiet, int *had)
{
    rk_cli_body in = {0}, got = {0};
    int dummy = 0;
    if (out)
        *out = NULL;
    in.data = body ? rk_json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (body && !in.data)
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "out of memory");
    in.len = in.data ? strlen(in.data) : 0;
    int rc = rk_cli_call_except(cmd, s, quiet ? quiet : "", had ? had : &dummy,
                                in.data ? &in : NULL, &got, method, "%s", route);
    free(in.data);
    if (rc == RK_EXIT_OK && out) {
        *out = json_loadb(got.data, got.len, 0, NULL);
        if (!*out)
            rc = rk_cli_fail(cmd, RK_EXIT_FAIL, "%s %s: the answer is not JSON", method, route);
    }
    free(got.data);
    return rc;
}

int mig_get_job(const char *cmd, const rk_cli_server *s, json_t **job)
{
    int none = 0;
    int rc = mig_call(cmd, s, "GET", "/migration", NULL, job, "no_migration", &none);
    return none ? RK_EXIT_OK : rc;
}

const char *mig_str(const json_t *o, const char *name)
{
    const char *v = json_string_value(json_object_get(o, name));
    return v ? v : "";
}

int64_t mig_int(const json_t *o, const char *name)
{
    return (int64_t)json_integer_value(json_object_get(o, name));
}

int mig_unfinished(const json_t *job)
{
    const char *state = mig_str(job, "state");
    return strcmp(state, "copying") == 0 || strcmp(state, "paused") == 0 ||
           strcmp(state, "verifying") == 0;
}

void mig_encode_key(const char *key, size_t len, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (size_t i = 0; i < len && i < RKM_LIST_KEY_MAX; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c < 0x21 || c > 0x7e || c == '%') {
            out[n++] = '%';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        } else {
            out[n++] = (char)c;
        }
    }
    out[n] = '\0';
}

rk_ring *mig_version_ring(const char *cmd, const rk_cli_server *s, int64_t v, int *rc)
{
    char version[32];
    snprintf(version, sizeof version, "%lld", (long long)v);
    return rk_cli_fetch_ring(cmd, s, version, RK_CLI_ACTIVE, rc);
}

/* A plan's 16 hex digits into *out; 0 on success. */
static int hex_hash(const char *s, uint64_t *out)
{
    char *end = NULL;
    if (!s || !*s || strlen(s) > 16)
        return -1;
    *out = strtoull(s, &end, 16);
    return *end ? -1 : 0;
}

int mig_step_arcs(const char *cmd, const json_t *plan, int64_t step, rkm_arc **out, size_t *n)
{
    json_t *steps = json_object_get(plan, "steps");
    json_t *arcs = json_object_get(json_array_get(steps, (size_t)(step - 1)), "arcs");
    size_t count = json_array_size(arcs), k = 0;
    *out = NULL;
    *n = 0;
    if (step < 1 || !json_is_array(arcs))
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "the server's plan has no step %lld",
                           (long long)step);
    rkm_arc *a = malloc((2 * count + 1) * sizeof *a); /* a wrapping arc is two */
    if (!a)
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "out of memory");
    for (size_t i = 0; i < count; i++) {
        json_t *arc = json_array_get(arcs, i);
        uint64_t first, last;
        if (hex_hash(mig_str(arc, "first"), &first) || hex_hash(mig_str(arc, "last"), &last)) {
            free(a);
            return rk_cli_fail(cmd, RK_EXIT_FAIL, "the plan's step %lld: arc %zu is not hex",
                               (long long)step, i);
        }
        if (first <= last) {
            a[k++] = (rkm_arc){first, last};
            continue;
        }
        a[k++] = (rkm_arc){first, UINT64_MAX}; /* past the top of the hash space, and on from 0 */
        a[k++] = (rkm_arc){0, last};
    }
    *n = rkm_arcs_normalize(a, k);
    *out = a;
    return RK_EXIT_OK;
}

long mig_node_index(const rk_ring *r, const char *id)
{
    const rk_topology *t = rk_ring_topology(r);
    size_t n = rk_topology_node_count(t);
    for (size_t i = 0; i < n; i++)
        if (strcmp(rk_topology_node(t, (uint32_t)i)->id, id) == 0)
            return (long)i;
    return -1;
}

int64_t mig_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mig_cutover_now(const char *cmd, const rk_cli_server *s, const mig_opts *o, mig_cutover *c)
{
    json_t *doc = NULL; /* the clients' summary names the active and the window's versions */
    int rc = mig_call(cmd, s, "GET", "/clients?limit=1", NULL, &doc, NULL, NULL);
    const json_t *sum = json_object_get(doc, "summary");
    int64_t active = mig_int(sum, "active"), previous = mig_int(sum, "previous");
    json_decref(doc);
    *c = o->before_cutover ? (mig_cutover){"before_cutover", active, strtoll(o->to, NULL, 10)}
                           : (mig_cutover){"window", previous, active};
    return rc;
}

int mig_job_is_for(const json_t *job, const mig_cutover *c)
{
    return strcmp(mig_str(job, "mode"), c->mode) == 0 && mig_int(job, "from") == c->from &&
           mig_int(job, "to") == c->to;
}
