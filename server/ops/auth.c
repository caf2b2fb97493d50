/* auth.c — ringkeeperd's bearer tokens: loading and validating the token file, checking an
 * Authorization header in constant time, and reloading without readers ever seeing half a table.
 * Only SHA-256 digests of tokens stay in memory: comparing fixed-size digests leaks neither a
 * token's bytes nor its length, and no message can print a token it doesn't have. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <nettle/sha2.h>

#include "auth.h"

#define NAME_MAX_BYTES 64
#define TOKEN_MIN      16
#define TOKEN_MAX      256
#define MAX_TOKENS     1024 /* every check compares against all of them */
#define ANONYMOUS      "anonymous"
#define DIGEST_SIZE    SHA256_DIGEST_SIZE

typedef struct token {
    char name[NAME_MAX_BYTES + 1]; /* who the token belongs to */
    unsigned roles;                /* RKD_ROLE_* */
    uint8_t digest[DIGEST_SIZE];   /* SHA-256 of the token */
    size_t line;                   /* line of the file, for duplicate messages */
} token;

typedef struct table {
    size_t n;      /* tokens used */
    size_t cap;    /* tokens allocated */
    token *tokens; /* n entries */
} table;

struct rkd_auth {
    pthread_rwlock_t lock; /* readers: checks; writer: the swap in reload */
    table *tab;            /* current tokens (at least one), or NULL when path is NULL */
    char *path;            /* token file, or NULL: no tokens, writes as "anonymous" */
};

/* State of one pass over a token file. */
typedef struct parser {
    const char *path; /* for messages */
    size_t line;      /* current line, from 1 */
    table *tab;       /* tokens read so far */
} parser;

/* Clears memory the compiler can't prove dead otherwise (it held token bytes). */
static void wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n--)
        *v++ = 0;
}

/* A refusal of the current line: "tokens.txt:3: ...". */
static int line_err(const parser *p, rk_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int line_err(const parser *p, rk_error *err, const char *fmt, ...)
{
    char what[RK_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return rk_error_set(err, RK_EINVAL, NULL, "%s:%zu: %s", p->path, p->line, what);
}

static void table_free(table *t)
{
    if (!t)
        return;
    wipe(t->tokens, t->cap * sizeof *t->tokens);
    free(t->tokens);
    free(t);
}

static void digest_of(const char *text, size_t len, uint8_t out[DIGEST_SIZE])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, len, (const uint8_t *)text);
    sha256_digest(&ctx, DIGEST_SIZE, out);
}

static int name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

/* The name is not quoted in messages: a line written "token:name" would put a secret there. */
static int check_name(const parser *p, const char *name, size_t len, rk_error *err)
{
    if (len == 0)
        return line_err(p, err, "the name before ':' is empty; write \"name:token\"");
    if (len > NAME_MAX_BYTES)
        return line_err(p, err, "the name is longer than %d bytes", NAME_MAX_BYTES);
    for (size_t i = 0; i < len; i++) {
        if (!name_char((unsigned char)name[i]))
            return line_err(p, err, "byte %zu of the name is not one of [A-Za-z0-9._-]", i + 1);
    }
    return RK_OK;
}

/* `name` is valid by now, so messages may quote it; never the token. */
static int check_token(const parser *p, const char *name, const char *tok, size_t len,
                       rk_error *err)
{
    if (len < TOKEN_MIN)
        return line_err(p, err, "the token of \"%s\" is shorter than %d bytes", name, TOKEN_MIN);
    if (len > TOKEN_MAX)
        return line_err(p, err, "the token of \"%s\" is longer than %d bytes", name, TOKEN_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)tok[i];
        if (c <= ' ' || c > '~')
            return line_err(p, err,
                            "byte %zu of the token of \"%s\" is a space or not printable ASCII",
                            i + 1, name);
    }
    return RK_OK;
}

