/* nginx.c — the nginx format (format.h): nginx upstreams to and from nginx-scheme topologies, for
 * `ringkeeper import --nginx` and `ringkeeper export --format nginx [--into]`
 * (docs/LOADBALANCERS.md). Writes an upstream block, or rewrites the servers of one in place;
 * reading is nginx_read.c's. Only what decides where keys go is carried over: `hash ... consistent`
 * and the servers (addresses and weights); every other option is the operator's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nginx.h"
#include "text.h"

/* Refuses a topology of another scheme: no upstream routes like it. */
static int check_nginx(const json_t *doc, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *scheme = json_string_value(json_object_get(doc, "scheme"));
    if (scheme && strcmp(scheme, "nginx") == 0)
        return 0;
    snprintf(msg, RK_CLI_FORMAT_MSG_MAX,
             "export --format nginx needs a topology of the nginx scheme (its \"scheme\" is %s); "
             "see docs/LOADBALANCERS.md",
             scheme ? scheme : "the default, ringkeeper");
    return -1;
}

static json_int_t weight_of(const json_t *node)
{
    return (json_int_t)json_number_value(json_object_get(node, "weight"));
}

/* `server ID[ weight=W];` of node into f, between pre (pre_len bytes) and post: 0, or -1 with msg
 * set when nginx would not read the id back as the one word it is. */
static int put_server(FILE *f, const char *pre, int pre_len, const json_t *node, const char *post,
                      char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *id = json_string_value(json_object_get(node, "id"));
    if (!id || !id[0] || id[0] == '#' || strpbrk(id, " \t\r\n;{}\"'\\")) {
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX,
                 "node \"%.200s\": an nginx server address is one word, without blanks, ';', "
                 "braces, quotes or backslashes, and not starting with '#'",
                 id ? id : "");
        return -1;
    }
    fprintf(f, "%.*sserver %s", pre_len, pre, id);
    if (weight_of(node) != 1)
        fprintf(f, " weight=%lld", (long long)weight_of(node));
    fprintf(f, ";%s", post);
    return 0;
}

/* The upstream block `upstream` hashing `key` (such as "$request_uri") for the nginx-scheme
 * topology (or version document) `doc`: servers in the topology's order, nodes of weight 0 left
 * out (they have no point; every other server keeps its own). */
static char *ngx_export(const json_t *doc, const char *upstream, const char *key,
                        char msg[RK_CLI_FORMAT_MSG_MAX])
{
    if (check_nginx(doc, msg) != 0)
        return NULL;
    char *text;
    size_t size, i;
    FILE *f = rk_cli_text_open(&text, &size, msg);
    if (!f)
        return NULL;
    fprintf(f, "upstream %s {\n    hash %s consistent;\n", upstream, key);
    json_t *node;
    int rc = 0;
    json_array_foreach(json_object_get(doc, "nodes"), i, node)
    {
        if (rc == 0 && weight_of(node) > 0)
            rc = put_server(f, "    ", 4, node, "\n", msg);
    }
    fprintf(f, "}\n");
    return rk_cli_text_close(f, &text, rc, msg);
}

/* ---- Rewriting an upstream's servers in place ---- */

/* The start of the line holding `at` when only blanks precede it there, else NULL. */
static const char *line_head(const char *text, const char *at)
{
    while (at > text && (at[-1] == ' ' || at[-1] == '\t'))
        at--;
    return at == text || at[-1] == '\n' ? at : NULL;
}

/* Just past the end of the line holding `at` when only blanks and a comment follow it there, else
 * NULL. */
static const char *line_tail(const char *at, const char *end)
{
    while (at < end && (*at == ' ' || *at == '\t' || *at == '\r'))
        at++;
    if (at < end && *at == '#') {
        const char *nl = memchr(at, '\n', (size_t)(end - at));
        at = nl ? nl : end;
    }
    return at < end && *at == '\n' ? at + 1 : NULL;
}

/* Writes the topology's servers the file lacks (kept names those it has) beside directive p: after
 * it, or in its place when it goes. On lines of their own, indented as p, when p has its line to
 * itself; else on p's line. 0, or -1 with msg set. */
static int put_new(rk_cli_splice *s, const rk_ngx_placed *p, int after, const json_t *doc,
                   const json_t *kept)
{
    const char *head = line_head(s->text, p->from), *tail = line_tail(p->to, s->end);
    int own = head && tail;
    rk_cli_splice_copy(s, after ? (own ? tail : p->to) : (own ? head : p->from));
    const char *pre = own ? head : after ? " " : "", *post = own ? "\n" : after ? "" : " ";
    int pre_len = own ? (int)(p->from - head) : (int)strlen(pre), rc = 0;
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(doc, "nodes"), i, node)
    {
        const char *id = json_string_value(json_object_get(node, "id"));
        if (rc == 0 && weight_of(node) > 0 && !(id && json_object_get(kept, id)))
            rc = put_server(s->f, pre, pre_len, node, post, s->msg);
    }
    return rc;
}

