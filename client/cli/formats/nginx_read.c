/* nginx_read.c — the nginx format's reader (nginx.h): the servers of an upstream, and where each
 * is written, from nginx's configuration syntax; an upstream as a topology. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nginx.h"
#include "ringkeeper.h"

#define MAX_WORDS 16 /* words of one directive that matter here (server ADDR and its options) */
#define MAX_DEPTH 16 /* nested blocks */

/* A reader of nginx's syntax: words (bare or quoted), ';' ending a directive, '{' and '}'. */
typedef struct reader {
    const char *s, *end;
    size_t line;
    char *msg;
    const char *tok; /* where the last token starts */
    rk_ngx_placements
        *servers; /* when set, where each server of the upstream is, in nodes' order */
} reader;

typedef enum { TOK_WORD, TOK_END, TOK_OPEN, TOK_CLOSE, TOK_EOF, TOK_ERROR } tok_kind;

static int fail(reader *r, const char *fmt, const char *what)
{
    char sentence[RK_CLI_FORMAT_MSG_MAX - 32], cut[200]; /* a word is up to 1023 bytes */
    snprintf(cut, sizeof cut, "%.*s", (int)sizeof cut - 1, what);
    snprintf(sentence, sizeof sentence, fmt, cut);
    snprintf(r->msg, RK_CLI_FORMAT_MSG_MAX, "line %zu: %s", r->line, sentence);
    return TOK_ERROR;
}

/* Refuses what the directive at `line` says: -1, with msg set. */
static int refuse(reader *r, size_t line, const char *fmt, const char *what)
{
    r->line = line;
    fail(r, fmt, what);
    return -1;
}

/* Skips blanks and comments, counting lines. */
static void skip(reader *r)
{
    while (r->s < r->end) {
        if (*r->s == '#') {
            while (r->s < r->end && *r->s != '\n')
                r->s++;
        } else if (*r->s == ' ' || *r->s == '\t' || *r->s == '\r' || *r->s == '\n') {
            r->line += *r->s == '\n';
            r->s++;
        } else {
            return;
        }
    }
}

/* The next token; a word goes to word (RK_NGX_WORD_MAX bytes, quotes removed, escapes kept as nginx
 * keeps them: a backslash before the quote). */
static tok_kind next(reader *r, char word[RK_NGX_WORD_MAX])
{
    skip(r);
    r->tok = r->s;
    if (r->s >= r->end)
        return TOK_EOF;
    char c = *r->s;
    if (c == ';' || c == '{' || c == '}') {
        r->s++;
        return c == ';' ? TOK_END : c == '{' ? TOK_OPEN : TOK_CLOSE;
    }
    size_t n = 0;
    char quote = c == '"' || c == '\'' ? c : 0;
    r->s += quote != 0;
    for (; r->s < r->end; r->s++) {
        char ch = *r->s;
        /* as ngx_conf_read_token: a '{' right after '$' is a variable's ("${uri}"), and a '}'
         * inside a word is the word's */
        int brace = ch == '{' && n > 0 && word[n - 1] == '$';
        if (quote ? ch == quote
                  : (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == ';' ||
                     (ch == '{' && !brace)))
            break;
        if (quote && ch == '\\' && r->s + 1 < r->end && r->s[1] == quote)
            ch = *++r->s;
        if (ch == '\0') /* kept, it would end the word, and the rest of it would be lost */
            return fail(r, "%s", "a NUL byte: the file is not text");
        r->line += ch == '\n';
        if (n + 1 >= RK_NGX_WORD_MAX)
            return fail(r, "%s", "a word over 1023 bytes");
        word[n++] = ch;
    }
    if (quote && r->s >= r->end)
        return fail(r, "%s", "a quoted string is not closed");
    r->s += quote != 0;
    word[n] = 0;
    return TOK_WORD;
}

/* One directive: its words (at most MAX_WORDS kept, with where each is written), ended by ';' or
 * '{'. */
typedef struct directive {
    char words[MAX_WORDS][RK_NGX_WORD_MAX];
    const char *at[MAX_WORDS], *past[MAX_WORDS];
    const char *stop; /* just past its ';' or '{' */
    size_t n;
    size_t line;
    tok_kind end; /* TOK_END or TOK_OPEN */
} directive;

/* Reads the next directive, or a '}' (d->n 0, end TOK_CLOSE) or the end (TOK_EOF). */
static tok_kind read_directive(reader *r, directive *d)
{
    char word[RK_NGX_WORD_MAX];
    d->n = 0;
    for (;;) {
        tok_kind k = next(r, word);
        if (k == TOK_ERROR)
            return k;
        if (k == TOK_WORD) {
            if (d->n == 0)
                d->line = r->line;
            if (d->n < MAX_WORDS) {
                memcpy(d->words[d->n], word, strlen(word) + 1);
                d->at[d->n] = r->tok, d->past[d->n] = r->s;
            }
            d->n++;
            continue;
        }
        if ((k == TOK_CLOSE || k == TOK_EOF) && d->n)
            return fail(r, "%s", "a directive is not ended by ';'");
        if ((k == TOK_END || k == TOK_OPEN) && !d->n)
            return fail(r, "%s", k == TOK_END ? "an empty directive" : "a block with no name");
        d->stop = r->s;
        return d->end = k;
    }
}

