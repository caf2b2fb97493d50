/* suggest.c — `ringkeeper suggest`: weights that balance a cluster's load (rk_suggest;
 * docs/LOAD.md, "Suggest") from a load profile (a file, or the one stored with the cluster), with
 * the plan from the start weighed by the same profile, and with --publish the suggestion published
 * as a staged version to review like any other. It names what weights cannot fix: a key that alone
 * outweighs a node's fair share. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"

#define DEFAULT_MAX_MOVED 0.10
#define DEFAULT_TARGET    "1.05"
/* Ring points the search builds at most: a few seconds of builds whatever the ring's size. */
#define MAX_POINTS_BUILT 200000000ull

typedef struct {
    const char *topology, *version, *load, *by, *capacity, *target, *comment;
    double max_moved;
    int publish;
    rk_cli_server server;
} suggest_args;

static const char *const stops[] = {"target", "budget", "stuck", "limit"};

/* What the search found, the plan to it and what weights cannot fix, as one document. */
typedef struct {
    const suggest_args *a;
    rk_ring *start, *end;
    json_t *profile;
    rk_suggestion s;
    rk_plan *plan;   /* from the start to the suggestion */
    double total;    /* the load's bytes (or requests), estimated over the whole space */
    double capacity; /* the fair shares' denominator: the start's weights, or its live nodes */
} suggestion;

static int table(const json_t *doc);
static const rk_cli_view view = {"table", table, "imbalance_after"};

