/* bench_copy_peer.c — bench_mover.sh's hands on the data servers (docs/PERFORMANCE.md, "The data
 * mover"): it fills the sources fast, and it is the peer the mover is measured against, a plain
 * pipelined copy loop over the same servers and the same moving keys.
 *
 *   bench_copy_peer fill OLD N MIN MAX SEED        every key on its owner under the topology file
 *                                                 OLD, pipelined; prints "keys= bytes="
 *   bench_copy_peer moving OLD NEW N MIN MAX SEED  the keys whose owner changes from OLD to NEW:
 *                                                 "moving= bytes=" (no I/O)
 *   bench_copy_peer copy OLD NEW N MIN MAX SEED BATCH
 *                                                 the plain loop: copies the moving keys, BATCH at
 * a time; prints "keys= bytes= seconds=" bench_copy_peer copy-per-key OLD NEW N MIN MAX SEED BATCH
 *                                                 the same keys in the mover's protocol, one key
 *                                                 at a time (a timing split, not the peer)
 *   bench_copy_peer scan STORE ADDR BATCH          one full scan of a server, as the mover's driver
 *                                                 scans (memcached: lru_crawler metadump hash;
 *                                                 Redis: SCAN COUNT BATCH): "keys= seconds="
 *   bench_copy_peer count STORE ADDR               keys on a server (curr_items, DBSIZE)
 *   bench_copy_peer flush STORE ADDR               empties a server (flush_all, FLUSHALL)
 *
 * Keys are "key:<i>" for i in [0, N); key i's value is MIN..MAX bytes (uniform, from SEED and i)
 * taken from a buffer of pseudo-random bytes, so that Redis's DUMP (LZF) does not shrink it. The
 * store is the topology's "data". The loop, per batch of moving keys of one source and one
 * destination: memcached, one libmemcached mget on the source, then a buffered `add` with noreply
 * of each value on the destination (one flush of the buffer per batch, one round trip at the end);
 * Redis, one `MIGRATE host port "" 0 10000 COPY KEYS k1 ... kn` on the source (hiredis). It carries
 * no TTLs (the benchmark sets none) and keeps no counters: it is the floor of what a copy costs. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <libmemcached/memcached.h>

#include "ringkeeper.h"

#define RANDOM_BYTES (1u << 20)
#define MAX_NODES    16

static unsigned char *random_buf;

static void die(const char *fmt, const char *what)
{
    fprintf(stderr, "bench_copy_peer: ");
    fprintf(stderr, fmt, what);
    fputc('\n', stderr);
    exit(1);
}

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct spec {
    uint64_t n, seed;
    uint32_t min, max;
} spec;

static size_t key_of(uint64_t i, char *out)
{
    return (size_t)sprintf(out, "key:%llu", (unsigned long long)i);
}

static const unsigned char *value_of(const spec *s, uint64_t i, size_t *len)
{
    uint64_t h = splitmix(s->seed ^ (i * 0x2545f4914f6cdd1dull));
    *len = s->min + (size_t)(h % (s->max - s->min + 1));
    return random_buf + (h >> 32) % (RANDOM_BYTES - s->max);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static rk_ring *ring_of(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open %s", path);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    rk_error err = {0};
    rk_topology *t = rk_topology_parse(text, n, &err);
    if (!t)
        die("bad topology %s", path);
    rk_ring *r = rk_ring_build(t, &err);
    rk_topology_free(t);
    if (!r)
        die("cannot build the ring of %s", path);
    return r;
}

static const char *store_of(const rk_ring *r)
{
    const char *data = rk_topology_data(rk_ring_topology(r));
    if (!data || (strcmp(data, "memcached") != 0 && strcmp(data, "redis") != 0))
        die("%s", "the topology's \"data\" must be memcached or redis");
    return data;
}

static void split_addr(const char *addr, char *host, size_t cap, int *port)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= cap)
        die("bad address %s", addr);
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    *port = atoi(colon + 1);
}

/* ---- raw sockets: the memcached fill, its stats, scan and flush ---- */