/* Skips the rest of a block whose '{' was read. */
static int skip_block(reader *r, directive *d)
{
    for (int depth = 1; depth > 0;) {
        tok_kind k = read_directive(r, d);
        if (k == TOK_ERROR)
            return -1;
        if (k == TOK_EOF)
            return refuse(r, r->line, "%s", "a block is not closed by '}'");
        depth += k == TOK_OPEN ? 1 : k == TOK_CLOSE ? -1 : 0;
    }
    return 0;
}

/* A server line's node: {"id", "addr", "weight"}, the word setting its weight in *weight_word (0:
 * none), or NULL with msg set. */
static json_t *server_node(reader *r, const directive *d, size_t *weight_word)
{
    static const char *const refused[][2] = {
        {"backup", "a backup server has no point on the ring: nginx sends it only what the ring's "
                   "servers cannot take"},
        {"down", "a down server keeps its points and nginx passes its keys to the next point's "
                 "server, which no topology says; remove the server (weight 0 in a topology)"},
        {"resolve", "a server re-resolved at run time may change its addresses, and with them the "
                    "ring; write its addresses"},
        {"service=", "a service's servers come from DNS SRV records at run time; write them"},
    };
    long weight = 1;
    for (size_t i = 2; i < d->n && i < MAX_WORDS; i++) {
        for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++)
            if (strncmp(d->words[i], refused[k][0], strlen(refused[k][0])) == 0 &&
                (refused[k][0][strlen(refused[k][0]) - 1] == '=' ||
                 d->words[i][strlen(refused[k][0])] == 0)) {
                refuse(r, d->line, "%s", refused[k][1]);
                return NULL;
            }
        char *end;
        if (strncmp(d->words[i], "weight=", 7) != 0)
            continue;
        *weight_word = i;
        if ((weight = strtol(d->words[i] + 7, &end, 10)) < 1 || weight > 1000 || *end) {
            refuse(r, d->line, "weight must be a whole number 1..1000, got %s", d->words[i] + 7);
            return NULL;
        }
    }
    json_t *node = json_pack("{s:s, s:s, s:I}", "id", d->words[1], "addr", d->words[1], "weight",
                             (json_int_t)weight);
    if (!node) /* a node id is JSON text */
        refuse(r, d->line, "%s", "the address is not UTF-8 text");
    return node;
}

/* Notes where server directive d is written, for rk_ngx_into: 0, or -1 with msg set. */
static int place(reader *r, const directive *d, size_t weight_word)
{
    rk_ngx_placements *p = r->servers;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        rk_ngx_placed *more = realloc(p->v, cap * sizeof *more);
        if (!more)
            return refuse(r, d->line, "%s", "out of memory");
        p->v = more, p->cap = cap;
    }
    p->v[p->n++] = (rk_ngx_placed){d->at[0],
                                   d->stop,
                                   d->past[1],
                                   weight_word ? d->at[weight_word] : NULL,
                                   weight_word ? d->past[weight_word] : NULL,
                                   d->line};
    return 0;
}

/* One directive of an upstream block into nodes, and its hash key into key (RK_NGX_WORD_MAX bytes):
 * 0, or -1 with msg set. */
static int upstream_directive(reader *r, const directive *d, json_t *nodes, char *key)
{
    const char *name = d->words[0];
    if (strcmp(name, "server") == 0 && d->n >= 2) {
        char why[80]; /* the caps checked as it reads: 1M servers had cost 681 MB */
        if (json_array_size(nodes) == RK_MAX_NODES)
            snprintf(why, sizeof why, "more than %d servers", RK_MAX_NODES);
        else if (strlen(d->words[1]) > RK_MAX_ID_BYTES) /* the address is the node's id */
            snprintf(why, sizeof why, "the address is longer than %d bytes", RK_MAX_ID_BYTES);
        else
            why[0] = '\0';
        if (why[0])
            return refuse(r, d->line, "%s", why);
        size_t weight_word = 0;
        json_t *node = server_node(r, d, &weight_word);
        if (!node || json_array_append_new(nodes, node) != 0)
            return -1;
        return r->servers ? place(r, d, weight_word) : 0;
    }
    if (strcmp(name, "hash") == 0) {
        int hashed = d->n == 3 && strcmp(d->words[2], "consistent") == 0;
        if (hashed)
            memcpy(key, d->words[1], strlen(d->words[1]) + 1);
        return hashed ? 0
                      : refuse(r, d->line, "%s",
                               "hash without consistent maps keys by modulo: every server "
                               "change moves most keys; add consistent");
    }
    if (strcmp(name, "random") == 0 || strcmp(name, "ip_hash") == 0 ||
        strcmp(name, "least_conn") == 0)
        return refuse(r, d->line, "%s is not a consistent-hash ring: use hash KEY consistent",
                      name);
    return 0;
}

