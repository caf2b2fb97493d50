/* haproxyconf.c — HAProxy backends to and from haproxy-scheme topologies (haproxyconf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "haproxyconf.h"
#include "ringkeeper.h"

#define MAX_WORDS  64   /* words of one line */
#define WORD_MAX   1024 /* bytes of one word */
#define SHORT_MAX  64   /* a setting's word (balance, hash-type) or a server's name, kept */
#define MAX_ID     1048575
#define MAX_WEIGHT 256

/* Bytes [at, past) of the configuration. */
typedef struct span {
    const char *at, *past;
} span;

/* One line of the configuration, split into words, with where each word is written. */
typedef struct line {
    char words[MAX_WORDS][WORD_MAX];
    span spans[MAX_WORDS];
    span whole; /* its '\n' included */
    int n;
    size_t number;
} line;

/* A server's options that decide its points or keep it off the ring; or default-server's. */
typedef struct options {
    int weight, backup, disabled;
    long id;         /* 0: not pinned */
    int weight_word; /* the word holding weight's value; 0: none */
} options;

/* What a `defaults` section or the backend sets that decides where keys go. */
typedef struct rules {
    char balance[SHORT_MAX], method[SHORT_MAX], function[SHORT_MAX], modifier[SHORT_MAX];
    char balance_words[RK_HAP_MSG_MAX];          /* the balance line's words, one space apart */
    size_t balance_line, hash_line, factor_line; /* 0: not set */
    options dflt;                                /* default-server's */
} rules;

typedef struct server {
    char name[SHORT_MAX], addr[RK_MAX_ADDR_BYTES + 1];
    long id; /* 0: not pinned; negative: numbered by its place */
    int weight;
    span line, addr_word, weight_word, words; /* weight_word.at NULL: none written */
} server;

typedef struct backend {
    rules r;
    server *servers;
    size_t n, cap;
} backend;