typedef struct sock {
    int fd;
    char in[1 << 16];
    size_t have, at;
    char out[1 << 18];
    size_t out_n;
} sock;

static sock *sock_open(const char *addr)
{
    char host[256], port_s[16];
    int port;
    split_addr(addr, host, sizeof host, &port);
    snprintf(port_s, sizeof port_s, "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, port_s, &hints, &ai) != 0)
        die("cannot resolve %s", addr);
    sock *s = calloc(1, sizeof *s);
    s->fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (s->fd < 0 || connect(s->fd, ai->ai_addr, ai->ai_addrlen) != 0)
        die("cannot connect to %s", addr);
    freeaddrinfo(ai);
    return s;
}

static void sock_flush(sock *s)
{
    size_t off = 0;
    while (off < s->out_n) {
        ssize_t w = write(s->fd, s->out + off, s->out_n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die("%s", "write failed");
        off += (size_t)w;
    }
    s->out_n = 0;
}

static void sock_put(sock *s, const void *p, size_t n)
{
    if (s->out_n + n > sizeof s->out)
        sock_flush(s);
    if (n > sizeof s->out)
        die("%s", "a write over the buffer");
    memcpy(s->out + s->out_n, p, n);
    s->out_n += n;
}

/* One line without its \r\n, NUL-terminated, in the input buffer (valid until the next read). */
static char *sock_line(sock *s)
{
    for (;;) {
        char *nl = memchr(s->in + s->at, '\n', s->have - s->at);
        if (nl) {
            char *line = s->in + s->at;
            s->at = (size_t)(nl - s->in) + 1;
            if (nl > line && nl[-1] == '\r')
                nl[-1] = 0;
            *nl = 0;
            return line;
        }
        memmove(s->in, s->in + s->at, s->have - s->at);
        s->have -= s->at;
        s->at = 0;
        if (s->have == sizeof s->in)
            die("%s", "a line over 64 KB");
        ssize_t r = read(s->fd, s->in + s->have, sizeof s->in - s->have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die("%s", "the server closed the connection");
        s->have += (size_t)r;
    }
}

static void sock_close(sock *s)
{
    close(s->fd);
    free(s);
}

static void mc_fill(const char *addr, const spec *sp, const rk_ring *r, uint32_t node,
                    uint64_t *keys, uint64_t *bytes)
{
    sock *s = sock_open(addr);
    char key[32], head[96];
    for (uint64_t i = 0; i < sp->n; i++) {
        size_t klen = key_of(i, key), vlen;
        if (rk_ring_lookup(r, key, klen) != node)
            continue;
        const unsigned char *v = value_of(sp, i, &vlen);
        int h = snprintf(head, sizeof head, "set %s 0 0 %zu noreply\r\n", key, vlen);
        sock_put(s, head, (size_t)h);
        sock_put(s, v, vlen);
        sock_put(s, "\r\n", 2);
        (*keys)++;
        *bytes += vlen;
    }
    sock_put(s, "mn\r\n", 4);
    sock_flush(s);
    const char *line = sock_line(s);
    if (strcmp(line, "MN") != 0)
        die("memcached answered the fill with '%s'", line);
    sock_close(s);
}

/* ---- hiredis ---- */

static redisContext *rd_open(const char *addr)
{
    char host[256];
    int port;
    split_addr(addr, host, sizeof host, &port);
    redisContext *c = redisConnect(host, port);
    if (!c || c->err)
        die("cannot connect to redis %s", addr);
    return c;
}

static void rd_fill(const char *addr, const spec *sp, const rk_ring *r, uint32_t node,
                    uint64_t *keys, uint64_t *bytes)
{
    redisContext *c = rd_open(addr);
    char key[32];
    size_t pending = 0;
    for (uint64_t i = 0; i <= sp->n; i++) {
        if (i < sp->n) {
            size_t klen = key_of(i, key), vlen;
            if (rk_ring_lookup(r, key, klen) != node)
                continue;
            const unsigned char *v = value_of(sp, i, &vlen);
            const char *argv[3] = {"SET", key, (const char *)v};
            size_t lens[3] = {3, klen, vlen};
            redisAppendCommandArgv(c, 3, argv, lens);
            pending++;
            (*keys)++;
            *bytes += vlen;
        }
        if (pending == 1000 || (i == sp->n && pending)) {
            for (; pending; pending--) {
                redisReply *rep;
                if (redisGetReply(c, (void **)&rep) != REDIS_OK || rep->type != REDIS_REPLY_STATUS)
                    die("a SET failed on %s", addr);
                freeReplyObject(rep);
            }
        }
    }
    redisFree(c);
}

/* ---- the plain copy loop ---- */

typedef struct node_conns {
    const char *addr;
    memcached_st *mc; /* memcached: as source (mget) and as destination (buffered noreply add) */
    memcached_st *mc_dst;
    sock *meta; /* memcached: the per-key loop's mg */
    redisContext *rd;
    char host[256];
    int port;
} node_conns;

typedef struct batch {
    uint64_t *idx;
    size_t n;
} batch;

typedef struct loop {
    const spec *sp;
    int redis, per_key;
    node_conns *old_nodes, *new_nodes;
    size_t cap;
    uint64_t keys, bytes;
    const char **argv;
    size_t *lens;
    char (*names)[32];
} loop;

static memcached_st *mc_handle(const node_conns *n, int dest)
{
    memcached_st *mc = memcached_create(NULL);
    memcached_server_add(mc, n->host, (in_port_t)n->port);
    memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
    if (dest) {
        memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_NOREPLY, 1);
        memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_BUFFER_REQUESTS, 1);
    }
    return mc;
}

/* The mover's protocol, one key at a time, without its scan, rule, throttle or reports: memcached
 * `mg key t` (a raw socket), memcached_get, memcached_add (3 round trips); Redis PTTL and DUMP
 * pipelined, then RESTORE (2 round trips). */
static void copy_per_key(loop *l, node_conns *src, node_conns *dst, batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        char key[32];
        size_t klen = key_of(b->idx[i], key), vlen;
        value_of(l->sp, b->idx[i], &vlen);
        l->bytes += vlen;
        if (l->redis) {
            redisAppendCommand(src->rd, "PTTL %b", key, klen);
            redisAppendCommand(src->rd, "DUMP %b", key, klen);
            redisReply *ttl, *dump;
            if (redisGetReply(src->rd, (void **)&ttl) != REDIS_OK ||
                redisGetReply(src->rd, (void **)&dump) != REDIS_OK ||
                dump->type != REDIS_REPLY_STRING)
                die("DUMP failed on %s", src->addr);
            redisReply *rep =
                redisCommand(dst->rd, "RESTORE %b 0 %b", key, klen, dump->str, dump->len);
            if (!rep || rep->type != REDIS_REPLY_STATUS)
                die("RESTORE failed on %s", dst->addr);
            freeReplyObject(rep);
            freeReplyObject(ttl);
            freeReplyObject(dump);
        } else {
            char cmd[64];
            int n = snprintf(cmd, sizeof cmd, "mg %s t\r\n", key);
            sock_put(src->meta, cmd, (size_t)n);
            sock_flush(src->meta);
            if (strncmp(sock_line(src->meta), "HD", 2) != 0)
                die("mg failed on %s", src->addr);
            size_t len;
            uint32_t flags;
            memcached_return_t rc;
            char *v = memcached_get(src->mc, key, klen, &len, &flags, &rc);
            if (!v)
                die("get failed on %s", src->addr);
            rc = memcached_add(dst->mc, key, klen, v, len, 0, flags);
            if (!memcached_success(rc))
                die("add failed on %s", dst->addr);
            free(v);
        }
        l->keys++;
    }
    b->n = 0;
}