/* Drops directive p: its whole line, comment included, when it has the line to itself; else the
 * directive and the blanks after it. */
static void drop(rk_cli_splice *s, const rk_ngx_placed *p)
{
    const char *head = line_head(s->text, p->from), *tail = line_tail(p->to, s->end), *to = p->to;
    while (!(head && tail) && to < s->end && (*to == ' ' || *to == '\t'))
        to++;
    rk_cli_splice_copy(s, head && tail ? head : p->from);
    s->at = head && tail ? tail : to;
}

/* Sets kept server p's weight from `had` to w: its weight= word rewritten, or one written after
 * the address when it has none (nginx's default is 1). */
static void reweigh(rk_cli_splice *s, const rk_ngx_placed *p, json_int_t had, json_int_t w)
{
    if (w == had)
        return;
    rk_cli_splice_copy(s, p->weight ? p->weight : p->addr_end);
    fprintf(s->f, "%sweight=%lld", p->weight ? "" : " ", (long long)w);
    s->at = p->weight ? p->weight_end : s->at;
}

/* Names in kept the file's servers the topology has (want: id -> weight), and returns the last
 * one's place (p->n: none): -1 with msg set for one written twice, which no node can be. */
static long keep_servers(const rk_ngx_placements *p, const json_t *nodes, const json_t *want,
                         json_t *kept, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    long last = (long)p->n;
    for (size_t i = 0; i < p->n; i++) {
        const char *id = json_string_value(json_object_get(json_array_get(nodes, i), "id"));
        if (!json_object_get(want, id))
            continue;
        if (json_object_get(kept, id)) {
            snprintf(msg, RK_CLI_FORMAT_MSG_MAX,
                     "line %zu: server %.200s is written twice in the upstream: remove one, then "
                     "rewrite it",
                     p->v[i].line, id);
            return -1;
        }
        if (json_object_set_new(kept, id, json_true()) != 0) {
            snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
            return -1;
        }
        last = (long)i;
    }
    return last;
}

/* The upstream's servers (nodes, written at p) rewritten into s as topology doc's (want: id ->
 * weight of its nodes of weight > 0). 0, or -1 with msg set. */
