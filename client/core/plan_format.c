/* plan_format.c — renders a plan as the JSON document of docs/RING.md, or as a table for people.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <xxhash.h>

#include "internal.h"

void rk_plan_digest(int64_t from_version, const char *from_fingerprint, int64_t to_version,
                    const char *to_fingerprint, char out[RK_PLAN_DIGEST_LEN])
{
    char text[96]; /* two int64s, two 16-digit fingerprints and three separators fit */
    int n = snprintf(text, sizeof text, "%lld:%s>%lld:%s", (long long)from_version,
                     from_fingerprint, (long long)to_version, to_fingerprint);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
    snprintf(out, RK_PLAN_DIGEST_LEN, "%016llx", (unsigned long long)XXH3_64bits(text, len));
}

/* The digest of plan `p` with the versions of `meta` (0 when unknown). */
static void plan_digest(const rk_plan *p, const rk_plan_meta *meta, char out[RK_PLAN_DIGEST_LEN])
{
    rk_plan_digest(meta ? meta->from_version : 0, rki_plan_fingerprint(p, 0),
                   meta ? meta->to_version : 0, rki_plan_fingerprint(p, 1), out);
}

static json_t *side_json(const rk_plan *p, int after, const rk_plan_meta *meta)
{
    json_t *o = json_object();
    int64_t v = meta ? (after ? meta->to_version : meta->from_version) : 0;
    if (o && v > 0)
        json_object_set_new(o, "version", json_integer(v));
    if (o)
        json_object_set_new(o, "fingerprint", json_string(rki_plan_fingerprint(p, after)));
    return o;
}

static json_t *arcs_json(const rk_arc *arcs, size_t n, const rk_plan_node *nodes)
{
    json_t *a = json_array();
    char first[17], last[17];
    for (size_t k = 0; a && k < n; k++) {
        snprintf(first, sizeof first, "%016llx", (unsigned long long)arcs[k].first);
        snprintf(last, sizeof last, "%016llx", (unsigned long long)arcs[k].last);
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:f}", "first", first, "last",
                                           last, "from", nodes[arcs[k].from].id, "to",
                                           nodes[arcs[k].to].id, "fraction", arcs[k].fraction));
    }
    return a;
}

static void add_keys(json_t *o, double fraction, uint64_t keys)
{
    if (keys)
        json_object_set_new(o, "keys_estimate", json_integer((json_int_t)llround(fraction * keys)));
}