static int parse_args(const rk_cli_cmd *cmd, int argc, char **argv, suggest_args *a)
{
    static const char *const by[] = {"bytes", "requests", NULL};
    static const char *const capacity[] = {"weights", "equal", NULL};
    const rk_cli_option opts[] = {
        RK_CLI_OPT("topology", RK_CLI_TEXT, &a->topology),
        RK_CLI_OPT("version", RK_CLI_VERSION, &a->version),
        RK_CLI_OPT("load", RK_CLI_TEXT, &a->load),
        RK_CLI_OPT("by", RK_CLI_CHOICE, &a->by, .choices = by),
        RK_CLI_OPT("capacity", RK_CLI_CHOICE, &a->capacity, .choices = capacity),
        RK_CLI_OPT("max-moved", RK_CLI_FRACTION, &a->max_moved),
        RK_CLI_OPT("target", RK_CLI_TEXT, &a->target),
        RK_CLI_OPT("publish", RK_CLI_FLAG, &a->publish),
        RK_CLI_OPT("comment", RK_CLI_TEXT, &a->comment),
        RK_CLI_OUTPUT_OPT(&view),
        {0},
    };
    int rc = rk_cli_parse(cmd, argc, argv, opts, &a->server, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    if (a->topology && (a->version || a->publish))
        return rk_cli_usage_error(cmd, "--topology is a file: --version and --publish need a "
                                       "cluster instead");
    if (a->topology && !a->load)
        return rk_cli_usage_error(cmd, "--topology needs --load PROFILE");
    return RK_EXIT_OK;
}

/* --target: a number >= 1. */
static int target_of(const suggest_args *a, double *out)
{
    char *end;
    *out = strtod(a->target, &end);
    if (end == a->target || *end || !(*out >= 1 && *out <= 1000))
        return rk_cli_fail("suggest", RK_EXIT_USAGE,
                           "--target: must be a number from 1 to 1000 (the most loaded node's "
                           "load over its fair share), got %s",
                           a->target);
    return RK_EXIT_OK;
}

/* The start ring and the profile: files, or the cluster's version and stored profile. */
static int inputs(suggest_args *a, suggestion *g)
{
    int rc = RK_EXIT_OK;
    if (!a->topology)
        rc = rk_cli_server_check("suggest", &a->server);
    if (rc == RK_EXIT_OK)
        g->start = a->topology
                       ? rk_cli_load_ring("suggest", a->topology)
                       : rk_cli_fetch_ring("suggest", &a->server, a->version, RK_CLI_ACTIVE, &rc);
    if (!g->start)
        return rc ? rc : RK_EXIT_USAGE;
    if (a->load)
        return rk_cli_read_profile("suggest", a->load, &g->profile);
    rk_cli_body out = {0};
    rc = rk_cli_call("suggest", &a->server, NULL, &out, "GET", "/load");
    g->profile = rc == RK_EXIT_OK ? json_loadb(out.data, out.len, 0, NULL) : NULL;
    free(out.data);
    if (rc == RK_EXIT_OK && !g->profile)
        rc = rk_cli_fail("suggest", RK_EXIT_FAIL, "the server's load profile is not JSON");
    return rc;
}

/* The search, from the profile's load over the start ring. */
static int search(suggestion *g)
{
    const suggest_args *a = g->a;
    rk_suggest_options opt = {.max_moved = a->max_moved,
                              .by_requests = strcmp(a->by, "requests") == 0,
                              .equal_capacity = strcmp(a->capacity, "equal") == 0,
                              .max_points_built = MAX_POINTS_BUILT};
    int rc = target_of(a, &opt.target);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_error err = {0};
    rk_load *l = rk_load_from_profile(g->profile, g->start, &err);
    int got = l ? rk_suggest(g->start, l, &opt, &g->s, &err) : err.code;
    if (l) {
        rk_load_amount all = rk_load_total(l);
        g->total = opt.by_requests ? all.requests : all.bytes;
    }
    const rk_topology *t = rk_ring_topology(g->start);
    for (size_t i = 0; i < rk_topology_node_count(t); i++) {
        double w = rk_topology_node(t, i)->weight;
        g->capacity += opt.equal_capacity ? w > 0 : w;
    }
    rk_load_free(l);
    if (got == RK_OK && !(g->end = rk_ring_build(g->s.topology, &err)))
        got = err.code;
    if (got == RK_OK && !(g->plan = rk_plan_new(g->start, g->end, NULL, &err)))
        got = err.code;
    if (got == RK_OK)
        return RK_EXIT_OK;
    return rk_cli_fail(
        "suggest", got == RK_ENOMEM ? RK_EXIT_FAIL : RK_EXIT_USAGE, "%s%s",
        a->load || got == RK_ENOMEM ? "" : "the cluster's load profile: ", err.message);
}

/* A node's fair share of the load, by its weight in the start (or as one of the live nodes). */
static double fair_of(const suggestion *g, const rk_plan_node *n)
{
    double w = strcmp(g->a->capacity, "equal") == 0 ? n->weight_before > 0 : n->weight_before;
    return g->capacity > 0 ? w / g->capacity : 0;
}

static int by_id(const void *key, const void *node)
{
    return strcmp(key, ((const rk_plan_node *)node)->id);
}

/* The keys that weights cannot balance: each server's largest key (most read, by requests) when
 * it alone holds more than its node's fair share, where no weight can move it off the node. */
static json_t *hot_keys(const suggestion *g)
{
    int reads = strcmp(g->a->by, "requests") == 0;
    const char *top = reads ? "most_read" : "largest", *field = reads ? "requests" : "bytes";
    size_t n, i;
    const rk_plan_node *nodes = rk_plan_nodes(g->plan, &n);
    json_t *list = json_array(), *server;
    json_array_foreach(json_object_get(g->profile, "servers"), i, server)
    {
        const char *id = json_string_value(json_object_get(server, "id"));
        const rk_plan_node *node = id ? bsearch(id, nodes, n, sizeof *nodes, by_id) : NULL;
        const json_t *k = json_object_get(server, top);
        double amount = json_number_value(json_object_get(k, field));
        double fair = node ? g->total * fair_of(g, node) : 0;
        if (!list || !json_is_string(json_object_get(k, "key")) || !(fair > 0 && amount > fair))
            continue;
        if (json_array_append_new(list, json_pack("{s:O, s:s, s:f, s:f}", "key",
                                                  json_object_get(k, "key"), "node", id, field,
                                                  amount, "fair_share", fair)))
            return json_decref(list), NULL;
    }
    return list;
}

/* Each node: its weights, its load before and after ("bytes" or "requests" of the plan's load
 * nodes, in the same order) and its fair share. */
static json_t *nodes_doc(const suggestion *g, const json_t *load)
{
    const char *by = g->a->by;
    char before[32], after[32];
    snprintf(before, sizeof before, "%s_before", by);
    snprintf(after, sizeof after, "%s_after", by);
    size_t n;
    const rk_plan_node *nodes = rk_plan_nodes(g->plan, &n);
    const json_t *loads = json_object_get(load, "nodes");
    json_t *list = json_array();
    for (size_t i = 0; list && i < n && i < json_array_size(loads); i++) {
        const json_t *l = json_array_get(loads, i);
        if (json_array_append_new(
                list,
                json_pack("{s:s, s:f, s:f, s:f, s:f, s:f}", "id", nodes[i].id, "weight_before",
                          nodes[i].weight_before, "weight_after", nodes[i].weight_after,
                          "load_before", json_number_value(json_object_get(l, before)),
                          "load_after", json_number_value(json_object_get(l, after)), "fair_share",
                          g->total * fair_of(g, &nodes[i]))))
            return json_decref(list), NULL;
    }
    return list;
}

static json_t *result_doc(const suggestion *g)
{
    const suggest_args *a = g->a;
    rk_error err = {0};
    json_t *load = NULL;
    if (rk_plan_profile_json(g->plan, g->end, g->profile, (int64_t)time(NULL), &load, &err))
        return NULL; /* it weighed the same load in the search: only memory can fail it */
    json_t *doc = json_pack(
        "{s:s, s:f, s:s, s:s, s:s, s:f, s:f, s:f, s:I, s:I, s:o, s:o, s:{s:f, s:O}, s:o}", "by",
        a->by, "max_moved", a->max_moved, "target", a->target, "capacity", a->capacity, "stopped",
        stops[g->s.stopped], "imbalance_before", g->s.worst_before, "imbalance_after",
        g->s.worst_after, "moved", g->s.moved, "rounds", (json_int_t)g->s.rounds, "points_built",
        (json_int_t)g->s.points_built, "nodes", nodes_doc(g, load), "topology",
        rk_topology_to_json(g->s.topology), "plan", "moved_fraction",
        rk_plan_moved_fraction(g->plan), "load", load, "hot_keys", hot_keys(g));
    json_decref(load);
    return doc;
}

/* The version's comment: what the suggestion does, unless --comment says otherwise. */
static char *comment_of(const suggestion *g)
{
    char text[RK_MAX_COMMENT];
    const char *at = json_string_value(json_object_get(g->profile, "measured_at"));
    if (g->a->comment)
        return strdup(g->a->comment);
    snprintf(text, sizeof text,
             "ringkeeper suggest: by %s, the most loaded node %.2fx its fair share -> %.2fx, "
             "%.1f%% of them moving (profile measured %s)",
             g->a->by, g->s.worst_before, g->s.worst_after, 100 * g->s.moved,
             at ? at : "at an unknown time");
    return strdup(text);
}

/* POST .../versions of the suggestion, staged; its number into doc's "version". */
static int publish(const suggestion *g, json_t *doc)
{
    char *comment = comment_of(g);
    rk_error err = {0};
    rk_topology *t = comment ? rk_topology_with_comment(g->s.topology, comment, &err) : NULL;
    json_t *body = t ? rk_topology_to_json(t) : NULL;
    rk_cli_body in = {body ? json_dumps(body, JSON_COMPACT) : NULL, 0}, out = {0};
    int rc = in.data ? RK_EXIT_OK
                     : rk_cli_fail("suggest", t || !comment ? RK_EXIT_FAIL : RK_EXIT_USAGE, "%s",
                                   t || !comment ? "out of memory" : err.message);
    if (rc == RK_EXIT_OK) {
        in.len = strlen(in.data);
        rc = rk_cli_call("suggest", &g->a->server, &in, &out, "POST", "/versions");
    }
    json_t *answer = rc == RK_EXIT_OK ? json_loadb(out.data, out.len, 0, NULL) : NULL;
    json_t *v = json_object_get(answer, "version");
    if (rc == RK_EXIT_OK && (!json_is_integer(v) || json_object_set(doc, "version", v)))
        rc = rk_cli_fail("suggest", RK_EXIT_FAIL, "the server's answer names no version");
    json_decref(answer);
    free(out.data);
    free(in.data);
    json_decref(body);
    rk_topology_free(t);
    free(comment);
    return rc;
}

static const char *text_of(const json_t *doc, const char *name)
{
    return json_string_value(json_object_get(doc, name));
}

static double num_of(const json_t *doc, const char *name)
{
    return json_number_value(json_object_get(doc, name));
}

/* -o table: the search's outcome, then each node's weight and load against its fair share. */
static int table(const json_t *doc)
{
    static const char *const why[] = {
        "the target is reached", "the next step would pass the budget",
        "no step of one weight unit does better", "the search's bound is reached"};
    const char *stopped = text_of(doc, "stopped");
    size_t w = 0;
    while (w < 3 && strcmp(stopped, stops[w]) != 0)
        w++;
    rk_cli_print_safe(
        stdout, RK_CLI_SAFE_LINES,
        "suggest: by %s, at most %.1f%% of them moving, fair shares by %s\n"
        "  the most loaded node holds %.2fx its fair share; with these weights "
        "%.2fx (target %s: %s)\n"
        "  %.2f%% of the %s move, %.2f%% of the hash space; %lld weight units "
        "changed\n",
        text_of(doc, "by"), 100 * num_of(doc, "max_moved"),
        strcmp(text_of(doc, "capacity"), "equal") == 0 ? "equal nodes" : "the start's weights",
        num_of(doc, "imbalance_before"), num_of(doc, "imbalance_after"), text_of(doc, "target"),
        why[w], 100 * num_of(doc, "moved"), text_of(doc, "by"),
        100 * num_of(json_object_get(doc, "plan"), "moved_fraction"),
        (long long)json_integer_value(json_object_get(doc, "rounds")));
    const json_t *pr =
        json_object_get(json_object_get(json_object_get(doc, "plan"), "load"), "profile");
    const char *at = text_of(pr, "measured_at");
    rk_cli_print_safe(
        stdout, RK_CLI_SAFE_LINE, "  by the load profile measured %s (%.1f h ago), sample rate %g",
        at ? at : "at an unknown time", num_of(pr, "age_s") / 3600, num_of(pr, "sample_rate"));
    putchar('\n');
    const char *by = text_of(doc, "by");
    int bytes = strcmp(by, "bytes") == 0;
    printf("  %-24s %-14s %14s %14s  %s\n", "node", "weight",
           bytes ? "bytes before" : "reads before", bytes ? "bytes after" : "reads after",
           "of its fair share");
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(doc, "nodes"), i, c)
    {
        char w[40], b[2][32];
        double fair = num_of(c, "fair_share"), lb = num_of(c, "load_before"),
               la = num_of(c, "load_after");
        snprintf(w, sizeof w, "%g -> %g", num_of(c, "weight_before"), num_of(c, "weight_after"));
        if (!bytes)
            snprintf(b[0], sizeof b[0], "%.0f", lb), snprintf(b[1], sizeof b[1], "%.0f", la);
        rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "  %-24s %-14s %14s %14s  %.2fx -> %.2fx",
                          text_of(c, "id"), w, bytes ? rk_bytes_text(lb, b[0]) : b[0],
                          bytes ? rk_bytes_text(la, b[1]) : b[1], fair > 0 ? lb / fair : 0,
                          fair > 0 ? la / fair : 0);
        putchar('\n');
    }
    json_array_foreach(json_object_get(doc, "hot_keys"), i, c)
    {
        rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE,
                          "  weights cannot fix: key %s alone holds %.2fx the fair share of "
                          "node %s (%.0f %s against %.0f)",
                          text_of(c, "key"), num_of(c, by) / num_of(c, "fair_share"),
                          text_of(c, "node"), num_of(c, by), by, num_of(c, "fair_share"));
        putchar('\n');
    }
    json_t *v = json_object_get(doc, "version");
    if (json_is_integer(v))
        printf("published as version %lld, staged: review its plan with ringkeeper plan --to "
               "%lld\n",
               (long long)json_integer_value(v), (long long)json_integer_value(v));
    return fflush(stdout) ? RK_EXIT_FAIL : RK_EXIT_OK;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    suggest_args a = {.by = "bytes",
                      .capacity = "weights",
                      .target = DEFAULT_TARGET,
                      .max_moved = DEFAULT_MAX_MOVED};
    int rc = parse_args(cmd, argc, argv, &a);
    if (rc != RK_EXIT_OK)
        return rc;
    suggestion g = {.a = &a};
    rc = inputs(&a, &g);
    rc = rc ? rc : search(&g);
    json_t *doc = rc ? NULL : result_doc(&g);
    if (rc == RK_EXIT_OK && !doc)
        rc = rk_cli_fail("suggest", RK_EXIT_FAIL, "out of memory");
    if (rc == RK_EXIT_OK && a.publish)
        rc = publish(&g, doc);
    rc = rc ? rc : rk_cli_print_result("suggest", doc);
    json_decref(doc);
    json_decref(g.profile);
    rk_topology_free(g.s.topology);
    rk_ring_free(g.start);
    rk_ring_free(g.end);
    rk_plan_free(g.plan);
    return rc;
}

