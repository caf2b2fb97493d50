/* haproxy.c — the haproxy format (format.h): HAProxy backends to and from haproxy-scheme
 * topologies, for `ringkeeper import --haproxy` and `ringkeeper export --format haproxy [--into]`
 * (docs/LOADBALANCERS.md). Writes a backend section, or rewrites the servers of one in place;
 * reading is haproxy_read.c's. Only what decides where keys go is carried over: the servers' ids
 * and weights, `hash-type consistent` and its function; every other setting is the operator's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "haproxy.h"
#include "text.h"

/* Refuses a topology of another scheme: no backend routes like it. */
static int check_haproxy(const json_t *doc, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    const char *scheme = json_string_value(json_object_get(doc, "scheme"));
    if (scheme && strcmp(scheme, "haproxy") == 0 && json_is_string(json_object_get(doc, "hash")))
        return 0;
    return rk_hap_refuse(
        msg, 0,
        "export --format haproxy needs a topology of the haproxy scheme (its \"scheme\" "
        "is %s); see docs/LOADBALANCERS.md",
        scheme ? scheme : "the default, ringkeeper");
}

static const char *node_text(const json_t *node, const char *field)
{
    return json_string_value(json_object_get(node, field));
}

/* Refuses the address of node `id` when HAProxy would not read it back as the one word it is. */
static int check_addr(const char *id, const char *addr, char *msg)
{
    if (addr && addr[0] && !strpbrk(addr, " \t\r\n#\"'\\"))
        return 0;
    return rk_hap_refuse(
        msg, 0,
        "node %.100s: addr \"%.200s\" is no HAProxy server address (one word, without "
        "blanks, '#', quotes or backslashes)",
        id ? id : "?", addr ? addr : "");
}

/* HAProxy's words for the haproxy scheme's hash name: "sdbm_avalanche" is "sdbm avalanche". */
static void hash_words(const char *hash, char out[2 * SHORT_MAX])
{
    const char *aval = strstr(hash, "_avalanche");
    snprintf(out, 2 * SHORT_MAX, "%.*s%s", (int)(aval ? (size_t)(aval - hash) : strlen(hash)), hash,
             aval ? " avalanche" : "");
}

/* `server s<id> ADDR id <id> weight <w>` into f after `indent` (indent_len bytes): 0, or -1 with
 * msg set for an address that is not one word. */
static int put_server(FILE *f, const char *indent, int indent_len, const char *id, const char *addr,
                      int weight, char *msg)
{
    if (check_addr(id, addr, msg) != 0)
        return -1;
    fprintf(f, "%.*sserver s%s %s id %s weight %d\n", indent_len, indent, id, addr, id, weight);
    return 0;
}

/* The backend section `backend` balancing by `balance` (such as "uri" or "hdr(X-Key)") for the
 * haproxy-scheme topology (or version document) `doc`: servers in the topology's order, each named
 * s<id> with its `id` pinned, weight 0 kept. */
static char *hap_export(const json_t *doc, const char *name, const char *balance,
                        char msg[RK_CLI_FORMAT_MSG_MAX])
{
    if (check_haproxy(doc, msg) != 0)
        return NULL;
    char *text, hash[2 * SHORT_MAX];
    size_t size, i;
    hash_words(node_text(doc, "hash"), hash);
    FILE *f = rk_cli_text_open(&text, &size, msg);
    if (!f)
        return NULL;
    fprintf(f, "backend %s\n    balance %s\n    hash-type consistent %s\n", name, balance, hash);
    json_t *node;
    int rc = 0;
    json_array_foreach(json_object_get(doc, "nodes"), i, node)
    {
        if (rc == 0)
            rc = put_server(f, "    ", 4, node_text(node, "id"), node_text(node, "addr"),
                            (int)json_number_value(json_object_get(node, "weight")), msg);
    }
    return rk_cli_text_close(f, &text, rc, msg);
}

/* ---- Rewriting a backend's servers in place ---- */

/* Refuses a backend whose hash (hash-type's function and modifier, `have`) or balance is not the
 * topology's (its hash, its request_key when it has one): its servers alone would not route like
 * it. */
static int check_same_hash(const rk_hap_backend *b, const char *have, const json_t *doc,
                           const char *name, char *msg)
{
    const char *want = node_text(doc, "hash"), *key = node_text(doc, "request_key");
    char words[2 * SHORT_MAX];
    if (key && strcmp(key, b->r.balance_words) != 0)
        return rk_hap_refuse(
            msg, b->r.balance_line,
            "backend %s balances by %s but the topology takes its keys as %s "
            "(request_key): rewriting its servers would not route requests like the "
            "topology",
            name, b->r.balance_words, key);
    if (strcmp(have, want) == 0)
        return 0;
    hash_words(want, words);
    return rk_hap_refuse(
        msg, b->r.hash_line,
        "backend %s hashes keys with %s but the topology with %s: rewriting its servers "
        "would not route like the topology; write hash-type consistent %s first",
        name, have, want, words);
}

/* The nodes as id -> [addr, weight], what decides where HAProxy sends keys; NULL when out of
 * memory. */