static void copy_batch(loop *l, node_conns *src, node_conns *dst, batch *b)
{
    if (l->per_key) {
        copy_per_key(l, src, dst, b);
        return;
    }
    for (size_t i = 0; i < b->n; i++) {
        size_t vlen;
        l->lens[i] = key_of(b->idx[i], l->names[i]);
        l->argv[i] = l->names[i];
        value_of(l->sp, b->idx[i], &vlen);
        l->bytes += vlen;
    }
    if (l->redis) {
        char port[16];
        snprintf(port, sizeof port, "%d", dst->port);
        const char *head[8] = {"MIGRATE", dst->host, port, "", "0", "10000", "COPY", "KEYS"};
        const char **argv = l->argv - 8;
        size_t *lens = l->lens - 8;
        for (int i = 0; i < 8; i++) {
            argv[i] = head[i];
            lens[i] = strlen(head[i]);
        }
        redisReply *rep = redisCommandArgv(src->rd, (int)(8 + b->n), argv, lens);
        if (!rep || rep->type != REDIS_REPLY_STATUS)
            die("MIGRATE failed on %s", src->addr);
        freeReplyObject(rep);
        l->keys += b->n;
        b->n = 0;
        return;
    }
    memcached_return_t rc = memcached_mget(src->mc, l->argv, l->lens, b->n);
    if (!memcached_success(rc))
        die("mget failed on %s", src->addr);
    memcached_result_st res;
    memcached_result_create(src->mc, &res);
    while (memcached_fetch_result(src->mc, &res, &rc)) {
        memcached_return_t a =
            memcached_add(dst->mc_dst, memcached_result_key_value(&res),
                          memcached_result_key_length(&res), memcached_result_value(&res),
                          memcached_result_length(&res), 0, memcached_result_flags(&res));
        if (!memcached_success(a) && a != MEMCACHED_BUFFERED)
            die("add failed on %s", dst->addr);
        l->keys++;
    }
    memcached_result_free(&res);
    memcached_flush_buffers(dst->mc_dst);
    b->n = 0;
}

