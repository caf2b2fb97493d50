/* api_plan.c — GET /plan: the plan between two versions of a cluster, from a cache of built rings.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_internal.h"

#define TRIM_ROWS 10000 /* a plan of more rows leaves enough freed heap to hand back */
#define CT_SVG    "image/svg+xml; charset=utf-8"
#define PLAN_RETRY_AFTER_S                                                                         \
    2 /* a plan takes up to about a second at the caps: a retry then may pass */

/* How a plan is rendered: ?format= or Accept. */
typedef enum { PLAN_JSON, PLAN_TEXT, PLAN_SVG, PLAN_PICTURE } plan_form;

/* What the query asks of the rendering. */
typedef struct plan_ask {
    plan_form form;
    int arcs;     /* JSON: list the arcs */
    int64_t bins; /* picture: bins per circle */
} plan_ask;

/* A decimal number in (0, 1]: digits and a point (strtod's exponents allowed), no sign, no
 * spaces, no "nan". */
static int parse_fraction(const char *s, double *out)
{
    char *end = NULL;
    if ((s[0] < '0' || s[0] > '9') && s[0] != '.')
        return -1;
    *out = strtod(s, &end);
    return *end == '\0' && *out > 0 && *out <= 1 ? 0 : -1;
}

/* Builds the ring of version v from its topology `t` and caches it. */
static rkd_entry *ring_put(rkd_call *c, int64_t v, rk_topology *t, int *rc, rk_error *err)
{
    rk_ring *ring = rk_ring_build(t, err);
    rkd_entry *e = ring ? rkd_cache_put(c->app->rings, c->cluster, v, 0, ring, rk_ring_memory(ring),
                                        rkd_cache_gen(c->app->rings))
                        : NULL;
    *rc = e ? RK_OK : ring ? RK_ENOMEM : err->code;
    return e;
}

rkd_entry *rkd_ring_entry(rkd_call *c, int64_t v, int *rc, rk_error *err)
{
    rkd_entry *e = rkd_cache_get(c->app->rings, c->cluster, v);
    rkd_store_version *rec = NULL;
    *rc = RK_OK;
    if (e)
        return e;
    *rc = rkd_store_get(c->app->store, c->cluster, v, &rec, err);
    e = *rc == RK_OK ? ring_put(c, v, rec->topology, rc, err) : NULL;
    rkd_store_version_free(rec);
    return e;
}

/* The rings of a plan between two versions, cached or built. When one is not cached yet,
 * rk_plan_check first refuses from the topologies what the plan would surely refuse, so such a
 * refusal builds no ring (two cold 4M-point rings cost 0.8 s to build besides the store reads). */
static int plan_rings(rkd_call *c, const int64_t v[2], const rk_plan_options *opt, rkd_entry *e[2],
                      rk_error *err)
{
    rkd_store_version *rec[2] = {NULL, NULL};
    const rk_topology *t[2];
    int rc = RK_OK;
    if (v[0] == v[1]) { /* nothing moves: nothing to check, and one ring */
        e[0] = rkd_ring_entry(c, v[0], &rc, err);
        e[1] = e[0] ? rkd_ring_entry(c, v[1], &rc, err) : NULL;
        return rc;
    }
    for (int k = 0; k < 2; k++) {
        e[k] = rkd_cache_get(c->app->rings, c->cluster, v[k]);
        if (!e[k] && rc == RK_OK)
            rc = rkd_store_get(c->app->store, c->cluster, v[k], &rec[k], err);
        t[k] = e[k] ? rk_ring_topology(e[k]->value) : rec[k] ? rec[k]->topology : NULL;
    }
    if (rc == RK_OK && (rec[0] || rec[1]))
        rc = rk_plan_check(t[0], t[1], opt, err);
    for (int k = 0; k < 2 && rc == RK_OK; k++)
        e[k] = e[k] ? e[k] : ring_put(c, v[k], rec[k]->topology, &rc, err);
    rkd_store_version_free(rec[0]), rkd_store_version_free(rec[1]);
    return rc;
}

int rkd_plan_between(rkd_call *c, int64_t from, int64_t to, const rk_plan_options *opt,
                     rk_plan **out, rk_error *err)
{
    rkd_entry *ring[2] = {NULL, NULL};
    int rc = plan_rings(c, (int64_t[2]){from, to}, opt, ring, err);
    *out = rc == RK_OK ? rk_plan_new(ring[0]->value, ring[1]->value, opt, err) : NULL;
    rc = rc ? rc : *out ? RK_OK : err->code;
    rkd_cache_release(c->app->rings, ring[1]);
    rkd_cache_release(c->app->rings, ring[0]);
    return rc;
}

