/* haproxy_read.c — the haproxy format's reader (haproxy.h): a backend's rules and servers, and
 * where each is written, from HAProxy's configuration syntax (sections, words, quotes, escapes,
 * comments); a backend as a topology. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "haproxy.h"
#include "ringkeeper.h"

#define MAX_WORDS  64   /* words of one line */
#define WORD_MAX   1024 /* bytes of one word */
#define MAX_ID     1048575
#define MAX_WEIGHT 256

/* One line of the configuration, split into words, with where each word is written. */
typedef struct line {
    char words[MAX_WORDS][WORD_MAX];
    rk_hap_span spans[MAX_WORDS];
    rk_hap_span whole; /* its '\n' included */
    int n;
    size_t number;
} line;

int rk_hap_refuse(char *msg, size_t line, const char *fmt, ...)
{
    char sentence[RK_CLI_FORMAT_MSG_MAX - 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    if (line)
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "line %zu: %s", line, sentence);
    else
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "%s", sentence);
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
static int server_options(const line *l, int from, rk_hap_options *o, char *msg)
{
    for (int i = from; i < l->n; i++) {
        const char *w = l->words[i], *arg = i + 1 < l->n ? l->words[i + 1] : "";
        int valued = !strcmp(w, "id") || !strcmp(w, "weight") || !strcmp(w, "hash-key");
        if (valued && ++i >= l->n)
            return rk_hap_refuse(msg, l->number, "%s needs a value", w);
        o->weight_word = !strcmp(w, "weight") ? i : o->weight_word;
        if (!strcmp(w, "weight") && (o->weight = (int)number(arg, 0, MAX_WEIGHT)) < 0)
            return rk_hap_refuse(msg, l->number, "weight must be 0..%d, got %s", MAX_WEIGHT, arg);
        if (!strcmp(w, "id") && (o->id = number(arg, 1, MAX_ID)) < 0)
            return rk_hap_refuse(
                msg, l->number,
                "id must be 1..%d here, got %s: HAProxy places the points of ids above "
                "that on those of smaller ones",
                MAX_ID, arg);
        if (!strcmp(w, "hash-key") && strcmp(arg, "id") != 0)
            return rk_hap_refuse(msg, l->number,
                                 "hash-key %s places the points by address; the haproxy scheme has "
                                 "HAProxy's default, the server's id",
                                 arg);
        o->backup = !strcmp(w, "backup") ? 1 : !strcmp(w, "no-backup") ? 0 : o->backup;
        o->disabled = !strcmp(w, "disabled") ? 1 : !strcmp(w, "enabled") ? 0 : o->disabled;
    }
    return 0;
}

static int read_server(const line *l, rk_hap_backend *b, char *msg)
{
    if (l->n < 3)
        return rk_hap_refuse(msg, l->number, "server needs a name and an address");
    if (strlen(l->words[2]) > RK_MAX_ADDR_BYTES)
        return rk_hap_refuse(msg, l->number, "the address is longer than %d bytes",
                             RK_MAX_ADDR_BYTES);
    if (b->n == RK_MAX_NODES)
        return rk_hap_refuse(msg, l->number, "more than %d servers", RK_MAX_NODES);
    rk_hap_server s = {.line = l->whole, .addr_word = l->spans[2], .words = {.at = l->spans[0].at}};
    rk_hap_options o = b->r.dflt; /* HAProxy takes no id in default-server: none is read there */
    o.id = 0, o.weight_word = 0;
    keep(s.name, l, 1);
    memcpy(s.addr, l->words[2], strlen(l->words[2]) + 1);
    if (server_options(l, 3, &o, msg))
        return -1;
    s.id = o.id, s.weight = o.weight, s.words.past = l->spans[l->n - 1].past;
    if (o.weight_word)
        s.weight_word = l->spans[o.weight_word];
    if (o.backup)
        return rk_hap_refuse(
            msg, l->number,
            "server %s is a backup: it serves only when every active server is down, "
            "and has no point on the active servers' ring",
            s.name);
    if (o.disabled)
        return rk_hap_refuse(
            msg, l->number,
            "server %s is disabled: it starts in maintenance, its points off the ring "
            "until it is enabled at run time",
            s.name);
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        rk_hap_server *more = realloc(b->servers, cap * sizeof *more);
        if (!more)
            return rk_hap_refuse(msg, l->number, "out of memory");
        b->servers = more, b->cap = cap;
    }
    b->servers[b->n++] = s;
    return 0;
}