static const char *const role_names[] = {"publish", "approve", "admin", "client"};
#define N_ROLES (sizeof role_names / sizeof role_names[0])

void rkd_roles_text(unsigned roles, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < N_ROLES && n < size; i++) {
        if (roles & (1u << i))
            n += (size_t)snprintf(out + n, size - n, "%s%s", n ? "," : "", role_names[i]);
    }
    if (!out[0])
        snprintf(out, size, "none");
}

/* The roles after a token: "publish,approve" (blanks around names allowed); none: all of them. */
static int parse_roles(const parser *p, const char *name, const char *s, size_t len,
                       unsigned *roles, rk_error *err)
{
    *roles = 0;
    for (size_t at = 0; at < len;) {
        while (at < len && (s[at] == ' ' || s[at] == '\t' || s[at] == ','))
            at++;
        size_t n = 0;
        while (at + n < len && s[at + n] != ',' && s[at + n] != ' ' && s[at + n] != '\t')
            n++;
        size_t i = 0;
        while (n && i < N_ROLES && (strlen(role_names[i]) != n || memcmp(role_names[i], s + at, n)))
            i++;
        if (n && i == N_ROLES)
            return line_err(p, err,
                            "the roles of \"%s\" name one that is not publish, approve, admin or "
                            "client",
                            name);
        *roles |= n ? 1u << i : 0;
        at += n;
    }
    if (!*roles)
        *roles = RKD_ROLES_ALL; /* a line without roles: today's token, which may do anything */
    return RK_OK;
}

static int check_unique(const parser *p, const token *t, rk_error *err)
{
    for (size_t i = 0; i < p->tab->n; i++) {
        const token *o = &p->tab->tokens[i];
        if (strcmp(o->name, t->name) == 0)
            return line_err(p, err, "the name \"%s\" is already used on line %zu", t->name,
                            o->line);
        if (memcmp(o->digest, t->digest, DIGEST_SIZE) == 0)
            return line_err(p, err, "the token of \"%s\" is the same as that of \"%s\" (line %zu)",
                            t->name, o->name, o->line);
    }
    return RK_OK;
}

/* Doubles the room; not realloc, which could leave token digests behind in freed memory. */
static int grow(table *tab)
{
    size_t cap = tab->cap ? tab->cap * 2 : 8;
    token *grown = calloc(cap, sizeof *grown);
    if (!grown)
        return -1;
    if (tab->n)
        memcpy(grown, tab->tokens, tab->n * sizeof *grown);
    wipe(tab->tokens, tab->cap * sizeof *tab->tokens);
    free(tab->tokens);
    tab->tokens = grown;
    tab->cap = cap;
    return 0;
}

static int append(parser *p, const token *t, rk_error *err)
{
    table *tab = p->tab;
    if (tab->n == MAX_TOKENS)
        return line_err(p, err, "more than %d tokens", MAX_TOKENS);
    if (tab->n == tab->cap && grow(tab) != 0)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory reading %s", p->path);
    tab->tokens[tab->n++] = *t;
    return RK_OK;
}

static int is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] != ' ' && s[i] != '\t')
            return 0;
    }
    return 1;
}

/* One line of `len` bytes, its "\n" or "\r\n" included; may contain NUL bytes. */
static int parse_line(parser *p, const char *line, size_t len, rk_error *err)
{
    if (len > 0 && line[len - 1] == '\n')
        len--;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (is_blank(line, len) || line[0] == '#')
        return RK_OK;
    const char *colon = memchr(line, ':', len);
    if (!colon)
        return line_err(p, err, "expected \"name:token\", found no ':'");
    size_t name_len = (size_t)(colon - line);
    int rc = check_name(p, line, name_len, err);
    if (rc != RK_OK)
        return rc;
    token t = {.line = p->line};
    memcpy(t.name, line, name_len);
    const char *tok = colon + 1;
    size_t rest = len - name_len - 1, tok_len = strcspn(tok, " \t");
    tok_len = tok_len < rest ? tok_len : rest; /* a token has no blank: the roles follow one */
    rc = check_token(p, t.name, tok, tok_len, err);
    if (rc == RK_OK)
        rc = parse_roles(p, t.name, tok + tok_len, rest - tok_len, &t.roles, err);
    if (rc != RK_OK)
        return rc;
    digest_of(tok, tok_len, t.digest);
    rc = check_unique(p, &t, err);
    if (rc == RK_OK)
        rc = append(p, &t, err);
    wipe(&t, sizeof t);
    return rc;
}