static int refuse(char *msg, size_t line, const char *fmt, ...)
{
    char sentence[RK_HAP_MSG_MAX - 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    if (line)
        snprintf(msg, RK_HAP_MSG_MAX, "line %zu: %s", line, sentence);
    else
        snprintf(msg, RK_HAP_MSG_MAX, "%s", sentence);
    return -1;
}

/* Appends byte c to word w of length *len; 0 past WORD_MAX. */
static int put(char *w, size_t *len, char c)
{
    if (*len + 1 >= WORD_MAX)
        return 0;
    w[(*len)++] = c;
    return 1;
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* The words of the line at *s, as HAProxy splits it: blanks separate words, quotes group them, a
 * backslash outside single quotes escapes the next character, an unquoted '#' starts a comment.
 * *s moves past the line; -1 for a line of too many or too long words, -2 for a line holding a
 * NUL byte (HAProxy refuses a "stray NUL character"; kept, it would end a word and the rest of the
 * line would be lost). */
static int split(const char **s, const char *end, line *l)
{
    const char *p = *s, *eol = memchr(p, '\n', (size_t)(end - p));
    int ok = 1;
    l->n = 0;
    l->whole.at = p;
    if (memchr(p, '\0', (size_t)((eol ? eol : end) - p))) {
        *s = eol ? eol + 1 : end;
        return -2;
    }
    while (ok) {
        while (p < end && blank(*p))
            p++;
        if (p >= end || *p == '\n' || *p == '#')
            break;
        char *w = l->words[l->n], quote = 0;
        size_t len = 0;
        l->spans[l->n].at = p;
        ok = l->n++ < MAX_WORDS - 1;
        while (ok && p < end && *p != '\n' && (quote || (!blank(*p) && *p != '#'))) {
            char c = *p++;
            if (c == quote || (!quote && (c == '"' || c == '\''))) {
                quote = quote ? 0 : c;
                continue;
            }
            if (c == '\\' && quote != '\'' && p < end && *p != '\n')
                c = *p++;
            ok = put(w, &len, c);
        }
        w[len] = '\0';
        l->spans[l->n - 1].past = p;
    }
    while (p < end && *p != '\n')
        p++;
    *s = l->whole.past = p < end ? p + 1 : p;
    return ok ? 0 : -1;
}

static int is_section(const char *word)
{
    static const char *const sections[] = {
        "global",  "defaults", "frontend",    "backend", "listen", "resolvers", "peers", "userlist",
        "mailers", "program",  "http-errors", "ring",    "cache",  "fcgi-app",  NULL};
    for (const char *const *s = sections; *s; s++)
        if (strcmp(word, *s) == 0)
            return 1;
    return 0;
}

static void keep(char dst[SHORT_MAX], const line *l, int i)
{
    snprintf(dst, SHORT_MAX, "%.*s", SHORT_MAX - 1, i < l->n ? l->words[i] : "");
}

/* A number lo..hi (lo >= 0) in decimal from word w, or -1. */
static long number(const char *w, long lo, long hi)
{
    if (w[0] < '0' || w[0] > '9')
        return -1; /* no sign, no blank: strtol would take them */
    char *end;
    long v = strtol(w, &end, 10);
    return v >= lo && v <= hi && *end == '\0' ? v : -1;
}

/* The server options that decide its points (id, weight, hash-key) or keep it off the ring
 * (backup, disabled), from words[from ..] into o: 0, or -1 with msg set. */
static int server_options(const line *l, int from, options *o, char *msg)
{
    for (int i = from; i < l->n; i++) {
        const char *w = l->words[i], *arg = i + 1 < l->n ? l->words[i + 1] : "";
        int valued = !strcmp(w, "id") || !strcmp(w, "weight") || !strcmp(w, "hash-key");
        if (valued && ++i >= l->n)
            return refuse(msg, l->number, "%s needs a value", w);
        o->weight_word = !strcmp(w, "weight") ? i : o->weight_word;
        if (!strcmp(w, "weight") && (o->weight = (int)number(arg, 0, MAX_WEIGHT)) < 0)
            return refuse(msg, l->number, "weight must be 0..%d, got %s", MAX_WEIGHT, arg);
        if (!strcmp(w, "id") && (o->id = number(arg, 1, MAX_ID)) < 0)
            return refuse(msg, l->number,
                          "id must be 1..%d here, got %s: HAProxy places the points of ids above "
                          "that on those of smaller ones",
                          MAX_ID, arg);
        if (!strcmp(w, "hash-key") && strcmp(arg, "id") != 0)
            return refuse(msg, l->number,
                          "hash-key %s places the points by address; the haproxy scheme has "
                          "HAProxy's default, the server's id",
                          arg);
        o->backup = !strcmp(w, "backup") ? 1 : !strcmp(w, "no-backup") ? 0 : o->backup;
        o->disabled = !strcmp(w, "disabled") ? 1 : !strcmp(w, "enabled") ? 0 : o->disabled;
    }
    return 0;
}

static int read_server(const line *l, backend *b, char *msg)
{
    if (l->n < 3)
        return refuse(msg, l->number, "server needs a name and an address");
    if (strlen(l->words[2]) > RK_MAX_ADDR_BYTES)
        return refuse(msg, l->number, "the address is longer than %d bytes", RK_MAX_ADDR_BYTES);
    if (b->n == RK_MAX_NODES)
        return refuse(msg, l->number, "more than %d servers", RK_MAX_NODES);
    server s = {.line = l->whole, .addr_word = l->spans[2], .words = {l->spans[0].at}};
    options o = b->r.dflt; /* HAProxy takes no id in default-server: none is read there */
    o.id = 0, o.weight_word = 0;
    keep(s.name, l, 1);
    memcpy(s.addr, l->words[2], strlen(l->words[2]) + 1);
    if (server_options(l, 3, &o, msg))
        return -1;
    s.id = o.id, s.weight = o.weight, s.words.past = l->spans[l->n - 1].past;
    if (o.weight_word)
        s.weight_word = l->spans[o.weight_word];
    if (o.backup)
        return refuse(msg, l->number,
                      "server %s is a backup: it serves only when every active server is down, "
                      "and has no point on the active servers' ring",
                      s.name);
    if (o.disabled)
        return refuse(msg, l->number,
                      "server %s is disabled: it starts in maintenance, its points off the ring "
                      "until it is enabled at run time",
                      s.name);
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        server *more = realloc(b->servers, cap * sizeof *more);
        if (!more)
            return refuse(msg, l->number, "out of memory");
        b->servers = more, b->cap = cap;
    }
    b->servers[b->n++] = s;
    return 0;
}

/* A line of a `defaults` section or of the backend: the settings that decide where keys go. */
static int setting(const line *l, rules *r, char *msg)
{
    const char *w = l->words[0];
    if (!strcmp(w, "balance")) {
        keep(r->balance, l, 1), r->balance_line = l->number;
        size_t at = 0;
        r->balance_words[0] = '\0';
        for (int i = 1; i < l->n && at < sizeof r->balance_words; i++)
            at += (size_t)snprintf(r->balance_words + at, sizeof r->balance_words - at, "%s%s",
                                   i > 1 ? " " : "", l->words[i]);
    }
    if (!strcmp(w, "hash-type"))
        keep(r->method, l, 1), keep(r->function, l, 2), keep(r->modifier, l, 3),
            r->hash_line = l->number;
    if (!strcmp(w, "hash-balance-factor"))
        r->factor_line = l->number;
    if (!strcmp(w, "default-server"))
        return server_options(l, 1, &r->dflt, msg);
    return 0;
}

/* The backend's balance and hash-type, checked: the hash name of the topology into hash. */
static int check_rules(const rules *r, const char *name, char *hash, size_t size, char *msg)
{
    static const char *const rings[] = {"source", "uri", "url_param", "hash", "rdp-cookie", NULL};
    static const char *const functions[] = {"sdbm", "djb2", "wt6", "crc32", NULL};
    int hashed = !strncmp(r->balance, "hdr(", 4) || !strncmp(r->balance, "rdp-cookie(", 11);
    for (const char *const *m = rings; *m; m++)
        hashed |= !strcmp(r->balance, *m);
    if (!r->balance_line)
        return refuse(msg, 0, "backend %s has no balance: it balances round robin, not by a ring",
                      name);
    if (!hashed)
        return refuse(msg, r->balance_line, "balance %s is not a consistent-hash ring", r->balance);
    if (!r->hash_line || strcmp(r->method, "consistent") != 0)
        return refuse(msg, r->hash_line,
                      "hash-type map-based (the default) maps keys by modulo of the total weight, "
                      "not by a ring: write hash-type consistent");
    if (r->factor_line)
        return refuse(msg, r->factor_line,
                      "hash-balance-factor moves keys off loaded servers at run time: no ring "
                      "says where they go");
    /* HAProxy (cfgparse-listen.c): a bare `hash-type consistent` is sdbm with the avalanche
     * modifier; a function named has none unless `avalanche` follows it. Read as plain sdbm, 80% of
     * a `balance uri` backend's URIs were placed on another server than HAProxy's. */
    const char *fn = r->function[0] ? r->function : "sdbm";
    int avalanche = r->function[0] ? r->modifier[0] != '\0' : 1;
    int known = 0;
    for (const char *const *f = functions; *f; f++)
        known |= !strcmp(fn, *f);
    if (!known || (r->modifier[0] && strcmp(r->modifier, "avalanche") != 0))
        return refuse(msg, r->hash_line,
                      "hash function %s %s: the haproxy scheme has sdbm, djb2, wt6 and crc32, "
                      "each with or without avalanche (none takes the key as its hash)",
                      fn, r->modifier);
    snprintf(hash, size, "%s%s", fn, avalanche ? "_avalanche" : "");
    return 0;
}

static int by_value(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Ids as HAProxy numbers its servers (cfgparse.c): pinned ones kept, then each other server in
 * order the first id not pinned from a counter that moves past every server. Numbered ones are
 * stored negative, to tell them apart. Refuses an id pinned twice. */
static int number_servers(backend *b, char *msg)
{
    long *pinned = malloc((b->n ? b->n : 1) * sizeof *pinned);
    size_t n = 0;
    if (!pinned)
        return refuse(msg, 0, "out of memory");
    for (size_t i = 0; i < b->n; i++)
        if (b->servers[i].id)
            pinned[n++] = b->servers[i].id;
    qsort(pinned, n, sizeof *pinned, by_value);
    int rc = 0;
    for (size_t i = 1; rc == 0 && i < n; i++)
        if (pinned[i] == pinned[i - 1])
            rc = refuse(msg, 0, "two servers have the id %ld", pinned[i]);
    long next = 1;
    for (size_t i = 0; rc == 0 && i < b->n; i++, next++) {
        while (!b->servers[i].id && bsearch(&next, pinned, n, sizeof *pinned, by_value))
            next++;
        if (!b->servers[i].id && next > MAX_ID)
            rc = refuse(msg, 0, "server %s would be numbered above %d", b->servers[i].name, MAX_ID);
        b->servers[i].id = b->servers[i].id ? b->servers[i].id : -next;
    }
    free(pinned);
    return rc;
}

/* The backend's request_key: its balance, when the library takes it from a request as HAProxy
 * does; else NULL, and a line of note says so. */
static const char *request_key(const rules *r, char *note, size_t *at)
{
    rk_error err = {0};
    if (rk_request_key_check(RK_SCHEME_HAPROXY, r->balance_words, &err) == RK_OK)
        return r->balance_words;
    *at += (size_t)snprintf(note + *at, RK_HAP_MSG_MAX - *at,
                            "balance %.*s is not taken from a request here (%s): lookup "
                            "--requests is refused, lookups take keys as given\n",
                            64, r->balance_words, err.message);
    *at = *at < RK_HAP_MSG_MAX ? *at : RK_HAP_MSG_MAX - 1;
    return NULL;
}

/* The topology of the backend read, with the unpinned servers named in note. */
static json_t *topology(const backend *b, const char *hash, char *note)
{
    json_t *nodes = json_array();
    size_t at = 0, unpinned = 0;
    note[0] = '\0';
    const char *key = request_key(&b->r, note, &at);
    for (size_t i = 0; nodes && i < b->n; i++) {
        const server *s = &b->servers[i];
        char id[24];
        snprintf(id, sizeof id, "%ld", s->id < 0 ? -s->id : s->id);
        if (json_array_append_new(nodes, json_pack("{s:s, s:s, s:i}", "id", id, "addr", s->addr,
                                                   "weight", s->weight)))
            json_decref(nodes), nodes = NULL;
        if (s->id < 0 && at < RK_HAP_MSG_MAX && unpinned++ < 8)
            at += (size_t)snprintf(note + at, RK_HAP_MSG_MAX - at, "%s%s (id %s)",
                                   unpinned > 1 ? ", " : "servers without an id: ", s->name, id);
    }
    if (unpinned && at < RK_HAP_MSG_MAX)
        snprintf(note + at, RK_HAP_MSG_MAX - at,
                 "; HAProxy numbers them by their place, so a server added or removed before "
                 "them moves their keys: pin each id (docs/LOADBALANCERS.md)");
    json_t *t =
        nodes ? json_pack("{s:s, s:s, s:o}", "scheme", "haproxy", "hash", hash, "nodes", nodes)
              : NULL;
    if (t && key && json_object_set_new(t, "request_key", json_string(key)))
        json_decref(t), t = NULL;
    return t;
}

/* Reads the configuration up to the end of section `name`: 1 found, 0 not, -1 refused. */
static int read_backend(const char *text, size_t len, const char *name, line *l, backend *b,
                        char *msg)
{
    const char *s = text, *end = text + len;
    rules defaults = {.dflt.weight = 1}, *in = NULL;
    int found = 0;
    for (size_t number = 1; s < end; number++) {
        l->number = number;
        int split_rc = split(&s, end, l);
        if (split_rc == -2)
            return refuse(msg, number, "a NUL byte: the file is not text");
        if (split_rc)
            return refuse(msg, number, "more than %d words, or a word longer than %d bytes",
                          MAX_WORDS - 1, WORD_MAX - 1);
        if (l->n > 0 && is_section(l->words[0])) {
            if (found)
                return 1;
            int target = (!strcmp(l->words[0], "backend") || !strcmp(l->words[0], "listen")) &&
                         l->n > 1 && !strcmp(l->words[1], name);
            if (target && l->n > 2)
                return refuse(msg, number,
                              "a backend naming its defaults section (from) is not "
                              "read here: give it the last defaults before it");
            if (!strcmp(l->words[0], "defaults"))
                defaults = (rules){.dflt.weight = 1};
            b->r = defaults;
            found = target;
            in = target ? &b->r : !strcmp(l->words[0], "defaults") ? &defaults : NULL;
        } else if (l->n > 0 && in && setting(l, in, msg)) {
            return -1;
        } else if (l->n > 0 && found && !strcmp(l->words[0], "server-template")) {
            return refuse(msg, number,
                          "server-template makes servers from DNS at run time: "
                          "write each server, with its id");
        } else if (l->n > 0 && found && !strcmp(l->words[0], "server") && read_server(l, b, msg)) {
            return -1;
        }
    }
    return found;
}

/* The backend (or listen section) `name` of the configuration read, its servers numbered, its
 * rules checked, the topology's hash name into hash: 0, or -1 with msg set. */
static int load_backend(const char *text, size_t len, const char *name, backend *b,
                        char hash[2 * SHORT_MAX], char *msg)
{
    line *l = malloc(sizeof *l);
    if (!l)
        return refuse(msg, 0, "out of memory");
    int found = read_backend(text, len, name, l, b, msg);
    free(l);
    if (found == 0)
        return refuse(msg, 0, "no backend or listen section named %s", name);
    if (found == 1 && b->n == 0)
        return refuse(msg, 0, "backend %s has no server", name);
    return found == 1 && check_rules(&b->r, name, hash, 2 * SHORT_MAX, msg) == 0
               ? number_servers(b, msg)
               : -1;
}

json_t *rk_hap_import(const char *text, size_t len, const char *name, char msg[RK_HAP_MSG_MAX],
                      char note[RK_HAP_MSG_MAX])
{
    backend b = {0};
    char hash[2 * SHORT_MAX];
    json_t *out = NULL;
    if (load_backend(text, len, name, &b, hash, msg) == 0 && !(out = topology(&b, hash, note)))
        refuse(msg, 0, "out of memory");
    free(b.servers);
    return out;
}

/* Refuses a topology of another scheme: no backend routes like it. */
static int check_haproxy(const json_t *doc, char msg[RK_HAP_MSG_MAX])
{
    const char *scheme = json_string_value(json_object_get(doc, "scheme"));
    if (scheme && strcmp(scheme, "haproxy") == 0 && json_is_string(json_object_get(doc, "hash")))
        return 0;
    return refuse(msg, 0,
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
    return refuse(msg, 0,
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

/* The text written to f, which is closed here, at *text: NULL (freed) when rc says a step failed
 * (msg set) or writing it failed. */
static char *close_text(FILE *f, char **text, int rc, char *msg)
{
    if (fclose(f) == 0 && rc == 0)
        return *text;
    if (rc == 0)
        refuse(msg, 0, "out of memory");
    free(*text);
    return NULL;
}

char *rk_hap_export(const json_t *doc, const char *name, const char *balance,
                    char msg[RK_HAP_MSG_MAX])
{
    if (check_haproxy(doc, msg) != 0)
        return NULL;
    char *text = NULL, hash[2 * SHORT_MAX];
    size_t size = 0, i;
    hash_words(node_text(doc, "hash"), hash);
    FILE *f = open_memstream(&text, &size);
    if (!f) {
        refuse(msg, 0, "out of memory");
        return NULL;
    }
    fprintf(f, "backend %s\n    balance %s\n    hash-type consistent %s\n", name, balance, hash);
    json_t *node;
    int rc = 0;
    json_array_foreach(json_object_get(doc, "nodes"), i, node)
    {
        if (rc == 0)
            rc = put_server(f, "    ", 4, node_text(node, "id"), node_text(node, "addr"),
                            (int)json_number_value(json_object_get(node, "weight")), msg);
    }
    return close_text(f, &text, rc, msg);
}

/* ---- Rewriting a backend's servers in place ---- */

/* Refuses a backend whose hash (hash-type's function and modifier, `have`) or balance is not the
 * topology's (its hash, its request_key when it has one): its servers alone would not route like
 * it. */
static int check_same_hash(const backend *b, const char *have, const json_t *doc, const char *name,
                           char *msg)
{
    const char *want = node_text(doc, "hash"), *key = node_text(doc, "request_key");
    char words[2 * SHORT_MAX];
    if (key && strcmp(key, b->r.balance_words) != 0)
        return refuse(msg, b->r.balance_line,
                      "backend %s balances by %s but the topology takes its keys as %s "
                      "(request_key): rewriting its servers would not route requests like the "
                      "topology",
                      name, b->r.balance_words, key);
    if (strcmp(have, want) == 0)
        return 0;
    hash_words(want, words);
    return refuse(msg, b->r.hash_line,
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

/* The rewritten text as it is written: f has the input up to `at`, then the edits. */
typedef struct splice {
    FILE *f;
    const char *at;
    char *msg;
} splice;

static void copy_to(splice *out, const char *to)
{
    fwrite(out->at, 1, (size_t)(to - out->at), out->f);
    out->at = to;
}

/* Kept server s made node `id` at `addr` of weight w: the address replaced when it is another, the
 * weight set (its word, or one written at the end), and its id pinned when it has it by its place,
 * which would change as servers before it come and go. 0, or -1 with msg set. */
static int rewrite_server(splice *out, const server *s, const char *id, const char *addr, int w)
{
    if (strcmp(addr, s->addr) != 0) {
        if (check_addr(id, addr, out->msg) != 0)
            return -1;
        copy_to(out, s->addr_word.at);
        fputs(addr, out->f);
        out->at = s->addr_word.past;
    }
    if (w != s->weight && s->weight_word.at) {
        copy_to(out, s->weight_word.at);
        fprintf(out->f, "%d", w);
        out->at = s->weight_word.past;
    }
    copy_to(out, s->words.past);
    if (w != s->weight && !s->weight_word.at)
        fprintf(out->f, " weight %d", w);
    if (s->id < 0)
        fprintf(out->f, " id %ld", -s->id);
    return 0;
}

/* The topology's nodes the backend lacks (left: id -> [addr, weight]), in its order, after the
 * backend's last server line and indented as it is: 0, or -1 with msg set, for a name a kept
 * server has (kept: name -> true) among them. */
static int put_new(splice *out, const backend *b, const char *name, const json_t *doc,
                   const json_t *left, const json_t *kept)
{
    const server *last = &b->servers[b->n - 1];
    int kept_last = out->at < last->line.past, rc = 0;
    copy_to(out, last->line.past);
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
            return refuse(out->msg, 0,
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
static int rewrite(splice *out, const backend *b, const char *name, const json_t *doc, json_t *want)
{
    json_t *left = json_copy(want), *kept = json_object();
    int rc = left && kept ? 0 : refuse(out->msg, 0, "out of memory");
    for (size_t i = 0; rc == 0 && i < b->n; i++) {
        const server *s = &b->servers[i];
        char id[24];
        snprintf(id, sizeof id, "%ld", s->id < 0 ? -s->id : s->id);
        json_t *to = json_object_get(left, id);
        if (!to) { /* a node the topology has not: its line goes */
            copy_to(out, s->line.at);
            out->at = s->line.past;
            continue;
        }
        rc = rewrite_server(out, s, id, json_string_value(json_array_get(to, 0)),
                            (int)json_integer_value(json_array_get(to, 1)));
        if (rc == 0 && (json_object_set_new_nocheck(kept, s->name, json_true()) != 0 ||
                        json_object_del(left, id) != 0))
            rc = refuse(out->msg, 0, "out of memory");
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
    char why[RK_HAP_MSG_MAX], note[RK_HAP_MSG_MAX];
    json_t *now = rk_hap_import(text, strlen(text), name, why, note);
    json_t *got = now ? routes(json_object_get(now, "nodes")) : NULL;
    int same = got && json_equal(got, want) &&
               json_equal(json_object_get(now, "hash"), json_object_get(doc, "hash"));
    json_decref(got);
    json_decref(now);
    return same ? 0
                : refuse(msg, 0,
                         "backend %.100s would not read back as the topology's servers once "
                         "rewritten (%.300s); the file was not changed",
                         name, now ? "a bug" : why);
}

char *rk_hap_into(const char *text, size_t len, const char *name, const json_t *doc,
                  char msg[RK_HAP_MSG_MAX])
{
    backend b = {0};
    char hash[2 * SHORT_MAX], *out = NULL;
    size_t size = 0;
    json_t *want = NULL;
    FILE *f = NULL;
    int rc = check_haproxy(doc, msg);
    if (rc == 0)
        rc = load_backend(text, len, name, &b, hash, msg);
    if (rc == 0)
        rc = check_same_hash(&b, hash, doc, name, msg);
    if (rc == 0 &&
        (!(want = routes(json_object_get(doc, "nodes"))) || !(f = open_memstream(&out, &size))))
        rc = refuse(msg, 0, "out of memory");
    if (rc == 0) {
        splice s = {f, text, msg};
        rc = rewrite(&s, &b, name, doc, want);
        copy_to(&s, text + len);
    }
    out = f ? close_text(f, &out, rc, msg) : NULL;
    if (out && read_back(out, name, doc, want, msg) != 0) {
        free(out);
        out = NULL;
    }
    json_decref(want);
    free(b.servers);
    return out;
}