static void conns_open(node_conns *n, const rk_ring *r, int redis)
{
    const rk_topology *t = rk_ring_topology(r);
    for (size_t i = 0; i < rk_topology_node_count(t); i++) {
        n[i].addr = rk_topology_node(t, i)->addr;
        split_addr(n[i].addr, n[i].host, sizeof n[i].host, &n[i].port);
        if (redis) {
            n[i].rd = rd_open(n[i].addr);
        } else {
            n[i].mc = mc_handle(&n[i], 0);
            n[i].mc_dst = mc_handle(&n[i], 1);
            n[i].meta = sock_open(n[i].addr);
        }
    }
}

static void conns_close(node_conns *n, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (n[i].rd)
            redisFree(n[i].rd);
        if (n[i].mc_dst) { /* one round trip: every noreply add before it is done */
            memcached_behavior_set(n[i].mc_dst, MEMCACHED_BEHAVIOR_NOREPLY, 0);
            memcached_return_t rc;
            size_t len;
            uint32_t flags;
            free(memcached_get(n[i].mc_dst, "bench-sync", 10, &len, &flags, &rc));
            memcached_free(n[i].mc_dst);
        }
        if (n[i].mc)
            memcached_free(n[i].mc);
        if (n[i].meta)
            sock_close(n[i].meta);
    }
}