/* The upstream block whose '{' was read, into nodes and its hash key into key (RK_NGX_WORD_MAX
 * bytes); 0, or -1 with msg set. */
static int read_upstream(reader *r, json_t *nodes, char *key)
{
    directive *d = malloc(sizeof *d);
    int rc = d ? 0 : -1;
    if (!d)
        snprintf(r->msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
    while (rc == 0) {
        tok_kind k = read_directive(r, d);
        if (k == TOK_CLOSE)
            break;
        if (k == TOK_ERROR)
            rc = -1;
        else if (k == TOK_EOF)
            rc = refuse(r, r->line, "%s", "the upstream is not closed by '}'");
        else if (k == TOK_OPEN)
            rc = skip_block(r, d);
        else
            rc = upstream_directive(r, d, nodes, key);
    }
    if (rc == 0 && !key[0])
        rc = refuse(r, r->line, "%s",
                    "the upstream has no hash ... consistent: it balances round robin, not by a "
                    "ring");
    free(d);
    return rc;
}

/* The servers of upstream `upstream` (at any depth) into nodes, its hash key into key
 * (RK_NGX_WORD_MAX bytes), and where each server is written into r->servers when set: 0, or -1 with
 * msg set. */
static int read_servers(reader *r, const char *upstream, json_t *nodes, char *key)
{
    directive *d = malloc(sizeof *d);
    int depth = 0, found = 0;
    while (d && !found) {
        tok_kind k = read_directive(r, d);
        if (k == TOK_ERROR)
            break;
        if (k == TOK_EOF && depth > 0) { /* found by fuzz_formats: refused without a word */
            fail(r, "%s", "the file ends inside a block: a '{' is not closed");
            break;
        }
        if (k == TOK_EOF) {
            snprintf(r->msg, RK_CLI_FORMAT_MSG_MAX, "no upstream named %s", upstream);
            break;
        }
        depth += k == TOK_OPEN ? 1 : k == TOK_CLOSE ? -1 : 0;
        if (depth > MAX_DEPTH || depth < 0) {
            fail(r, "%s", depth < 0 ? "a '}' closes no block" : "blocks nested too deep");
            break;
        }
        if (k == TOK_OPEN && d->n == 2 && strcmp(d->words[0], "upstream") == 0 &&
            strcmp(d->words[1], upstream) == 0)
            found = read_upstream(r, nodes, key) == 0 ? 1 : -1;
    }
    if (!d)
        snprintf(r->msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
    else if (found == 1 && json_array_size(nodes) == 0)
        snprintf(r->msg, RK_CLI_FORMAT_MSG_MAX, "upstream %s has no server", upstream);
    free(d);
    return found == 1 && json_array_size(nodes) > 0 ? 0 : -1;
}

/* The upstream's topology, with its key as request_key when the library takes that key from a
 * request as nginx does; else a note says why not. */
static json_t *topology(json_t *nodes, const char *key, char note[RK_CLI_FORMAT_MSG_MAX])
{
    rk_error err = {0};
    json_t *t = json_pack("{s:s, s:s, s:O}", "scheme", "nginx", "hash", "crc32a", "nodes", nodes);
    if (t && rk_request_key_check(RK_SCHEME_NGINX, key, &err) == RK_OK) {
        if (json_object_set_new(t, "request_key", json_string(key)))
            json_decref(t), t = NULL;
    } else if (t) {
        snprintf(note, RK_CLI_FORMAT_MSG_MAX,
                 "the upstream hashes %.64s, which is not taken from a request here (%s): "
                 "lookup --requests is refused, lookups take keys as given",
                 key, err.message);
    }
    return t;
}

json_t *rk_ngx_import(const char *text, size_t len, const char *upstream,
                      char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX])
{
    reader r = {text, text + len, 1, msg, NULL, NULL};
    json_t *nodes = json_array(), *out = NULL;
    char *key = calloc(1, RK_NGX_WORD_MAX);
    note[0] = '\0';
    if (!nodes || !key)
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
    else if (read_servers(&r, upstream, nodes, key) == 0 && !(out = topology(nodes, key, note)))
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
    json_decref(nodes);
    free(key);
    return out;
}

int rk_ngx_read_servers(const char *text, size_t len, const char *upstream, json_t *nodes,
                        char key[RK_NGX_WORD_MAX], rk_ngx_placements *at,
                        char msg[RK_CLI_FORMAT_MSG_MAX])
{
    reader r = {text, text + len, 1, msg, NULL, at};
    return read_servers(&r, upstream, nodes, key);
}