static int rewrite(rk_cli_splice *s, const rk_ngx_placements *p, const json_t *nodes,
                   const json_t *want, const json_t *doc)
{
    json_t *kept = json_object();
    long last = kept ? keep_servers(p, nodes, want, kept, s->msg) : -1;
    int rc = last < 0 ? -1 : 0;
    if (!kept)
        snprintf(s->msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
    for (size_t i = 0; rc == 0 && i < p->n; i++) {
        const json_t *node = json_array_get(nodes, i);
        const json_t *w = json_object_get(want, json_string_value(json_object_get(node, "id")));
        if (i == 0 && last == (long)p->n)
            rc = put_new(s, &p->v[0], 0, doc, kept);
        if (w)
            reweigh(s, &p->v[i], weight_of(node), json_integer_value(w));
        else
            drop(s, &p->v[i]);
        if ((long)i == last)
            rc = put_new(s, &p->v[i], 1, doc, kept);
    }
    rk_cli_splice_copy(s, s->end);
    json_decref(kept);
    return rc;
}

/* The nodes of weight > 0 as id -> weight: what nginx reads of an upstream. NULL when out of
 * memory. */
static json_t *served(const json_t *nodes)
{
    json_t *out = json_object(), *node;
    size_t i;
    json_array_foreach(nodes, i, node)
    {
        const char *id = json_string_value(json_object_get(node, "id"));
        if (out && id && weight_of(node) > 0 &&
            json_object_set_new(out, id, json_integer(weight_of(node))) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

/* Refuses a rewritten text whose upstream does not read back as the topology's servers (want). */
static int read_back(const char *text, const char *upstream, const json_t *want,
                     char msg[RK_CLI_FORMAT_MSG_MAX])
{
    char why[RK_CLI_FORMAT_MSG_MAX], note[RK_CLI_FORMAT_MSG_MAX];
    json_t *now = rk_ngx_import(text, strlen(text), upstream, why, note);
    json_t *got = now ? served(json_object_get(now, "nodes")) : NULL;
    int same = got && json_equal(got, want);
    if (!same)
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX,
                 "upstream %.100s would not read back as the topology's servers once rewritten "
                 "(%.300s); the file was not changed",
                 upstream, now ? "a bug" : why);
    json_decref(got);
    json_decref(now);
    return same ? 0 : -1;
}

/* Refuses an upstream whose hash key is not the topology's request_key (when it has one): its
 * servers alone would not route requests like the topology. */
static int same_key(const char *upstream, const char *key, const json_t *doc,
                    char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *own = json_string_value(json_object_get(doc, "request_key"));
    if (!own || strcmp(own, key) == 0)
        return 0;
    snprintf(msg, RK_CLI_FORMAT_MSG_MAX,
             "upstream %.100s hashes %.100s, the topology takes its keys as %.100s (request_key): "
             "its servers alone would not route requests like it; the file was not changed",
             upstream, key, own);
    return -1;
}

/* `text` (len bytes), an nginx configuration, with only the servers of upstream `upstream`
 * replaced by those of the nginx-scheme topology `doc`, every other byte as it was. A server whose
 * address is a node's id keeps its directive as written (its options, such as max_fails=, and the
 * comments around it) but for its weight= (written when not 1, or when it was written); one the
 * topology lacks or weighs 0 is dropped, with its line when it has one to itself (a comment on it
 * goes too); new servers follow the last kept one, `server ID[ weight=W];` indented as it is.
 * Refused, with a sentence in msg: what rk_ngx_import refuses (no `hash ... consistent` among it),
 * a topology of another scheme or without a server of weight > 0, a kept address written twice,
 * and a result that does not read back as the topology. The upstream is always named: chosen is
 * left as it is. */
static char *ngx_into(const char *text, size_t len, const char *upstream, const json_t *doc,
                      char chosen[RK_CLI_FORMAT_MSG_MAX], char msg[RK_CLI_FORMAT_MSG_MAX])
{
    (void)chosen;
    if (check_nginx(doc, msg) != 0)
        return NULL;
    rk_ngx_placements p = {0};
    json_t *nodes = json_array(), *want = served(json_object_get(doc, "nodes"));
    char *key = calloc(1, RK_NGX_WORD_MAX), *out = NULL;
    size_t size = 0;
    FILE *f = NULL;
    int rc = -1;
    if (!nodes || !want || !key)
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
    else if (json_object_size(want) == 0)
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX,
                 "every node of the topology has weight 0, and nginx refuses an upstream without "
                 "a server");
    else if ((f = rk_cli_text_open(&out, &size, msg)))
        rc = rk_ngx_read_servers(text, len, upstream, nodes, key, &p, msg);
    if (rc == 0)
        rc = same_key(upstream, key, doc, msg);
    if (rc == 0) {
        rk_cli_splice s = {f, text, text, text + len, msg};
        rc = rewrite(&s, &p, nodes, want, doc);
    }
    out = f ? rk_cli_text_close(f, &out, rc, msg) : NULL;
    if (out && read_back(out, upstream, want, msg) != 0) {
        free(out);
        out = NULL;
    }
    json_decref(nodes);
    json_decref(want);
    free(key);
    free(p.v);
    return out;
}

const rk_cli_conf_format rk_cli_conf_format_nginx = {
    .name = "nginx",
    .part = "upstream",
    .setting = "key",
    .setting_value = "EXPR",
    .setting_default = "$request_uri",
    .setting_kept = "hash key",
    .setting_is_request_key = 1,
    .import_about = "an nginx upstream (nginx)",
    .import_help =
        "With --nginx, prints the nginx topology (docs/LOADBALANCERS.md) of upstream NAME of the "
        "nginx\n"
        "configuration FILE: its servers as written, with their weights, so the ring is nginx's "
        "for\n"
        "`hash KEY consistent`, and KEY as its request_key when ringkeeper evaluates it ($uri,\n"
        "$arg_NAME, ...; else a note says why not). Refused: no `hash ... consistent` (round "
        "robin,\n"
        "random, least_conn, ip_hash, hash without consistent), backup, down and resolve servers,\n"
        "service= (each says why). An include is not followed.\n",
    .import_options = "  --nginx FILE       or an nginx configuration ...\n"
                      "  --upstream NAME    ... and its upstream\n",
    .export_about = "an nginx upstream (nginx)",
    .export_usage = "ringkeeper export --format nginx --upstream NAME [--key EXPR]\n"
                    "                  (--file FILE | --server URL --cluster C [--version V])\n"
                    "ringkeeper export --format nginx --upstream NAME --into NGINX_CONF\n"
                    "                  (--file FILE | --server URL --cluster C [--version V])\n",
    .export_help =
        "With --format nginx, prints the upstream block NAME hashing the topology's request_key "
        "(or\n"
        "EXPR for a topology without one, default $request_uri) consistently, for an nginx\n"
        "topology: nginx loads it and routes every key as ringkeeper does.\n"
        "--into keeps each server's own options (max_fails=, fail_timeout=, ...) and sets only "
        "its\n"
        "weight=; a server the topology lacks or drains (weight 0) goes with its line, and new "
        "ones\n"
        "follow the last kept server; keepalive, the hash line and comments stay. Refused when "
        "the\n"
        "upstream has no hash ... consistent, or hashes another key than the topology's "
        "request_key.\n",
    .export_options = "  --upstream NAME ... nginx's upstream name\n"
                      "  --key EXPR      ... and its hash key (default $request_uri; not with "
                      "--into)\n",
    .import = rk_ngx_import,
    .export = ngx_export,
    .into = ngx_into,
};