/* A line of a `defaults` section or of the backend: the settings that decide where keys go. */
static int setting(const line *l, rk_hap_rules *r, char *msg)
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
static int check_rules(const rk_hap_rules *r, const char *name, char *hash, size_t size, char *msg)
{
    static const char *const rings[] = {"source", "uri", "url_param", "hash", "rdp-cookie", NULL};
    static const char *const functions[] = {"sdbm", "djb2", "wt6", "crc32", NULL};
    int hashed = !strncmp(r->balance, "hdr(", 4) || !strncmp(r->balance, "rdp-cookie(", 11);
    for (const char *const *m = rings; *m; m++)
        hashed |= !strcmp(r->balance, *m);
    if (!r->balance_line)
        return rk_hap_refuse(
            msg, 0, "backend %s has no balance: it balances round robin, not by a ring", name);
    if (!hashed)
        return rk_hap_refuse(msg, r->balance_line, "balance %s is not a consistent-hash ring",
                             r->balance);
    if (!r->hash_line || strcmp(r->method, "consistent") != 0)
        return rk_hap_refuse(
            msg, r->hash_line,
            "hash-type map-based (the default) maps keys by modulo of the total weight, "
            "not by a ring: write hash-type consistent");
    if (r->factor_line)
        return rk_hap_refuse(
            msg, r->factor_line,
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
        return rk_hap_refuse(
            msg, r->hash_line,
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
static int number_servers(rk_hap_backend *b, char *msg)
{
    long *pinned = malloc((b->n ? b->n : 1) * sizeof *pinned);
    size_t n = 0;
    if (!pinned)
        return rk_hap_refuse(msg, 0, "out of memory");
    for (size_t i = 0; i < b->n; i++)
        if (b->servers[i].id)
            pinned[n++] = b->servers[i].id;
    qsort(pinned, n, sizeof *pinned, by_value);
    int rc = 0;
    for (size_t i = 1; rc == 0 && i < n; i++)
        if (pinned[i] == pinned[i - 1])
            rc = rk_hap_refuse(msg, 0, "two servers have the id %ld", pinned[i]);
    long next = 1;
    for (size_t i = 0; rc == 0 && i < b->n; i++, next++) {
        while (!b->servers[i].id && bsearch(&next, pinned, n, sizeof *pinned, by_value))
            next++;
        if (!b->servers[i].id && next > MAX_ID)
            rc = rk_hap_refuse(msg, 0, "server %s would be numbered above %d", b->servers[i].name,
                               MAX_ID);
        b->servers[i].id = b->servers[i].id ? b->servers[i].id : -next;
    }
    free(pinned);
    return rc;
}

/* The backend's request_key: its balance, when the library takes it from a request as HAProxy
 * does; else NULL, and a line of note says so. */
static const char *request_key(const rk_hap_rules *r, char *note, size_t *at)
{
    rk_error err = {0};
    if (rk_request_key_check(RK_SCHEME_HAPROXY, r->balance_words, &err) == RK_OK)
        return r->balance_words;
    *at += (size_t)snprintf(note + *at, RK_CLI_FORMAT_MSG_MAX - *at,
                            "balance %.*s is not taken from a request here (%s): lookup "
                            "--requests is refused, lookups take keys as given\n",
                            64, r->balance_words, err.message);
    *at = *at < RK_CLI_FORMAT_MSG_MAX ? *at : RK_CLI_FORMAT_MSG_MAX - 1;
    return NULL;
}

/* The topology of the backend read, with the unpinned servers named in note. */
static json_t *topology(const rk_hap_backend *b, const char *hash, char *note)
{
    json_t *nodes = json_array();
    size_t at = 0, unpinned = 0;
    note[0] = '\0';
    const char *key = request_key(&b->r, note, &at);
    for (size_t i = 0; nodes && i < b->n; i++) {
        const rk_hap_server *s = &b->servers[i];
        char id[24];
        snprintf(id, sizeof id, "%ld", s->id < 0 ? -s->id : s->id);
        if (json_array_append_new(nodes, json_pack("{s:s, s:s, s:i}", "id", id, "addr", s->addr,
                                                   "weight", s->weight)))
            json_decref(nodes), nodes = NULL;
        if (s->id < 0 && at < RK_CLI_FORMAT_MSG_MAX && unpinned++ < 8)
            at += (size_t)snprintf(note + at, RK_CLI_FORMAT_MSG_MAX - at, "%s%s (id %s)",
                                   unpinned > 1 ? ", " : "servers without an id: ", s->name, id);
    }
    if (unpinned && at < RK_CLI_FORMAT_MSG_MAX)
        snprintf(note + at, RK_CLI_FORMAT_MSG_MAX - at,
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
static int read_backend(const char *text, size_t len, const char *name, line *l, rk_hap_backend *b,
                        char *msg)
{
    const char *s = text, *end = text + len;
    rk_hap_rules defaults = {.dflt.weight = 1}, *in = NULL;
    int found = 0;
    for (size_t number = 1; s < end; number++) {
        l->number = number;
        int split_rc = split(&s, end, l);
        if (split_rc == -2)
            return rk_hap_refuse(msg, number, "a NUL byte: the file is not text");
        if (split_rc)
            return rk_hap_refuse(msg, number, "more than %d words, or a word longer than %d bytes",
                                 MAX_WORDS - 1, WORD_MAX - 1);
        if (l->n > 0 && is_section(l->words[0])) {
            if (found)
                return 1;
            int target = (!strcmp(l->words[0], "backend") || !strcmp(l->words[0], "listen")) &&
                         l->n > 1 && !strcmp(l->words[1], name);
            if (target && l->n > 2)
                return rk_hap_refuse(msg, number,
                                     "a backend naming its defaults section (from) is not "
                                     "read here: give it the last defaults before it");
            if (!strcmp(l->words[0], "defaults"))
                defaults = (rk_hap_rules){.dflt.weight = 1};
            b->r = defaults;
            found = target;
            in = target ? &b->r : !strcmp(l->words[0], "defaults") ? &defaults : NULL;
        } else if (l->n > 0 && in && setting(l, in, msg)) {
            return -1;
        } else if (l->n > 0 && found && !strcmp(l->words[0], "server-template")) {
            return rk_hap_refuse(msg, number,
                                 "server-template makes servers from DNS at run time: "
                                 "write each server, with its id");
        } else if (l->n > 0 && found && !strcmp(l->words[0], "server") && read_server(l, b, msg)) {
            return -1;
        }
    }
    return found;
}

int rk_hap_load_backend(const char *text, size_t len, const char *name, rk_hap_backend *b,
                        char hash[2 * SHORT_MAX], char msg[RK_CLI_FORMAT_MSG_MAX])
{
    line *l = malloc(sizeof *l);
    if (!l)
        return rk_hap_refuse(msg, 0, "out of memory");
    int found = read_backend(text, len, name, l, b, msg);
    free(l);
    if (found == 0)
        return rk_hap_refuse(msg, 0, "no backend or listen section named %s", name);
    if (found == 1 && b->n == 0)
        return rk_hap_refuse(msg, 0, "backend %s has no server", name);
    return found == 1 && check_rules(&b->r, name, hash, 2 * SHORT_MAX, msg) == 0
               ? number_servers(b, msg)
               : -1;
}

json_t *rk_hap_import(const char *text, size_t len, const char *name,
                      char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX])
{
    rk_hap_backend b = {0};
    char hash[2 * SHORT_MAX];
    json_t *out = NULL;
    if (rk_hap_load_backend(text, len, name, &b, hash, msg) == 0 &&
        !(out = topology(&b, hash, note)))
        rk_hap_refuse(msg, 0, "out of memory");
    free(b.servers);
    return out;
}