static json_t *routes(const json_t *nodes)
{
    json_t *out = json_object(), *node;
    size_t i;
    json_array_foreach(nodes, i, node)
    {
        const char *id = node_text(node, "id"), *addr = node_text(node, "addr");
        int w = (int)json_number_value(json_object_get(node, "weight"));
        if (out && id && addr && json_object_set_new(out, id, json_pack("[s, i]", addr, w)) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

/* Kept server s made node `id` at `addr` of weight w: the address replaced when it is another, the
 * weight set (its word, or one written at the end), and its id pinned when it has it by its place,
 * which would change as servers before it come and go. 0, or -1 with msg set. */
static int rewrite_server(rk_cli_splice *out, const rk_hap_server *s, const char *id,
                          const char *addr, int w)
{
    if (strcmp(addr, s->addr) != 0) {
        if (check_addr(id, addr, out->msg) != 0)
            return -1;
        rk_cli_splice_copy(out, s->addr_word.at);
        fputs(addr, out->f);
        out->at = s->addr_word.past;
    }
    if (w != s->weight && s->weight_word.at) {
        rk_cli_splice_copy(out, s->weight_word.at);
        fprintf(out->f, "%d", w);
        out->at = s->weight_word.past;
    }
    rk_cli_splice_copy(out, s->words.past);
    if (w != s->weight && !s->weight_word.at)
        fprintf(out->f, " weight %d", w);
    if (s->id < 0)
        fprintf(out->f, " id %ld", -s->id);
    return 0;
}

/* The topology's nodes the backend lacks (left: id -> [addr, weight]), in its order, after the
 * backend's last server line and indented as it is: 0, or -1 with msg set, for a name a kept
 * server has (kept: name -> true) among them. */
static int put_new(rk_cli_splice *out, const rk_hap_backend *b, const char *name, const json_t *doc,
                   const json_t *left, const json_t *kept)
{
    const rk_hap_server *last = &b->servers[b->n - 1];
    int kept_last = out->at < last->line.past, rc = 0;
    rk_cli_splice_copy(out, last->line.past);
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(doc, "nodes"), i, node)
    {
        const char *id = node_text(node, "id");
        json_t *to = id ? json_object_get(left, id) : NULL;
        char server_name[SHORT_MAX];
        snprintf(server_name, sizeof server_name, "s%.40s", id ? id : "");
        if (rc || !to)
            continue;
        if (json_object_get(kept, server_name))
            return rk_hap_refuse(
                out->msg, 0,
                "a server of backend %s is named %s already, the name the new server "
                "of id %s takes: rename it first",
                name, server_name, id);
        if (kept_last && last->line.past[-1] != '\n') /* the file's last line */
            fputc('\n', out->f), kept_last = 0;
        rc = put_server(out->f, last->line.at, (int)(last->words.at - last->line.at), id,
                        json_string_value(json_array_get(to, 0)),
                        (int)json_integer_value(json_array_get(to, 1)), out->msg);
    }
    return rc;
}

/* The backend's servers rewritten into out as the topology's (want: id -> [addr, weight]): 0, or
 * -1 with msg set. */
static int rewrite(rk_cli_splice *out, const rk_hap_backend *b, const char *name, const json_t *doc,
                   json_t *want)
{
    json_t *left = json_copy(want), *kept = json_object();
    int rc = left && kept ? 0 : rk_hap_refuse(out->msg, 0, "out of memory");
    for (size_t i = 0; rc == 0 && i < b->n; i++) {
        const rk_hap_server *s = &b->servers[i];
        char id[24];
        snprintf(id, sizeof id, "%ld", s->id < 0 ? -s->id : s->id);
        json_t *to = json_object_get(left, id);
        if (!to) { /* a node the topology has not: its line goes */
            rk_cli_splice_copy(out, s->line.at);
            out->at = s->line.past;
            continue;
        }
        rc = rewrite_server(out, s, id, json_string_value(json_array_get(to, 0)),
                            (int)json_integer_value(json_array_get(to, 1)));
        if (rc == 0 && (json_object_set_new_nocheck(kept, s->name, json_true()) != 0 ||
                        json_object_del(left, id) != 0))
            rc = rk_hap_refuse(out->msg, 0, "out of memory");
    }
    if (rc == 0)
        rc = put_new(out, b, name, doc, left, kept);
    json_decref(left);
    json_decref(kept);
    return rc;
}

/* Refuses a rewritten text whose backend does not read back as the topology (want: its routes). */
static int read_back(const char *text, const char *name, const json_t *doc, const json_t *want,
                     char *msg)
{
    char why[RK_CLI_FORMAT_MSG_MAX], note[RK_CLI_FORMAT_MSG_MAX];
    json_t *now = rk_hap_import(text, strlen(text), name, why, note);
    json_t *got = now ? routes(json_object_get(now, "nodes")) : NULL;
    int same = got && json_equal(got, want) &&
               json_equal(json_object_get(now, "hash"), json_object_get(doc, "hash"));
    json_decref(got);
    json_decref(now);
    return same ? 0
                : rk_hap_refuse(msg, 0,
                                "backend %.100s would not read back as the topology's servers once "
                                "rewritten (%.300s); the file was not changed",
                                name, now ? "a bug" : why);
}

/* `text` (len bytes), a HAProxy configuration, with only the servers of backend (or listen
 * section) `backend` replaced by those of the haproxy-scheme topology `doc`, every other byte as
 * it was. A server whose id (its `id`, else its number by place) is a node's keeps its line as
 * written (name, options such as check and inter, comment) but for the node's address (its word
 * replaced when it differs) and weight (its value set, or ` weight W` written at the end), and
 * ` id N` is written on a server numbered by its place, so that no server added or removed before
 * it moves it. A server the topology lacks goes, its line whole; new ones follow the last server
 * line, indented as it is, as `server s<id> ADDR id <id> weight <w>` (weight 0 kept). Refused,
 * with a sentence in msg: what rk_hap_import refuses, a backend whose effective hash-type (its
 * defaults' included) is not the topology's hash, a topology of another scheme, a new server's
 * name taken, an address HAProxy would not read as one word, and a result that does not read back
 * as the topology. The backend is always named: chosen is left as it is. */
static char *hap_into(const char *text, size_t len, const char *name, const json_t *doc,
                      char chosen[RK_CLI_FORMAT_MSG_MAX], char msg[RK_CLI_FORMAT_MSG_MAX])
{
    (void)chosen;
    rk_hap_backend b = {0};
    char hash[2 * SHORT_MAX], *out = NULL;
    size_t size = 0;
    json_t *want = NULL;
    FILE *f = NULL;
    int rc = check_haproxy(doc, msg);
    if (rc == 0)
        rc = rk_hap_load_backend(text, len, name, &b, hash, msg);
    if (rc == 0)
        rc = check_same_hash(&b, hash, doc, name, msg);
    if (rc == 0 && !(want = routes(json_object_get(doc, "nodes"))))
        rc = rk_hap_refuse(msg, 0, "out of memory");
    if (rc == 0 && !(f = rk_cli_text_open(&out, &size, msg)))
        rc = -1;
    if (rc == 0) {
        rk_cli_splice s = {f, text, text, text + len, msg};
        rc = rewrite(&s, &b, name, doc, want);
        rk_cli_splice_copy(&s, text + len);
    }
    out = f ? rk_cli_text_close(f, &out, rc, msg) : NULL;
    if (out && read_back(out, name, doc, want, msg) != 0) {
        free(out);
        out = NULL;
    }
    json_decref(want);
    free(b.servers);
    return out;
}

const rk_cli_conf_format rk_cli_conf_format_haproxy = {
    .name = "haproxy",
    .part = "backend",
    .setting = "balance",
    .setting_value = "METHOD",
    .setting_default = "uri",
    .setting_kept = "balance",
    .setting_is_request_key = 1,
    .import_about = "a HAProxy backend (haproxy)",
    .import_help =
        "With --haproxy, prints the haproxy topology of backend (or listen section) NAME of the\n"
        "HAProxy configuration FILE: node ids are the servers' ids (their `id`, else the number\n"
        "HAProxy gives them by their place: a note names such servers), with their addresses and\n"
        "weights and the hash-type's function, so the ring is HAProxy's, and the balance as its\n"
        "request_key when ringkeeper evaluates it (uri ..., hdr(NAME)). Refused: a balance that "
        "is\n"
        "no hash, hash-type map-based, hash-balance-factor, backup and disabled servers,\n"
        "server-template, hash-key other than id (each says why).\n",
    .import_options = "  --haproxy FILE     or a HAProxy configuration ...\n"
                      "  --backend NAME     ... and its backend\n",
    .export_about = "a HAProxy backend (haproxy)",
    .export_usage = "ringkeeper export --format haproxy --backend NAME [--balance METHOD]\n"
                    "                  (--file FILE | --server URL --cluster C [--version V])\n"
                    "ringkeeper export --format haproxy --backend NAME --into HAPROXY_CFG\n"
                    "                  (--file FILE | --server URL --cluster C [--version V])\n",
    .export_help =
        "With --format haproxy, prints the backend section NAME balancing by the topology's\n"
        "request_key (or METHOD for a topology without one, default uri) with hash-type\n"
        "consistent, for a haproxy topology: each server named s<id>, its id pinned.\n"
        "--into matches servers by id, keeps their names and options (check, inter, ...), sets "
        "the\n"
        "address and weight, and pins `id N` on a server numbered by its place (so that no server\n"
        "added or removed before it moves its keys); new ones are written as export writes them.\n"
        "Refused when the backend's hash-type (with its defaults') is not the topology's hash, or\n"
        "its balance not the topology's request_key.\n",
    .export_options =
        "  --backend NAME  HAProxy's backend name ...\n"
        "  --balance METHOD ... and its balance (default uri; hdr(X-Key), url_param id, ...; not\n"
        "                  with --into)\n",
    .import = rk_hap_import,
    .export = hap_export,
    .into = hap_into,
};
