/* nginxconf.c — nginx upstreams to and from nginx-scheme topologies (nginxconf.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nginxconf.h"
#include "ringkeeper.h"

#define MAX_WORDS 16   /* words of one directive that matter here (server ADDR and its options) */
#define MAX_DEPTH 16   /* nested blocks */
#define WORD_MAX  1024 /* bytes of one word */

/* Where a server directive of the upstream is written in the text, for rk_ngx_into. */
typedef struct placed {
    const char *from, *to;           /* the directive, its ';' included */
    const char *addr_end;            /* just past its address */
    const char *weight, *weight_end; /* its weight= word; NULL when it has none */
    size_t line;
} placed;

typedef struct placements {
    placed *v;
    size_t n, cap;
} placements;

/* A reader of nginx's syntax: words (bare or quoted), ';' ending a directive, '{' and '}'. */
typedef struct reader {
    const char *s, *end;
    size_t line;
    char *msg;
    const char *tok;     /* where the last token starts */
    placements *servers; /* when set, where each server of the upstream is, in nodes' order */
} reader;

typedef enum { TOK_WORD, TOK_END, TOK_OPEN, TOK_CLOSE, TOK_EOF, TOK_ERROR } tok_kind;

static int fail(reader *r, const char *fmt, const char *what)
{
    char sentence[RK_NGX_MSG_MAX - 32], cut[200]; /* a word is up to 1023 bytes */
    snprintf(cut, sizeof cut, "%.*s", (int)sizeof cut - 1, what);
    snprintf(sentence, sizeof sentence, fmt, cut);
    snprintf(r->msg, RK_NGX_MSG_MAX, "line %zu: %s", r->line, sentence);
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

/* The next token; a word goes to word (WORD_MAX bytes, quotes removed, escapes kept as nginx
 * keeps them: a backslash before the quote). */
static tok_kind next(reader *r, char word[WORD_MAX])
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
        if (n + 1 >= WORD_MAX)
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
    char words[MAX_WORDS][WORD_MAX];
    const char *at[MAX_WORDS], *past[MAX_WORDS];
    const char *stop; /* just past its ';' or '{' */
    size_t n;
    size_t line;
    tok_kind end; /* TOK_END or TOK_OPEN */
} directive;

/* Reads the next directive, or a '}' (d->n 0, end TOK_CLOSE) or the end (TOK_EOF). */
static tok_kind read_directive(reader *r, directive *d)
{
    char word[WORD_MAX];
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
    placements *p = r->servers;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        placed *more = realloc(p->v, cap * sizeof *more);
        if (!more)
            return refuse(r, d->line, "%s", "out of memory");
        p->v = more, p->cap = cap;
    }
    p->v[p->n++] = (placed){d->at[0],
                            d->stop,
                            d->past[1],
                            weight_word ? d->at[weight_word] : NULL,
                            weight_word ? d->past[weight_word] : NULL,
                            d->line};
    return 0;
}

/* One directive of an upstream block into nodes, and its hash key into key (WORD_MAX bytes): 0,
 * or -1 with msg set. */
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

/* The upstream block whose '{' was read, into nodes and its hash key into key (WORD_MAX bytes);
 * 0, or -1 with msg set. */