const rk_cli_cmd rk_cli_suggest = {
    "suggest", run,
    "usage: ringkeeper suggest -c C [--version V] [--load PROFILE] [--by bytes|requests]\n"
    "                          [--max-moved F] [--target X] [--capacity weights|equal]\n"
    "                          [--publish [--comment TEXT]] [-o table|json] [--quiet]\n"
    "       ringkeeper suggest --topology FILE --load PROFILE [...]\n"
    "\n"
    "Suggests weights that bring the most loaded node's bytes (or reads) nearest its fair share,\n"
    "moving at most a share F of them (docs/LOAD.md, \"Suggest\"): one weight unit at a time\n"
    "(1/vnode_factor; a whole weight where the scheme has none), the most loaded node giving one\n"
    "or the least loaded taking one. Prints the outcome, the weights that change and the plan\n"
    "from the start weighed by the profile; --publish publishes the suggestion as a staged "
    "version\n"
    "to review (plan, approvals, rollout) like any other.\n"
    "\n"
    "  --version V          the version to start from (default the active one)\n"
    "  --topology FILE      start from a topology file instead (no server)\n"
    "  --load PROFILE       a profile of ringkeeper measure (default the cluster's stored one)\n"
    "  --by bytes|requests  what to balance (default bytes); requests need a profile with reads\n"
    "  --max-moved F        the share of the bytes (or reads) that may move, 0 < F <= 1 (default\n"
    "                       0.1)\n"
    "  --target X           stop once the most loaded node holds at most X times its fair share\n"
    "                       (default " DEFAULT_TARGET "; 1: as near as the budget allows)\n"
    "  --capacity weights   each node's fair share is its weight in the start (default); equal:\n"
    "                       every node the same (after an earlier suggestion changed weights)\n"
    "  --publish            publish the suggestion as a staged version (needs a token)\n"
    "  --comment TEXT       its comment (default: what it does, and the profile's "
    "date)\n" RK_CLI_OUTPUT_HELP("table") SERVER_OPTIONS_HELP,
    NULL, NULL};