/* from and to of a plan: the query's, else the active and the latest versions. 0, or -1 after
 * answering. */
static int plan_versions(rkd_call *c, int64_t *from, int64_t *to)
{
    rk_error err = {0};
    int rc = RK_OK;
    int has_from = rkd_query_int(c, "from", 1, INT64_MAX, from);
    int has_to = has_from < 0 ? -1 : rkd_query_int(c, "to", 1, INT64_MAX, to);
    if (has_to < 0)
        return -1;
    if (!has_from) {
        rkd_entry *e = rkd_active_entry(c->app, c->cluster, &rc, &err);
        *from = e ? ((const rkd_active_doc *)e->value)->version : 0;
        rkd_cache_release(c->app->docs, e);
    }
    if (rc == RK_OK && !has_to) {
        rkd_store_version_list list = {0};
        rc = rkd_store_list(c->app->store, c->cluster, 1, 0, &list, &err);
        *to = rc == RK_OK && list.count > 0 ? list.items[0].version : 0;
        rkd_store_version_list_free(&list);
    }
    if (rc != RK_OK)
        rkd_fail(c, rc, &err);
    return rc == RK_OK ? 0 : -1;
}

/* The rendering ?format= names (NULL: by Accept): 0, or -1 after answering 400. */
static int plan_format(rkd_call *c, const char *format, plan_form *form)
{
    static const char *names[] = {"json", "text", "svg", "picture"};
    const char *accept = c->req->header(c->req, "Accept");
    *form = accept && strstr(accept, "text/plain") ? PLAN_TEXT : PLAN_JSON;
    for (size_t k = 0; format && k < sizeof names / sizeof names[0]; k++)
        if (strcmp(format, names[k]) == 0) {
            *form = (plan_form)k;
            return 0;
        }
    if (format)
        rkd_response_error(c->resp, RKD_E_INVALID_PARAMETER, "format",
                           "query parameter format must be json, text, svg or picture");
    return format ? -1 : 0;
}

/* The plan's options and rendering from the query: 0, or -1 after answering 400. */
static int plan_query(rkd_call *c, rk_plan_options *opt, plan_ask *ask)
{
    const char *step = c->req->query(c->req, "max_step");
    int64_t keys = 0;
    if (step && parse_fraction(step, &opt->max_step) != 0) {
        rkd_response_error(c->resp, RKD_E_INVALID_PARAMETER, "max_step",
                           "query parameter max_step must be a number above 0 and at most 1");
        return -1;
    }
    if (rkd_query_int(c, "keys", 1, INT64_MAX, &keys) < 0 ||
        rkd_query_bool(c, "arcs", &ask->arcs) != 0 ||
        rkd_query_int(c, "bins", RKD_PICTURE_MIN_BINS, RKD_PICTURE_MAX_BINS, &ask->bins) < 0)
        return -1;
    opt->keys = (uint64_t)keys;
    return plan_format(c, c->req->query(c->req, "format"), &ask->form);
}

/* Rows the rendering of `p` would hold, which its memory and time grow with: the table has a line
 * per node, transfer and step, the JSON an object per node, arc (unless left out), transfer and
 * step arc. A node costs the most: five reals, ~1.7 KB and ~13 us in jansson. The SVG and the
 * picture have none: their size is bounded whatever the plan. */
static size_t plan_rows(const rk_plan *p, plan_form form, int arcs)
{
    size_t nn, na, nt, ns, np;
    rk_plan_nodes(p, &nn), rk_plan_arcs(p, &na), rk_plan_transfers(p, &nt);
    rk_plan_steps(p, &ns), rk_plan_step_arcs(p, &np);
    if (form == PLAN_SVG || form == PLAN_PICTURE)
        return 0;
    return nn + (form == PLAN_TEXT ? nt + ns : (arcs ? na : 0) + nt + np);
}

/* The way to a smaller rendering of `p` for check_rows: without the arcs or the steps, or, when
 * its nodes alone pass the limit, in a form that does not list them. */
static const char *fewer_rows(const rkd_call *c, const rk_plan *p, plan_form form, int arcs)
{
    size_t nn, ns;
    rk_plan_nodes(p, &nn), rk_plan_steps(p, &ns);
    if (nn >= c->app->plan.max_rows)
        return "its nodes alone are as many: format=svg";
    if (form == PLAN_JSON && arcs)
        return ns ? "arcs=false, a larger max_step, no max_step" : "arcs=false, format=text";
    return ns ? "a larger max_step, no max_step" : "format=text";
}