static int parse_file(parser *p, FILE *f, rk_error *err)
{
    char *line = NULL;
    size_t cap = 0;
    int rc = RK_OK;
    for (;;) {
        ssize_t len = getline(&line, &cap, f);
        if (len < 0)
            break;
        p->line++;
        rc = parse_line(p, line, (size_t)len, err);
        if (rc != RK_OK)
            break;
    }
    if (rc == RK_OK && ferror(f))
        rc = rk_error_set(err, RK_EIO, NULL, "cannot read %s: %s", p->path, strerror(errno));
    /* An empty file would silently open every write to anyone: refuse it. */
    if (rc == RK_OK && p->tab->n == 0)
        rc = rk_error_set(err, RK_EINVAL, NULL,
                          "%s has no tokens; add \"name:token\" lines or run without --token-file",
                          p->path);
    wipe(line, cap);
    free(line);
    return rc;
}

/* Refuses a file others may read or its group may change, as ssh refuses such a key: anyone on the
 * machine could publish with its tokens, or add their own. Group read stays allowed, for a service
 * that gets the file through a group (docs/OPERATIONS.md). */
static int check_mode(const char *what, const char *path, FILE *f, rk_error *err)
{
    struct stat st;
    if (fstat(fileno(f), &st) != 0)
        return rk_error_set(err, RK_EIO, NULL, "cannot stat %s %s: %s", what, path,
                            strerror(errno));
    if (st.st_mode & (S_IWGRP | S_IRWXO))
        return rk_error_set(err, RK_EINVAL, NULL,
                            "%s %s has mode 0%03o: others can read it or its group can change it; "
                            "refused (chmod 600 %s, or 640 for a group that only reads)",
                            what, path, (unsigned)(st.st_mode & 0777), path);
    return RK_OK;
}

/* Reads and validates the whole file into a new table; nothing is kept on error. */
static int load(const char *path, table **out, rk_error *err)
{
    parser p = {.path = path, .tab = calloc(1, sizeof(table))};
    if (!p.tab)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory reading %s", path);
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        table_free(p.tab);
        return rk_error_set(err, RK_EIO, NULL, "cannot open the token file %s: %s", path,
                            strerror(e));
    }
    int rc = check_mode("the token file", path, f, err);
    if (rc == RK_OK)
        rc = parse_file(&p, f, err);
    fclose(f);
    if (rc != RK_OK) {
        table_free(p.tab);
        return rc;
    }
    *out = p.tab;
    return RK_OK;
}