static int cmd_copy(const char *old_path, const char *new_path, const spec *sp, size_t cap,
                    int per_key)
{
    rk_ring *old_r = ring_of(old_path), *new_r = ring_of(new_path);
    const rk_topology *ot = rk_ring_topology(old_r), *nt = rk_ring_topology(new_r);
    size_t n_old = rk_topology_node_count(ot), n_new = rk_topology_node_count(nt);
    if (n_old > MAX_NODES || n_new > MAX_NODES)
        die("%s", "at most 16 nodes");
    loop l = {
        .sp = sp, .redis = strcmp(store_of(new_r), "redis") == 0, .cap = cap, .per_key = per_key};
    node_conns old_nodes[MAX_NODES] = {{0}}, new_nodes[MAX_NODES] = {{0}};
    uint32_t new_of_old[MAX_NODES]; /* old index to new index of the same id, or UINT32_MAX */
    for (size_t i = 0; i < n_old; i++) {
        new_of_old[i] = UINT32_MAX;
        for (size_t j = 0; j < n_new; j++)
            if (strcmp(rk_topology_node(ot, i)->id, rk_topology_node(nt, j)->id) == 0)
                new_of_old[i] = (uint32_t)j;
    }
    l.argv = calloc(cap + 8, sizeof *l.argv);
    l.lens = calloc(cap + 8, sizeof *l.lens);
    l.argv += 8;
    l.lens += 8;
    l.names = calloc(cap, sizeof *l.names);
    batch *b = calloc(n_old * n_new, sizeof *b);
    for (size_t i = 0; i < n_old * n_new; i++)
        b[i].idx = calloc(cap, sizeof *b[i].idx);
    double t0 = now_s();
    conns_open(old_nodes, old_r, l.redis);
    conns_open(new_nodes, new_r, l.redis);
    char key[32];
    for (uint64_t i = 0; i < sp->n; i++) {
        size_t klen = key_of(i, key);
        uint32_t from = rk_ring_lookup(old_r, key, klen), to = rk_ring_lookup(new_r, key, klen);
        if (new_of_old[from] == to)
            continue;
        batch *bt = &b[from * n_new + to];
        bt->idx[bt->n++] = i;
        if (bt->n == cap)
            copy_batch(&l, &old_nodes[from], &new_nodes[to], bt);
    }
    for (size_t from = 0; from < n_old; from++)
        for (size_t to = 0; to < n_new; to++)
            if (b[from * n_new + to].n)
                copy_batch(&l, &old_nodes[from], &new_nodes[to], &b[from * n_new + to]);
    conns_close(old_nodes, n_old);
    conns_close(new_nodes, n_new);
    double secs = now_s() - t0;
    printf("keys=%llu bytes=%llu seconds=%.3f\n", (unsigned long long)l.keys,
           (unsigned long long)l.bytes, secs);
    rk_ring_free(old_r);
    rk_ring_free(new_r);
    return 0;
}

static int cmd_moving(const char *old_path, const char *new_path, const spec *sp)
{
    rk_ring *old_r = ring_of(old_path), *new_r = ring_of(new_path);
    const rk_topology *ot = rk_ring_topology(old_r), *nt = rk_ring_topology(new_r);
    uint64_t moving = 0, bytes = 0;
    char key[32];
    for (uint64_t i = 0; i < sp->n; i++) {
        size_t klen = key_of(i, key), vlen;
        const char *from = rk_topology_node(ot, rk_ring_lookup(old_r, key, klen))->id;
        const char *to = rk_topology_node(nt, rk_ring_lookup(new_r, key, klen))->id;
        if (strcmp(from, to) == 0)
            continue;
        value_of(sp, i, &vlen);
        moving++;
        bytes += vlen;
    }
    printf("moving=%llu bytes=%llu\n", (unsigned long long)moving, (unsigned long long)bytes);
    rk_ring_free(old_r);
    rk_ring_free(new_r);
    return 0;
}

static int cmd_fill(const char *old_path, const spec *sp)
{
    rk_ring *r = ring_of(old_path);
    const rk_topology *t = rk_ring_topology(r);
    int redis = strcmp(store_of(r), "redis") == 0;
    uint64_t keys = 0, bytes = 0;
    for (size_t i = 0; i < rk_topology_node_count(t); i++) {
        if (redis)
            rd_fill(rk_topology_node(t, i)->addr, sp, r, (uint32_t)i, &keys, &bytes);
        else
            mc_fill(rk_topology_node(t, i)->addr, sp, r, (uint32_t)i, &keys, &bytes);
    }
    printf("keys=%llu bytes=%llu\n", (unsigned long long)keys, (unsigned long long)bytes);
    rk_ring_free(r);
    return 0;
}

