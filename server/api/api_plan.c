/* api_plan.c — GET /plan: the plan between two versions of a cluster, from a cache of built rings.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api_plan.h"
#include "cache.h"
#include "docs.h"
#include "load_profile.h"
#include "picture.h"
#include "reply.h"
#include "request.h"
#include "rings.h"

#define TRIM_ROWS 10000 /* a plan of more rows leaves enough freed heap to hand back */
#define CT_SVG    "image/svg+xml; charset=utf-8"

/* How a plan is rendered: ?format= or Accept. */
typedef enum { PLAN_JSON, PLAN_TEXT, PLAN_SVG, PLAN_PICTURE } plan_form;

/* What the query asks of the rendering. */
typedef struct plan_ask {
    plan_form form;
    int arcs;     /* JSON: list the arcs */
    int nodes;    /* JSON: list the nodes */
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
        rkd_query_bool(c, "nodes", &ask->nodes) != 0 ||
        rkd_query_int(c, "bins", RKD_PICTURE_MIN_BINS, RKD_PICTURE_MAX_BINS, &ask->bins) < 0)
        return -1;
    opt->keys = (uint64_t)keys;
    return plan_format(c, c->req->query(c->req, "format"), &ask->form);
}

/* Rows the rendering of `p` would hold, which its memory and time grow with: the table has a line
 * per node, transfer and step, the JSON an object per node, arc (unless left out), transfer and
 * step arc. A node costs the most: five reals, ~1.7 KB and ~13 us in jansson. The SVG and the
 * picture have none: their size is bounded whatever the plan. */
static size_t plan_rows(const rk_plan *p, plan_form form, const plan_ask *ask)
{
    size_t nn, na, nt, ns, np;
    rk_plan_nodes(p, &nn), rk_plan_arcs(p, &na), rk_plan_transfers(p, &nt);
    rk_plan_steps(p, &ns), rk_plan_step_arcs(p, &np);
    if (form == PLAN_SVG || form == PLAN_PICTURE)
        return 0;
    if (form == PLAN_TEXT)
        return nn + nt + ns;
    return (ask->nodes ? nn : 0) + (ask->arcs ? na : 0) + nt + np;
}

/* The way to a smaller rendering of `p` for check_rows: without the arcs or the steps, or, when
 * its nodes alone pass the limit, in a form that does not list them. */
static const char *fewer_rows(const rkd_call *c, const rk_plan *p, plan_form form, int arcs)
{
    size_t nn, ns;
    rk_plan_nodes(p, &nn), rk_plan_steps(p, &ns);
    if (nn >= c->app->plan.max_rows)
        return "its nodes alone are as many: nodes=false, format=svg";
    if (form == PLAN_JSON && arcs)
        return ns ? "arcs=false, a larger max_step, no max_step" : "arcs=false, format=text";
    return ns ? "a larger max_step, no max_step" : "format=text";
}

/* 0, or -1 after answering 422 when rendering `p` would pass --max-plan-rows. */
static int check_rows(rkd_call *c, const rk_plan *p, size_t rows, plan_form form, int arcs)
{
    char what[64];
    if (rows <= c->app->plan.max_rows)
        return 0;
    snprintf(what, sizeof what, "the plan has %zu rows to render", rows);
    rkd_fail_rows(c, what, fewer_rows(c, p, form, arcs));
    return -1;
}

/* The plan weighed by the cluster's stored load profile (docs/LOAD.md): RK_OK with *load NULL
 * when it has none; an error in err when it cannot weigh this plan (another hash) or cannot be
 * read. */
static int plan_load(rkd_call *c, const rk_plan *p, const rk_ring *after, json_t **load,
                     rk_error *err)
{
    json_t *profile = NULL;
    time_t now = time(NULL);
    *load = NULL;
    int rc = rkd_load_profile_get(c->app->store, c->cluster, now, &profile, err);
    if (rc == RK_OK && profile)
        rc = rk_plan_profile_json(p, after, profile, (int64_t)now, load, err);
    json_decref(profile);
    return rc;
}

/* The plan's document with "load", or "load_error" saying why it is not weighed; NULL when out of
 * memory. */