static json_t *transfers_json(const rk_plan *p, const rk_plan_node *nodes)
{
    size_t n;
    const rk_transfer *t = rk_plan_transfers(p, &n);
    json_t *a = json_array();
    for (size_t k = 0; a && k < n; k++) {
        json_t *o =
            json_pack("{s:s, s:s, s:f, s:I}", "from", nodes[t[k].from].id, "to", nodes[t[k].to].id,
                      "fraction", t[k].fraction, "arcs", (json_int_t)t[k].arcs);
        add_keys(o, t[k].fraction, rki_plan_options(p)->keys);
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *nodes_json(const rk_plan_node *nodes, size_t n)
{
    json_t *a = json_array();
    for (size_t k = 0; a && k < n; k++) {
        const rk_plan_node *x = &nodes[k];
        json_array_append_new(a, json_pack("{s:s, s:o, s:o, s:f, s:f, s:f, s:f, s:f}", "id", x->id,
                                           "weight_before", rki_weight_json(x->weight_before),
                                           "weight_after", rki_weight_json(x->weight_after),
                                           "share_before", x->share_before, "share_after",
                                           x->share_after, "ideal_after", x->ideal_after, "gained",
                                           x->gained, "lost", x->lost));
    }
    return a;
}

static json_t *steps_json(const rk_plan *p, const rk_plan_node *nodes)
{
    size_t n, na;
    const rk_step *s = rk_plan_steps(p, &n);
    const rk_arc *arcs = rk_plan_step_arcs(p, &na);
    json_t *a = json_array();
    for (size_t k = 0; a && k < n; k++) {
        json_t *o =
            json_pack("{s:I, s:f, s:o}", "step", (json_int_t)(k + 1), "fraction", s[k].fraction,
                      "arcs", arcs_json(arcs + s[k].first_arc, s[k].arcs, nodes));
        add_keys(o, s[k].fraction, rki_plan_options(p)->keys);
        json_array_append_new(a, o);
    }
    return a;
}

json_t *rk_plan_to_json(const rk_plan *p, const rk_plan_meta *meta, int flags)
{
    size_t nn, na, nw;
    const rk_plan_node *nodes = rk_plan_nodes(p, &nn);
    const rk_arc *arcs = rk_plan_arcs(p, &na);
    const char *const *w = rk_plan_warnings(p, &nw);
    double before_max, before_min, after_max, after_min;
    rk_plan_balance(p, &before_max, &before_min, &after_max, &after_min);
    json_t *warnings = json_array();
    for (size_t k = 0; warnings && k < nw; k++)
        json_array_append_new(warnings, json_string(w[k]));
    json_t *doc = json_object(),
           *rest = json_pack(
               "{s:s, s:o, s:o, s:f, s:f, s:o, s:o*, s:{s:{s:f, s:f}, s:{s:f, s:f}}, s:o}", "hash",
               rk_hash_name(rk_topology_hash(rki_plan_topology(p, 0))), "from",
               side_json(p, 0, meta), "to", side_json(p, 1, meta), "moved_fraction",
               rk_plan_moved_fraction(p), "minimal_fraction", rk_plan_minimal_fraction(p),
               "transfers", transfers_json(p, nodes), "nodes",
               flags & RK_PLAN_NO_NODES ? NULL : nodes_json(nodes, nn), "balance", "before", "max",
               before_max, "min", before_min, "after", "max", after_max, "min", after_min,
               "warnings", warnings);
    char digest[RK_PLAN_DIGEST_LEN];
    plan_digest(p, meta, digest);
    if (doc && meta && meta->cluster)
        json_object_set_new(doc, "cluster", json_string(meta->cluster));
    if (doc)
        json_object_set_new(doc, "digest", json_string(digest));
    rk_scheme scheme = rk_topology_scheme(rki_plan_topology(p, 0));
    if (doc &&
        scheme != RK_SCHEME_RINGKEEPER) /* the ringkeeper scheme's documents stay as they were */
        json_object_set_new(doc, "scheme", json_string(rk_scheme_name(scheme)));
    if (!doc || !rest || json_object_update(doc, rest)) {
        json_decref(doc), json_decref(rest);
        return NULL;
    }
    json_decref(rest);
    if (doc && !(flags & RK_PLAN_NO_ARCS))
        json_object_set_new(doc, "arcs", arcs_json(arcs, na, nodes));
    if (doc && rki_plan_options(p)->max_step > 0)
        json_object_set_new(doc, "steps", steps_json(p, nodes));
    return doc;
}

/* ---- the table for people ---- */

/* Column width for ids: the longest, padded to at most 40; a longer id is printed whole (a cut one
 * could name two nodes alike, or end in half a UTF-8 character) and shifts its row. */
static int id_width(const rk_plan_node *nodes, size_t n)
{
    size_t w = 4;
    for (size_t k = 0; k < n; k++)
        w = strlen(nodes[k].id) > w ? strlen(nodes[k].id) : w;
    return (int)(w > 40 ? 40 : w);
}

static void side_text(FILE *f, const rk_plan *p, int after, const rk_plan_meta *meta)
{
    int64_t v = meta ? (after ? meta->to_version : meta->from_version) : 0;
    const char *label = meta ? (after ? meta->to_label : meta->from_label) : NULL;
    if (v > 0)
        fprintf(f, "v%lld ", (long long)v);
    else if (label)
        fprintf(f, "%s ", label);
    fprintf(f, "(%s)", rki_plan_fingerprint(p, after));
}

static void header_text(FILE *f, const rk_plan *p, const rk_plan_meta *meta)
{
    size_t na;
    double before_max, before_min, after_max, after_min;
    rk_plan_arcs(p, &na);
    rk_plan_balance(p, &before_max, &before_min, &after_max, &after_min);
    fprintf(f, "plan");
    if (meta && meta->cluster)
        fprintf(f, " %s", meta->cluster);
    const rk_topology *t = rki_plan_topology(p, 0);
    if (rk_topology_scheme(t) != RK_SCHEME_RINGKEEPER) /* the ringkeeper scheme's text as it was */
        fprintf(f, " (%s %s): ", rk_scheme_name(rk_topology_scheme(t)),
                rk_hash_name(rk_topology_hash(t)));
    else
        fprintf(f, " (%s): ", rk_hash_name(rk_topology_hash(t)));
    side_text(f, p, 0, meta);
    fprintf(f, " -> ");
    side_text(f, p, 1, meta);
    char digest[RK_PLAN_DIGEST_LEN];
    plan_digest(p, meta, digest);
    fprintf(f, "\ndigest   %s", digest);
    fprintf(f, "\nmoved    %8.4f%% of the hash space in %zu arcs (minimal %.4f%%)\n",
            100 * rk_plan_moved_fraction(p), na, 100 * rk_plan_minimal_fraction(p));
    fprintf(f, "balance  before max %.3fx min %.3fx, after max %.3fx min %.3fx (share / ideal)\n",
            before_max, before_min, after_max, after_min);
}

static void nodes_text(FILE *f, const rk_plan_node *nodes, size_t n)
{
    int w = id_width(nodes, n);
    fprintf(f, "\n%-*s %13s %13s %12s %12s %10s %10s\n", w, "node", "weight", "share before",
            "share after", "ideal after", "gained", "lost");
    for (size_t k = 0; k < n; k++) {
        const rk_plan_node *x = &nodes[k];
        char wt[48];
        snprintf(wt, sizeof wt, "%g -> %g", x->weight_before, x->weight_after);
        fprintf(f, "%-*s %13s %12.4f%% %11.4f%% %11.4f%% %9.4f%% %9.4f%%\n", w, x->id, wt,
                100 * x->share_before, 100 * x->share_after, 100 * x->ideal_after, 100 * x->gained,
                100 * x->lost);
    }
}

static void transfers_text(FILE *f, const rk_plan *p, const rk_plan_node *nodes, int w)
{
    size_t n;
    const rk_transfer *t = rk_plan_transfers(p, &n);
    uint64_t keys = rki_plan_options(p)->keys;
    fprintf(f, "\n%-*s %-*s %10s %8s", w, "from", w, "to", "fraction", "arcs");
    fprintf(f, keys ? " %12s\n" : "\n", "keys");
    for (size_t k = 0; k < n; k++) {
        fprintf(f, "%-*s %-*s %9.4f%% %8zu", w, nodes[t[k].from].id, w, nodes[t[k].to].id,
                100 * t[k].fraction, t[k].arcs);
        if (keys)
            fprintf(f, " %12lld", llround(t[k].fraction * (double)keys));
        fputc('\n', f);
    }
    if (n == 0)
        fprintf(f, "(nothing moves)\n");
}

static void steps_text(FILE *f, const rk_plan *p)
{
    size_t n;
    const rk_step *s = rk_plan_steps(p, &n);
    uint64_t keys = rki_plan_options(p)->keys;
    if (rki_plan_options(p)->max_step <= 0)
        return;
    fprintf(f, "\nsteps of at most %.4f%%\n%6s %10s %8s %8s", 100 * rki_plan_options(p)->max_step,
            "step", "fraction", "arcs", "sources");
    fprintf(f, keys ? " %12s\n" : "\n", "keys");
    for (size_t k = 0; k < n; k++) {
        fprintf(f, "%6zu %9.4f%% %8zu %8zu", k + 1, 100 * s[k].fraction, s[k].arcs, s[k].sources);
        if (keys)
            fprintf(f, " %12lld", llround(s[k].fraction * (double)keys));
        fputc('\n', f);
    }
}

char *rk_plan_to_text(const rk_plan *p, const rk_plan_meta *meta)
{
    char *buf = NULL;
    size_t size = 0, nn, nw;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    const rk_plan_node *nodes = rk_plan_nodes(p, &nn);
    const char *const *w = rk_plan_warnings(p, &nw);
    header_text(f, p, meta);
    nodes_text(f, nodes, nn);
    transfers_text(f, p, nodes, id_width(nodes, nn));
    steps_text(f, p);
    if (nw)
        fprintf(f, "\nwarnings\n");
    for (size_t k = 0; k < nw; k++)
        fprintf(f, "  - %s\n", w[k]);
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    return buf;
}