static int cmd_server(const char *cmd, const char *store, const char *addr, size_t batch)
{
    int redis = strcmp(store, "redis") == 0;
    unsigned long long keys = 0;
    double t0 = now_s();
    if (redis) {
        redisContext *c = rd_open(addr);
        redisReply *rep = NULL;
        if (strcmp(cmd, "count") == 0) {
            rep = redisCommand(c, "DBSIZE");
            keys = rep && rep->type == REDIS_REPLY_INTEGER ? (unsigned long long)rep->integer : 0;
        } else if (strcmp(cmd, "flush") == 0) {
            rep = redisCommand(c, "FLUSHALL");
        } else { /* scan */
            char cursor[32] = "0";
            do {
                char count[16];
                snprintf(count, sizeof count, "%zu", batch);
                freeReplyObject(rep);
                rep = redisCommand(c, "SCAN %s COUNT %s", cursor, count);
                if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2)
                    die("SCAN failed on %s", addr);
                snprintf(cursor, sizeof cursor, "%s", rep->element[0]->str);
                keys += rep->element[1]->elements;
            } while (strcmp(cursor, "0") != 0);
        }
        freeReplyObject(rep);
        redisFree(c);
    } else {
        sock *s = sock_open(addr);
        const char *line;
        if (strcmp(cmd, "count") == 0) {
            sock_put(s, "stats\r\n", 7);
            sock_flush(s);
            while (strcmp(line = sock_line(s), "END") != 0)
                sscanf(line, "STAT curr_items %llu", &keys);
        } else if (strcmp(cmd, "flush") == 0) {
            sock_put(s, "flush_all\r\n", 11);
            sock_flush(s);
            if (strcmp(line = sock_line(s), "OK") != 0)
                die("flush_all: '%s'", line);
        } else {
            sock_put(s, "lru_crawler metadump hash\r\n", 27);
            sock_flush(s);
            while (strcmp(line = sock_line(s), "END") != 0)
                keys += strncmp(line, "key=", 4) == 0;
        }
        sock_close(s);
    }
    if (strcmp(cmd, "scan") == 0)
        printf("keys=%llu seconds=%.3f\n", keys, now_s() - t0);
    else if (strcmp(cmd, "count") == 0)
        printf("%llu\n", keys);
    return 0;
}

static spec spec_of(char **a)
{
    spec s = {.n = strtoull(a[0], NULL, 10),
              .min = (uint32_t)atoi(a[1]),
              .max = (uint32_t)atoi(a[2]),
              .seed = strtoull(a[3], NULL, 10)};
    if (s.min < 1 || s.max < s.min || s.max > RANDOM_BYTES / 2)
        die("%s", "bad value sizes");
    return s;
}

int main(int argc, char **argv)
{
    const char *usage =
        "usage: bench_copy_peer fill OLD N MIN MAX SEED | moving OLD NEW N MIN "
        "MAX SEED | copy[-per-key] OLD NEW N MIN MAX SEED BATCH | scan|count|flush STORE "
        "ADDR [BATCH]";
    if (argc < 2)
        die("%s", usage);
    random_buf = malloc(RANDOM_BYTES);
    uint64_t x = 42;
    for (size_t i = 0; i < RANDOM_BYTES; i += 8) {
        x = splitmix(x);
        memcpy(random_buf + i, &x, 8);
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "fill") == 0 && argc == 7) {
        spec s = spec_of(argv + 3);
        return cmd_fill(argv[2], &s);
    }
    if (strcmp(cmd, "moving") == 0 && argc == 8) {
        spec s = spec_of(argv + 4);
        return cmd_moving(argv[2], argv[3], &s);
    }
    if ((strcmp(cmd, "copy") == 0 || strcmp(cmd, "copy-per-key") == 0) && argc == 9) {
        spec s = spec_of(argv + 4);
        size_t cap = (size_t)atoi(argv[8]);
        if (cap < 1 || cap > 100000)
            die("%s", "a batch is 1 to 100000 keys");
        return cmd_copy(argv[2], argv[3], &s, cap, strcmp(cmd, "copy-per-key") == 0);
    }
    if ((strcmp(cmd, "count") == 0 || strcmp(cmd, "flush") == 0) && argc == 4)
        return cmd_server(cmd, argv[2], argv[3], 0);
    if (strcmp(cmd, "scan") == 0 && argc == 5)
        return cmd_server(cmd, argv[2], argv[3], (size_t)atoi(argv[4]));
    die("%s", usage);
    return 2;
}