/* 0, or -1 after answering 422 when rendering `p` would pass --max-plan-rows. */
static int check_rows(rkd_call *c, const rk_plan *p, size_t rows, plan_form form, int arcs)
{
    if (rows <= c->app->plan.max_rows)
        return 0;
    rkd_response_error(c->resp, RKD_E_PLAN_TOO_LARGE, NULL,
                       "the plan has %zu rows to render, over this server's limit of %zu "
                       "(ringkeeperd --max-plan-rows); ask for less (%s) or compute it offline: "
                       "ringkeeper plan --from-file A.json --to-file B.json",
                       rows, c->app->plan.max_rows, fewer_rows(c, p, form, arcs));
    return -1;
}

/* Renders plan `p`, made from `rings`, as the query asked. */
static void answer_plan(rkd_call *c, const rk_plan *p, const rk_plan_meta *meta,
                        const rk_ring *rings[2], const plan_ask *ask)
{
    if (ask->form == PLAN_JSON || ask->form == PLAN_PICTURE) {
        rkd_answer_json(c->resp, 200,
                        ask->form == PLAN_JSON
                            ? rk_plan_to_json(p, meta, ask->arcs ? 0 : RK_PLAN_NO_ARCS)
                            : rkd_plan_picture_json(p, meta, rings, (size_t)ask->bins));
        return;
    }
    char *body = ask->form == PLAN_SVG ? rk_plan_to_svg(p, meta) : rk_plan_to_text(p, meta);
    if (!body) {
        rkd_out_of_memory(c->resp);
        return;
    }
    rkd_set_body(c->resp, 200, ask->form == PLAN_SVG ? CT_SVG : RKD_CT_TEXT, body, strlen(body));
}

/* Answers a failed plan: over --max-plan-arcs with the way out, anything else as it is. */
void rkd_fail_plan(rkd_call *c, int rc, const rk_error *err)
{
    if (rc != RK_ETOOBIG || strcmp(err->field, "arcs") != 0) {
        rkd_fail(c, rc, err);
        return;
    }
    rkd_response_error(c->resp, RKD_E_PLAN_TOO_LARGE, NULL,
                       "%s of this server (ringkeeperd --max-plan-arcs); compute it offline: "
                       "ringkeeper plan --from-file A.json --to-file B.json",
                       err->message);
}

/* The plan of the query, answered; the number of rows rendered (0 when refused). */
static size_t plan(rkd_call *c)
{
    rk_plan_options opt = {.max_arcs = c->app->plan.max_arcs};
    rk_plan_meta meta = {.cluster = c->cluster};
    rkd_entry *ring[2] = {NULL, NULL}; /* from, to */
    rk_plan *plan = NULL;
    rk_error err = {0};
    plan_ask ask = {PLAN_JSON, 1, RKD_PICTURE_BINS};
    int rc = RK_OK;
    size_t rows = 0;
    if (plan_query(c, &opt, &ask) != 0 ||
        plan_versions(c, &meta.from_version, &meta.to_version) != 0)
        goto done;
    rc = plan_rings(c, (int64_t[2]){meta.from_version, meta.to_version}, &opt, ring, &err);
    plan = rc == RK_OK ? rk_plan_new(ring[0]->value, ring[1]->value, &opt, &err) : NULL;
    if (!plan) {
        rkd_fail_plan(c, rc == RK_OK ? err.code : rc, &err);
        goto done;
    }
    rows = plan_rows(plan, ask.form, ask.arcs);
    if (check_rows(c, plan, rows, ask.form, ask.arcs) == 0)
        answer_plan(c, plan, &meta, (const rk_ring *[2]){ring[0]->value, ring[1]->value}, &ask);
done:
    rk_plan_free(plan);
    rkd_cache_release(c->app->rings, ring[1]);
    rkd_cache_release(c->app->rings, ring[0]);
    return rows;
}

int rkd_plan_slot(rkd_call *c)
{
    unsigned running = atomic_fetch_add(&c->app->plans, 1);
    if (running < c->app->plan.concurrency)
        return 1;
    atomic_fetch_sub(&c->app->plans, 1);
    rkd_response_error(c->resp, RKD_E_UNAVAILABLE, NULL,
                       "%u plans or ring builds are being computed, this server's limit "
                       "(ringkeeperd --plan-concurrency); retry in a few seconds",
                       running);
    c->resp->retry_after = PLAN_RETRY_AFTER_S;
    return 0;
}

void rkd_plan_slot_release(rkd_call *c)
{
    atomic_fetch_sub(&c->app->plans, 1);
}

void rkd_h_plan(rkd_call *c)
{
    if (!rkd_plan_slot(c))
        return;
    if (plan(c) > TRIM_ROWS)
        malloc_trim(0); /* glibc keeps a big plan's freed heap otherwise: give it back */
    rkd_plan_slot_release(c);
}