rkd_auth *rkd_auth_new(const char *path, rk_error *err)
{
    rkd_auth *a = calloc(1, sizeof *a);
    if (!a) {
        rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    pthread_rwlock_init(&a->lock, NULL);
    if (!path)
        return a;
    a->path = strdup(path);
    int rc =
        a->path ? load(path, &a->tab, err) : rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    if (rc != RK_OK) {
        rkd_auth_free(a);
        return NULL;
    }
    return a;
}

void rkd_auth_free(rkd_auth *a)
{
    if (!a)
        return;
    table_free(a->tab);
    free(a->path);
    pthread_rwlock_destroy(&a->lock);
    free(a);
}

int rkd_auth_reload(rkd_auth *a, rk_error *err)
{
    if (!a->path)
        return RK_OK;
    table *fresh = NULL;
    int rc = load(a->path, &fresh, err);
    if (rc != RK_OK)
        return rc;
    pthread_rwlock_wrlock(&a->lock);
    table *old = a->tab;
    a->tab = fresh;
    pthread_rwlock_unlock(&a->lock);
    table_free(old);
    return RK_OK;
}

/* Fixed for the object's life: a token file can't be reloaded into having no tokens. */
int rkd_auth_enabled(rkd_auth *a)
{
    return a->path != NULL;
}

/* The token of "Bearer <token>": scheme in any case, one space or more, trailing blanks
 * dropped. Non-zero when there is none. */
static int bearer_token(const char *h, const char **tok, size_t *len)
{
    if (!h)
        return -1;
    while (*h == ' ' || *h == '\t')
        h++;
    if (strncasecmp(h, "Bearer", 6) != 0 || h[6] != ' ')
        return -1;
    h += 6;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    *tok = h;
    *len = n;
    return n == 0 ? -1 : 0;
}

/* The token whose digest is `d`, or NULL. Looks at every token and every byte, branch-free, so
 * the time says nothing about which bytes or which token matched. */
static const token *find(const table *t, const uint8_t d[DIGEST_SIZE])
{
    size_t hit = t->n;
    for (size_t i = 0; i < t->n; i++) {
        uint32_t diff = 0;
        for (size_t j = 0; j < DIGEST_SIZE; j++)
            diff |= (uint32_t)(t->tokens[i].digest[j] ^ d[j]);
        size_t equal = (size_t)((diff - 1u) >> 31); /* 1 only when diff == 0 (diff <= 255) */
        size_t mask = (size_t)0 - equal;
        hit = (hit & ~mask) | (i & mask);
    }
    return hit < t->n ? &t->tokens[hit] : NULL;
}

static void copy_name(char *out, size_t size, const char *name)
{
    if (out && size > 0)
        snprintf(out, size, "%s", name);
}

int rkd_auth_check(rkd_auth *a, const char *authorization, char *name_out, size_t name_size,
                   unsigned *roles)
{
    unsigned ignored;
    roles = roles ? roles : &ignored;
    *roles = RKD_ROLES_ALL;
    if (!rkd_auth_enabled(a)) {
        copy_name(name_out, name_size, ANONYMOUS);
        return RKD_AUTH_OK;
    }
    const char *tok;
    size_t len;
    if (bearer_token(authorization, &tok, &len) != 0)
        return RKD_AUTH_MISSING;
    uint8_t digest[DIGEST_SIZE];
    digest_of(tok, len, digest); /* outside the lock: reloads wait less */
    pthread_rwlock_rdlock(&a->lock);
    const token *hit = find(a->tab, digest);
    if (hit)
        copy_name(name_out, name_size, hit->name);
    *roles = hit ? hit->roles : 0;
    pthread_rwlock_unlock(&a->lock);
    return hit ? RKD_AUTH_OK : RKD_AUTH_WRONG;
}

int rkd_read_secret(const char *what, const char *path, char **out, rk_error *err)
{
    char buf[RKD_SECRET_MAX + 2];
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f)
        return rk_error_set(err, RK_EINVAL, NULL, "cannot open %s %s: %s", what, path,
                            strerror(errno));
    int rc = check_mode(what, path, f, err);
    size_t n = rc ? 0 : fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0'; /* the first line: `echo secret > file` adds a newline */
    if (rc == RK_OK && (n > RKD_SECRET_MAX || buf[0] == '\0'))
        rc = rk_error_set(err, RK_EINVAL, NULL, "%s %s must hold one line of 1..%d bytes", what,
                          path, RKD_SECRET_MAX);
    *out = rc ? NULL : strdup(buf);
    if (rc == RK_OK && !*out)
        rc = rk_error_set(err, RK_ENOMEM, NULL, "out of memory");
    wipe(buf, sizeof buf);
    return rc;
}