static json_t *with_load(rkd_call *c, json_t *doc, const rk_plan *p, const rk_ring *after)
{
    json_t *load;
    rk_error err = {0};
    int rc = doc ? plan_load(c, p, after, &load, &err) : RK_ENOMEM;
    int bad = rc == RK_ENOMEM;
    if (!bad && load)
        bad = json_object_set_new(doc, "load", load);
    else if (!bad && rc != RK_OK)
        bad = json_object_set_new(doc, "load_error", json_string(err.message));
    if (bad) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* The plan's table with the load's lines after it (or why it is not weighed); NULL when out of
 * memory. */
static char *text_with_load(rkd_call *c, const rk_plan *p, const rk_plan_meta *meta,
                            const rk_ring *after)
{
    json_t *load;
    rk_error err = {0};
    int rc = plan_load(c, p, after, &load, &err);
    char *table = rc == RK_ENOMEM ? NULL : rk_plan_to_text(p, meta);
    char *lines = load ? rk_plan_load_to_text(load) : NULL;
    char *out = NULL;
    size_t size = 0;
    FILE *f = table && (lines || !load) ? open_memstream(&out, &size) : NULL;
    if (f) {
        fputs(table, f);
        if (lines)
            fputs(lines, f);
        else if (rc != RK_OK)
            fprintf(f, "\nload: not weighed: %s\n", err.message);
        if (fclose(f)) {
            free(out);
            out = NULL;
        }
    }
    json_decref(load);
    free(table);
    free(lines);
    return out;
}

/* Renders plan `p`, made from `rings`, as the query asked. */
static void answer_plan(rkd_call *c, const rk_plan *p, const rk_plan_meta *meta,
                        const rk_ring *rings[2], const plan_ask *ask)
{
    if (ask->form == PLAN_JSON) {
        int flags = (ask->arcs ? 0 : RK_PLAN_NO_ARCS) | (ask->nodes ? 0 : RK_PLAN_NO_NODES);
        rkd_answer_json(c->resp, 200, with_load(c, rk_plan_to_json(p, meta, flags), p, rings[1]));
        return;
    }
    if (ask->form == PLAN_PICTURE) {
        rkd_answer_json(c->resp, 200, rkd_plan_picture_json(p, meta, rings, (size_t)ask->bins));
        return;
    }
    char *body = ask->form == PLAN_SVG ? rk_plan_to_svg_rings(p, meta, rings[0], rings[1])
                                       : text_with_load(c, p, meta, rings[1]);
    if (!body) {
        rkd_out_of_memory(c->resp);
        return;
    }
    rkd_set_body(c->resp, 200, ask->form == PLAN_SVG ? CT_SVG : RKD_CT_TEXT, body, strlen(body));
}

/* What decides a plan_too_large refusal: the key of its memory (app->refusals). The first checks,
 * the nodes against --max-plan-rows when the rendering lists them and the arcs against
 * --max-plan-arcs, depend on the two versions and on whether nodes are listed; the rows on the
 * plan and its rendering (?keys and ?bins change no count). Versions never change once published
 * and the limits are the server's, so a remembered answer stays right. Every field is 8 bytes: no
 * padding, so a zeroed key is hashed and compared whole. */
typedef struct refusal_key {
    int64_t from, to;            /* versions */
    uint64_t max_arcs, max_rows; /* the limits it was refused under */
    int64_t rendered;            /* 0: refused before the rendering; 1: by its rows */
    int64_t lists;               /* the rendering lists the nodes */
    int64_t form;                /* rendered only: its plan_form ... */
    int64_t arcs;                /* ... whether it lists the arcs ... */
    double max_step;             /* ... and the steps' size */
} refusal_key;

/* A refusal remembered: an entry of app->refusals. */
typedef struct refusal {
    refusal_key key;
    size_t len;  /* bytes in body */
    char body[]; /* the 422's JSON */
} refusal;

/* The key of a refusal of the query, before the rendering (rendered 0) or by it. */
static refusal_key refusal_of(const rkd_call *c, const rk_plan_meta *meta,
                              const rk_plan_options *opt, const plan_ask *ask, int rendered)
{
    refusal_key k;
    memset(&k, 0, sizeof k);
    k.from = meta->from_version, k.to = meta->to_version;
    k.max_arcs = c->app->plan.max_arcs, k.max_rows = c->app->plan.max_rows;
    k.lists = ask->form == PLAN_TEXT || (ask->form == PLAN_JSON && ask->nodes);
    k.rendered = rendered;
    if (rendered) {
        k.form = ask->form, k.max_step = opt->max_step;
        k.arcs = ask->form == PLAN_JSON && ask->arcs;
    }
    return k;
}

static int64_t refusal_hash(const refusal_key *k)
{
    return (int64_t)rk_hash(RK_HASH_XXH3_64, k, sizeof *k);
}

/* Keeps the 422 just answered as the refusal of `k`; out of memory, it is not kept. */
static void remember(rkd_call *c, const refusal_key *k)
{
    const rkd_response *resp = c->resp;
    refusal *r = resp->status == 422 && resp->body ? malloc(sizeof *r + resp->body_len) : NULL;
    if (!r)
        return;
    r->key = *k;
    r->len = resp->body_len;
    memcpy(r->body, resp->body, r->len);
    /* no refusal goes stale (see refusal_key): the generation read now lets it in */
    rkd_cache_release(c->app->refusals,
                      rkd_cache_put(c->app->refusals, c->cluster, refusal_hash(k), 0, r,
                                    sizeof *r + r->len, rkd_cache_gen(c->app->refusals)));
}

/* Answers the refusal of `k` from memory: 1, or 0 when none is remembered. */
static int recall(rkd_call *c, const refusal_key *k)
{
    rkd_entry *e = rkd_cache_get(c->app->refusals, c->cluster, refusal_hash(k));
    const refusal *r = e ? e->value : NULL;
    if (!r || memcmp(&r->key, k, sizeof *k) != 0) { /* none, or another key of that hash */
        rkd_cache_release(c->app->refusals, e);
        return 0;
    }
    rkd_count(c->app, RKD_COUNT_PLAN_REFUSALS_REMEMBERED);
    rkd_set_shared_body(c->resp, 422, RKD_CT_JSON, r->body, r->len, rkd_entry_release, e);
    return 1;
}

/* The plan of the query, answered, and a plan_too_large remembered; the number of rows rendered
 * (0 when refused). */
static size_t plan(rkd_call *c, const rk_plan_options *opt, const rk_plan_meta *meta,
                   const plan_ask *ask)
{
    rkd_entry *ring[2] = {NULL, NULL}; /* from, to */
    rk_plan *plan = NULL;
    rk_error err = {0};
    refusal_key before = refusal_of(c, meta, opt, ask, 0);
    /* a node is a row of the JSON (unless left out) and the table: too many are refused before a
     * ring is built */
    size_t rows = 0, max_nodes = before.lists ? c->app->plan.max_rows : 0;
    int rc = rkd_plan_rings(c, (int64_t[2]){meta->from_version, meta->to_version}, opt, max_nodes,
                            ring, &err);
    plan = rc == RK_OK ? rk_plan_new(ring[0]->value, ring[1]->value, opt, &err) : NULL;
    rows = plan ? plan_rows(plan, ask->form, ask) : 0;
    if (!plan) {
        if (rkd_fail_plan(c, rc == RK_OK ? err.code : rc, &err))
            remember(c, &before);
    } else if (check_rows(c, plan, rows, ask->form, ask->arcs) != 0) {
        refusal_key by_rows = refusal_of(c, meta, opt, ask, 1);
        remember(c, &by_rows);
    } else {
        answer_plan(c, plan, meta, (const rk_ring *[2]){ring[0]->value, ring[1]->value}, ask);
    }
    rk_plan_free(plan);
    rkd_cache_release(c->app->rings, ring[1]);
    rkd_cache_release(c->app->rings, ring[0]);
    return rows;
}

void rkd_h_plan(rkd_call *c)
{
    rk_plan_options opt = {.max_arcs = c->app->plan.max_arcs};
    rk_plan_meta meta = {.cluster = c->cluster};
    plan_ask ask = {PLAN_JSON, 1, 1, RKD_PICTURE_BINS};
    if (plan_query(c, &opt, &ask) != 0 ||
        plan_versions(c, &meta.from_version, &meta.to_version) != 0)
        return;
    /* a refusal remembered costs a lookup: no slot, and no plan computed again */
    refusal_key before = refusal_of(c, &meta, &opt, &ask, 0);
    refusal_key rendered = refusal_of(c, &meta, &opt, &ask, 1);
    if (recall(c, &before) || recall(c, &rendered) || !rkd_plan_slot(c))
        return;
    if (plan(c, &opt, &meta, &ask) > TRIM_ROWS)
        malloc_trim(0); /* glibc keeps a big plan's freed heap otherwise: give it back */
    rkd_plan_slot_release(c);
}