static int read_upstream(reader *r, json_t *nodes, char *key)
{
    directive *d = malloc(sizeof *d);
    int rc = d ? 0 : -1;
    if (!d)
        snprintf(r->msg, RK_NGX_MSG_MAX, "out of memory");
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

/* The servers of upstream `upstream` (at any depth) into nodes, its hash key into key (WORD_MAX
 * bytes), and where each server is written into r->servers when set: 0, or -1 with msg set. */
static int read_servers(reader *r, const char *upstream, json_t *nodes, char *key)
{
    directive *d = malloc(sizeof *d);
    int depth = 0, found = 0;
    while (d && !found) {
        tok_kind k = read_directive(r, d);
        if (k == TOK_ERROR || (k == TOK_EOF && depth > 0))
            break;
        if (k == TOK_EOF) {
            snprintf(r->msg, RK_NGX_MSG_MAX, "no upstream named %s", upstream);
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
        snprintf(r->msg, RK_NGX_MSG_MAX, "out of memory");
    else if (found == 1 && json_array_size(nodes) == 0)
        snprintf(r->msg, RK_NGX_MSG_MAX, "upstream %s has no server", upstream);
    free(d);
    return found == 1 && json_array_size(nodes) > 0 ? 0 : -1;
}

/* The upstream's topology, with its key as request_key when the library takes that key from a
 * request as nginx does; else a note says why not. */
static json_t *topology(json_t *nodes, const char *key, char note[RK_NGX_MSG_MAX])
{
    rk_error err = {0};
    json_t *t = json_pack("{s:s, s:s, s:O}", "scheme", "nginx", "hash", "crc32a", "nodes", nodes);
    if (t && rk_request_key_check(RK_SCHEME_NGINX, key, &err) == RK_OK) {
        if (json_object_set_new(t, "request_key", json_string(key)))
            json_decref(t), t = NULL;
    } else if (t) {
        snprintf(note, RK_NGX_MSG_MAX,
                 "the upstream hashes %.64s, which is not taken from a request here (%s): "
                 "lookup --requests is refused, lookups take keys as given",
                 key, err.message);
    }
    return t;
}

json_t *rk_ngx_import(const char *text, size_t len, const char *upstream, char msg[RK_NGX_MSG_MAX],
                      char note[RK_NGX_MSG_MAX])
{
    reader r = {text, text + len, 1, msg, NULL, NULL};
    json_t *nodes = json_array(), *out = NULL;
    char *key = calloc(1, WORD_MAX);
    note[0] = '\0';
    if (!nodes || !key)
        snprintf(msg, RK_NGX_MSG_MAX, "out of memory");
    else if (read_servers(&r, upstream, nodes, key) == 0 && !(out = topology(nodes, key, note)))
        snprintf(msg, RK_NGX_MSG_MAX, "out of memory");
    json_decref(nodes);
    free(key);
    return out;
}

/* Refuses a topology of another scheme: no upstream routes like it. */
static int check_nginx(const json_t *doc, char msg[RK_NGX_MSG_MAX])
{
    const char *scheme = json_string_value(json_object_get(doc, "scheme"));
    if (scheme && strcmp(scheme, "nginx") == 0)
        return 0;
    snprintf(msg, RK_NGX_MSG_MAX,
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
                      char msg[RK_NGX_MSG_MAX])
{
    const char *id = json_string_value(json_object_get(node, "id"));
    if (!id || !id[0] || id[0] == '#' || strpbrk(id, " \t\r\n;{}\"'\\")) {
        snprintf(msg, RK_NGX_MSG_MAX,
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

/* The text written to f, which is closed here, at *text: NULL (freed) when rc says a step failed
 * (msg set) or writing it failed. */
static char *close_text(FILE *f, char **text, int rc, char msg[RK_NGX_MSG_MAX])
{
    if (fclose(f) == 0 && rc == 0)
        return *text;
    if (rc == 0)
        snprintf(msg, RK_NGX_MSG_MAX, "out of memory");
    free(*text);
    return NULL;
}

char *rk_ngx_export(const json_t *doc, const char *upstream, const char *key,
                    char msg[RK_NGX_MSG_MAX])
{
    if (check_nginx(doc, msg) != 0)
        return NULL;
    char *text = NULL;
    size_t size = 0, i;
    FILE *f = open_memstream(&text, &size);
    if (!f) {
        snprintf(msg, RK_NGX_MSG_MAX, "out of memory");
        return NULL;
    }
    fprintf(f, "upstream %s {\n    hash %s consistent;\n", upstream, key);
    json_t *node;
    int rc = 0;
    json_array_foreach(json_object_get(doc, "nodes"), i, node)
    {
        if (rc == 0 && weight_of(node) > 0)
            rc = put_server(f, "    ", 4, node, "\n", msg);
    }
    fprintf(f, "}\n");
    return close_text(f, &text, rc, msg);
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

/* The rewritten text as it is written: f has the input up to `at`, then the edits. */
typedef struct splice {
    FILE *f;
    const char *text, *at, *end;
    char *msg;
} splice;

static void copy_to(splice *s, const char *to)
{
    fwrite(s->at, 1, (size_t)(to - s->at), s->f);
    s->at = to;
}

/* Writes the topology's servers the file lacks (kept names those it has) beside directive p: after
 * it, or in its place when it goes. On lines of their own, indented as p, when p has its line to
 * itself; else on p's line. 0, or -1 with msg set. */
static int put_new(splice *s, const placed *p, int after, const json_t *doc, const json_t *kept)
{
    const char *head = line_head(s->text, p->from), *tail = line_tail(p->to, s->end);
    int own = head && tail;
    copy_to(s, after ? (own ? tail : p->to) : (own ? head : p->from));
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
static void drop(splice *s, const placed *p)
{
    const char *head = line_head(s->text, p->from), *tail = line_tail(p->to, s->end), *to = p->to;
    while (!(head && tail) && to < s->end && (*to == ' ' || *to == '\t'))
        to++;
    copy_to(s, head && tail ? head : p->from);
    s->at = head && tail ? tail : to;
}

/* Sets kept server p's weight from `had` to w: its weight= word rewritten, or one written after
 * the address when it has none (nginx's default is 1). */
static void reweigh(splice *s, const placed *p, json_int_t had, json_int_t w)
{
    if (w == had)
        return;
    copy_to(s, p->weight ? p->weight : p->addr_end);
    fprintf(s->f, "%sweight=%lld", p->weight ? "" : " ", (long long)w);
    s->at = p->weight ? p->weight_end : s->at;
}

/* Names in kept the file's servers the topology has (want: id -> weight), and returns the last
 * one's place (p->n: none): -1 with msg set for one written twice, which no node can be. */
static long keep_servers(const placements *p, const json_t *nodes, const json_t *want, json_t *kept,
                         char msg[RK_NGX_MSG_MAX])
{
    long last = (long)p->n;
    for (size_t i = 0; i < p->n; i++) {
        const char *id = json_string_value(json_object_get(json_array_get(nodes, i), "id"));
        if (!json_object_get(want, id))
            continue;
        if (json_object_get(kept, id)) {
            snprintf(msg, RK_NGX_MSG_MAX,
                     "line %zu: server %.200s is written twice in the upstream: remove one, then "
                     "rewrite it",
                     p->v[i].line, id);
            return -1;
        }
        if (json_object_set_new(kept, id, json_true()) != 0) {
            snprintf(msg, RK_NGX_MSG_MAX, "out of memory");
            return -1;
        }
        last = (long)i;
    }
    return last;
}

/* The upstream's servers (nodes, written at p) rewritten into s as topology doc's (want: id ->
 * weight of its nodes of weight > 0). 0, or -1 with msg set. */
static int rewrite(splice *s, const placements *p, const json_t *nodes, const json_t *want,
                   const json_t *doc)
{
    json_t *kept = json_object();
    long last = kept ? keep_servers(p, nodes, want, kept, s->msg) : -1;
    int rc = last < 0 ? -1 : 0;
    if (!kept)
        snprintf(s->msg, RK_NGX_MSG_MAX, "out of memory");
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
    copy_to(s, s->end);
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
                     char msg[RK_NGX_MSG_MAX])
{
    char why[RK_NGX_MSG_MAX], note[RK_NGX_MSG_MAX];
    json_t *now = rk_ngx_import(text, strlen(text), upstream, why, note);
    json_t *got = now ? served(json_object_get(now, "nodes")) : NULL;
    int same = got && json_equal(got, want);
    if (!same)
        snprintf(msg, RK_NGX_MSG_MAX,
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
                    char msg[RK_NGX_MSG_MAX])
{
    const char *own = json_string_value(json_object_get(doc, "request_key"));
    if (!own || strcmp(own, key) == 0)
        return 0;
    snprintf(msg, RK_NGX_MSG_MAX,
             "upstream %.100s hashes %.100s, the topology takes its keys as %.100s (request_key): "
             "its servers alone would not route requests like it; the file was not changed",
             upstream, key, own);
    return -1;
}

char *rk_ngx_into(const char *text, size_t len, const char *upstream, const json_t *doc,
                  char msg[RK_NGX_MSG_MAX])
{
    if (check_nginx(doc, msg) != 0)
        return NULL;
    placements p = {0};
    reader r = {text, text + len, 1, msg, NULL, &p};
    json_t *nodes = json_array(), *want = served(json_object_get(doc, "nodes"));
    char *key = calloc(1, WORD_MAX);
    char *out = NULL;
    size_t size = 0;
    FILE *f = nodes && want ? open_memstream(&out, &size) : NULL;
    int rc = -1;
    if (!f)
        snprintf(msg, RK_NGX_MSG_MAX, "out of memory");
    else if (json_object_size(want) == 0)
        snprintf(msg, RK_NGX_MSG_MAX,
                 "every node of the topology has weight 0, and nginx refuses an upstream without "
                 "a server");
    else if (key)
        rc = read_servers(&r, upstream, nodes, key);
    else
        snprintf(msg, RK_NGX_MSG_MAX, "out of memory");
    if (rc == 0)
        rc = same_key(upstream, key, doc, msg);
    if (rc == 0) {
        splice s = {f, text, text, text + len, msg};
        rc = rewrite(&s, &p, nodes, want, doc);
    }
    out = f ? close_text(f, &out, rc, msg) : NULL;
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
