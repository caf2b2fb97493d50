/* rk_workload.c — a cache's traffic against a real memcached or Redis fleet, to measure what a
 * topology change costs the application (issue 23, part 1; docs/PERFORMANCE.md, "Zero cold reads").
 *
 * A key set wl:0 .. wl:<N-1> (default 200,000), chosen with Zipf popularity (default s = 0.99; wl:0
 * is the hottest), 90% reads, values of 100 B to 4 KB. One thread, one connection per data node.
 *
 *   --via ringkeeper --server URL --cluster C
 *       a libringkeeper client (rk_client) with the background refresher long-polling; each
 *       operation acquires the snapshot and routes the key by it. While the snapshot has a
 *       previous ring whose owner differs (a migration window), a read that misses on the owner
 *       now reads the previous owner: a "dual read" when found there, which is then put on the
 *       owner now with add-if-absent ("repairs"), as docs/MIGRATE.md says a cache does. Writes go
 *       to the owner now only. --no-dual-read: an application that reads the owner now only.
 *   --via nutcracker --proxy HOST:PORT
 *       every operation through one connection to a nutcracker (twemproxy) in front of the fleet;
 *       when it goes away (a restart with a new pool) the operation is retried on a new connection.
 *
 * Every value starts with a header "rkwl <seq> <key index> <length>;" where seq is the key's write
 * sequence number (1 for the fill); the generator keeps the last acknowledged seq of every key (its
 * "database"), so a read that returns a smaller seq is a stale read (and one that is not this
 * key's value at all is "corrupt"). A hit is a read that returned a value, from the owner now or
 * by a dual read. A read that misses counts a miss and, as a cache in front of a database does,
 * loads the key's current value from the database (the generator's memory: its last acknowledged
 * seq, at the fill's length) and adds it to the owner: a database load. Reads that fail
 * (connection down past the retry deadline) count as errors, neither hit nor miss.
 *
 * --fill first writes every key (seq 1; its length a function of the key and the seed), pipelined
 * 256 a round trip per node (memcached: the text protocol on a socket of its own; Redis: hiredis),
 * so a run with no change has no miss. Then it runs --seconds S, at --rate ops/s (0: as fast as
 * it goes), and writes a line per 100 ms to --out (CSV with a header, or --format jsonl):
 *   t,unix_ms,reads,hits,misses,dual_reads,stale_reads,writes,db_loads,repairs,errors,corrupt,
 *   p99_us,version,previous
 * t is the end of the interval in seconds from the start of the run; unix_ms the same instant on
 * the wall clock (to line the run up with a change made by a script); p99_us the 99th percentile
 * of the operations' latency in the interval (an operation is all it did: both reads, the load,
 * the retries), 0 when none; version and previous the ring in service at the end of the interval
 * (0 in nutcracker mode). At the end one JSON line of totals goes to stdout: the same counters
 * over the run, stale_keys (keys read stale at least once), p50/p99/p999 latency, the version.
 *
 * Bounded: every operation gives up after --op-timeout ms (default 3000) of retries, the run after
 * --seconds; SIGINT or SIGTERM end it early, cleanly (the totals are still printed).
 * Exit codes: 0 ran, 1 failed (no ring, the fill failed, a write error on --out), 2 bad usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <libmemcached/memcached.h>
#include <ringkeeper.h>

#define KEY_MAX        32
#define VALUE_MAX      (64 * 1024)
#define HEADER_MAX     64
#define TICK_NS        100000000LL /* one output line per 100 ms */
#define MAX_CONNS      256         /* data nodes (distinct addresses) at most */
#define FILL_BATCH     256         /* keys a fill pipeline holds per node */
#define HIST_BUCKETS   1664        /* latency histogram: see hist_index */
#define CATCH_UP_NS    100000000LL /* --rate: a backlog over 100 ms is dropped, not burst */
#define RETRY_PAUSE_NS 10000000L   /* 10 ms between the tries of a failed operation */

typedef enum { STORE_MEMCACHED, STORE_REDIS } store_kind;
typedef enum { VIA_RINGKEEPER, VIA_NUTCRACKER } via_kind;

typedef struct options {
    store_kind store;
    int store_set;
    via_kind via;
    const char *server, *cluster, *proxy, *out, *client_id, *token, *written;
    int jsonl;
    long keys;
    double zipf, read_ratio, seconds, rate;
    long min_value, max_value;
    uint64_t seed;
    int fill, dual_read;
    long op_timeout_ms;
    unsigned poll_wait_s;
} options;

/* One connection to one data node (or to the proxy), made again after a failure. */
typedef struct conn {
    char addr[256];
    char host[256];
    int port;
    memcached_st *mc;
    redisContext *rd;
    long pending; /* the fill's commands not answered yet (its pipeline) */
    /* the fill's pipeline to memcached: a socket of its own, the text protocol by hand */
    int fill_fd;
    char *fill_buf; /* commands not sent yet */
    size_t fill_used, fill_cap;
} conn;

/* Counters of an interval or of the whole run. */
typedef struct counters {
    uint64_t reads, hits, misses, dual_reads, stale_reads, writes, db_loads, repairs, errors,
        corrupt, ops;
} counters;

typedef struct hist {
    uint32_t b[HIST_BUCKETS];
    uint64_t n;
} hist;

static const options *opt;
static volatile sig_atomic_t stop_flag;
static conn conns[MAX_CONNS];
static size_t nconns;
static uint32_t *acked;     /* per key: the last acknowledged write's seq (the database) */
static uint32_t *fill_len;  /* per key: its fill value's length */
static uint8_t *stale_seen; /* per key: a stale read of it was counted */
static uint64_t stale_keys; /* keys read stale at least once */
static double *zipf_cdf;
static char value_buf[VALUE_MAX];

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("rk_workload: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void usage(const char *why)
{
    if (why)
        fprintf(stderr, "rk_workload: %s\n", why);
    fputs("usage: rk_workload --via ringkeeper --server URL --cluster C [options]\n"
          "       rk_workload --via nutcracker --proxy HOST:PORT [options]\n"
          "  --store memcached|redis   the data servers (ringkeeper: default the topology's data)\n"
          "  --keys N         key set wl:0..wl:N-1 (default 200000)\n"
          "  --zipf S         Zipf exponent of the keys' popularity (default 0.99; 0: uniform)\n"
          "  --reads R        share of reads, 0..1 (default 0.9)\n"
          "  --min-value B    smallest value (default 100)\n"
          "  --max-value B    largest value (default 4096, at most 65536)\n"
          "  --seconds S      run time after the fill (default 30)\n"
          "  --rate OPS       operations per second, 0 as fast as it goes (default 0)\n"
          "  --seed N         the random sequence (default 1)\n"
          "  --fill           write every key first (seq 1), pipelined\n"
          "  --no-dual-read   never read the previous owner (ringkeeper)\n"
          "  --out FILE       a line per 100 ms (default: none)\n"
          "  --format csv|jsonl   of --out (default csv)\n"
          "  --written FILE   at the end, \"key<TAB>seq\" for each key written in the run\n"
          "  --client-id ID   RK-Client of the ringkeeper client (default rk-workload:<pid>)\n"
          "  --token T        the client's bearer token (default $RINGKEEPER_TOKEN): one with the\n"
          "                   client role counts it in the fleet report as authenticated\n"
          "  --poll-wait S    the refresher's long poll, 1..60 s (default 30)\n"
          "  --op-timeout MS  an operation's retries end after MS (default 3000)\n",
          stderr);
    exit(2);
}

/* ---- clocks, random numbers ---- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ns(int64_t ns)
{
    if (ns <= 0)
        return;
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    nanosleep(&ts, NULL); /* a signal cuts it short: the loop checks stop_flag */
}

static uint64_t rng_state;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rng_unit(void)
{
    return (double)(splitmix(&rng_state) >> 11) * (1.0 / 9007199254740992.0);
}

static long rng_range(long lo, long hi)
{
    return lo + (long)(splitmix(&rng_state) % (uint64_t)(hi - lo + 1));
}

/* The Zipf CDF over ranks 1..N: P(rank <= k) = sum_{i<=k} i^-s / H. */
static void zipf_init(void)
{
    zipf_cdf = malloc((size_t)opt->keys * sizeof *zipf_cdf);
    if (!zipf_cdf)
        die("out of memory");
    double sum = 0;
    for (long i = 0; i < opt->keys; i++) {
        sum += pow((double)(i + 1), -opt->zipf);
        zipf_cdf[i] = sum;
    }
    for (long i = 0; i < opt->keys; i++)
        zipf_cdf[i] /= sum;
    zipf_cdf[opt->keys - 1] = 1.0;
}

/* A key index, 0 the most popular. */
static long zipf_pick(void)
{
    double u = rng_unit();
    long lo = 0, hi = opt->keys - 1;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (zipf_cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- latency histogram: exact below 128 us, then 64 buckets per power of two (1.6%) ---- */

static int hist_index(uint64_t us)
{
    if (us < 128)
        return (int)us;
    int e = 63 - __builtin_clzll(us);
    if (e > 30)
        return HIST_BUCKETS - 1;
    return 128 + (e - 7) * 64 + (int)((us >> (e - 6)) & 63);
}

static uint64_t hist_upper(int i)
{
    if (i < 128)
        return (uint64_t)i;
    int e = (i - 128) / 64 + 7, sub = (i - 128) % 64;
    return (((uint64_t)64 + (uint64_t)sub) << (e - 6)) + ((uint64_t)1 << (e - 6)) - 1;
}

static void hist_add(hist *h, uint64_t us)
{
    h->b[hist_index(us)]++;
    h->n++;
}

/* The q-quantile's bucket upper bound in us, 0 for no sample. */
static uint64_t hist_quantile(const hist *h, double q)
{
    if (!h->n)
        return 0;
    uint64_t want = (uint64_t)ceil(q * (double)h->n), seen = 0;
    if (want < 1)
        want = 1;
    for (int i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= want)
            return hist_upper(i);
    }
    return hist_upper(HIST_BUCKETS - 1);
}

/* ---- values ---- */

static size_t key_of(long i, char *out)
{
    return (size_t)snprintf(out, KEY_MAX, "wl:%ld", i);
}

/* The value of key i at seq, `len` bytes: the header, then bytes that depend on both. */
static size_t make_value(long i, uint32_t seq, size_t len, char *out)
{
    int h = snprintf(out, HEADER_MAX, "rkwl %" PRIu32 " %ld %zu;", seq, i, len);
    if ((size_t)h > len)
        len = (size_t)h;
    for (size_t j = (size_t)h; j < len; j++)
        out[j] = (char)('a' + (j + seq + (size_t)i) % 26);
    return len;
}

static size_t fill_length(long i)
{
    uint64_t s = opt->seed * 0x2545f4914f6cdd1dULL + (uint64_t)i;
    return (size_t)(opt->min_value +
                    (long)(splitmix(&s) % (uint64_t)(opt->max_value - opt->min_value + 1)));
}

/* The seq a value read for key i carries; -1 when it is not one of this key's values. */
static int64_t value_seq(long i, const char *v, size_t len)
{
    char head[HEADER_MAX];
    size_t n = len < sizeof head - 1 ? len : sizeof head - 1;
    memcpy(head, v, n);
    head[n] = 0;
    uint32_t seq;
    long key;
    size_t vlen;
    int used = 0;
    if (sscanf(head, "rkwl %" SCNu32 " %ld %zu;%n", &seq, &key, &vlen, &used) != 3 || !used ||
        key != i || vlen != len)
        return -1;
    return seq;
}

/* ---- connections ---- */

static int split_addr(const char *addr, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || (size_t)(colon - addr) >= hostlen)
        return -1;
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p < 1 || p > 65535)
        return -1;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    *port = (int)p;
    return 0;
}

static void conn_close(conn *c)
{
    if (c->mc)
        memcached_free(c->mc);
    if (c->rd)
        redisFree(c->rd);
    c->mc = NULL;
    c->rd = NULL;
}

static memcached_st *mc_new(const conn *c)
{
    memcached_st *mc = memcached_create(NULL);
    if (!mc)
        return NULL;
    memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
    memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, 1000);
    memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, 1000);
    if (memcached_server_add(mc, c->host, (in_port_t)c->port) != MEMCACHED_SUCCESS) {
        memcached_free(mc);
        return NULL;
    }
    return mc;
}

/* Connects when not connected; 0 or -1. */
static int conn_open(conn *c)
{
    if (opt->store == STORE_MEMCACHED) {
        if (!c->mc)
            c->mc = mc_new(c);
        return c->mc ? 0 : -1;
    }
    if (c->rd)
        return 0;
    struct timeval tv = {1, 0};
    c->rd = redisConnectWithTimeout(c->host, c->port, tv);
    if (!c->rd || c->rd->err) {
        conn_close(c);
        return -1;
    }
    redisSetTimeout(c->rd, tv);
    return 0;
}

static conn *conn_for(const char *addr)
{
    for (size_t i = 0; i < nconns; i++)
        if (strcmp(conns[i].addr, addr) == 0)
            return &conns[i];
    if (nconns == MAX_CONNS)
        die("more than %d data nodes", MAX_CONNS);
    conn *c = &conns[nconns];
    memset(c, 0, sizeof *c);
    c->fill_fd = -1;
    if (strlen(addr) >= sizeof c->addr || split_addr(addr, c->host, sizeof c->host, &c->port) != 0)
        die("a node's address is not host:port: %s", addr);
    strcpy(c->addr, addr);
    nconns++;
    return c;
}

/* Outcomes of one try of a command. */
enum { OP_OK = 0, OP_MISS = 1, OP_FAIL = -1 };

/* get: OP_OK with the value in value_buf (*len), OP_MISS, or OP_FAIL (the connection is closed). */
static int try_get(conn *c, const char *key, size_t klen, size_t *len)
{
    if (conn_open(c) != 0)
        return OP_FAIL;
    if (opt->store == STORE_MEMCACHED) {
        memcached_return_t rc;
        uint32_t flags;
        size_t vlen = 0;
        char *v = memcached_get(c->mc, key, klen, &vlen, &flags, &rc);
        if (rc == MEMCACHED_NOTFOUND) {
            free(v);
            return OP_MISS;
        }
        if (rc != MEMCACHED_SUCCESS || !v) {
            free(v);
            conn_close(c);
            return OP_FAIL;
        }
        *len = vlen < VALUE_MAX ? vlen : VALUE_MAX;
        memcpy(value_buf, v, *len);
        free(v);
        return OP_OK;
    }
    redisReply *r = redisCommand(c->rd, "GET %b", key, klen);
    if (!r) {
        conn_close(c);
        return OP_FAIL;
    }
    int out = OP_FAIL;
    if (r->type == REDIS_REPLY_NIL) {
        out = OP_MISS;
    } else if (r->type == REDIS_REPLY_STRING) {
        *len = r->len < VALUE_MAX ? r->len : VALUE_MAX;
        memcpy(value_buf, r->str, *len);
        out = OP_OK;
    }
    freeReplyObject(r);
    if (out == OP_FAIL)
        conn_close(c);
    return out;
}

/* set (always) or add (only when absent): OP_OK when stored, OP_MISS when add found it there. */
static int try_store(conn *c, const char *key, size_t klen, const char *v, size_t len, int add)
{
    if (conn_open(c) != 0)
        return OP_FAIL;
    if (opt->store == STORE_MEMCACHED) {
        memcached_return_t rc = add ? memcached_add(c->mc, key, klen, v, len, 0, 0)
                                    : memcached_set(c->mc, key, klen, v, len, 0, 0);
        if (rc == MEMCACHED_SUCCESS)
            return OP_OK;
        if (add && (rc == MEMCACHED_NOTSTORED || rc == MEMCACHED_DATA_EXISTS))
            return OP_MISS;
        conn_close(c);
        return OP_FAIL;
    }
    redisReply *r = add ? redisCommand(c->rd, "SET %b %b NX", key, klen, v, len)
                        : redisCommand(c->rd, "SET %b %b", key, klen, v, len);
    if (!r) {
        conn_close(c);
        return OP_FAIL;
    }
    int out = OP_FAIL;
    if (r->type == REDIS_REPLY_STATUS)
        out = OP_OK;
    else if (add && r->type == REDIS_REPLY_NIL)
        out = OP_MISS;
    freeReplyObject(r);
    if (out == OP_FAIL)
        conn_close(c);
    return out;
}

/* The retry loop of one command: tries until it answers or the deadline passes. */
static int64_t op_deadline;

static int retry_pause(void)
{
    if (stop_flag || now_ns() >= op_deadline)
        return 0;
    sleep_ns(RETRY_PAUSE_NS);
    return 1;
}

static int do_get(conn *c, const char *key, size_t klen, size_t *len)
{
    int rc;
    while ((rc = try_get(c, key, klen, len)) == OP_FAIL && retry_pause())
        ;
    return rc;
}

static int do_store(conn *c, const char *key, size_t klen, const char *v, size_t len, int add)
{
    int rc;
    while ((rc = try_store(c, key, klen, v, len, add)) == OP_FAIL && retry_pause())
        ;
    return rc;
}

/* ---- the fill: every key once, seq 1, pipelined per node ---- */

/* A blocking socket to host:port with 10 s send and receive timeouts, or -1. */
static int sock_open(const char *host, int port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    if (getaddrinfo(host, service, &hints, &ai) != 0)
        return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    struct timeval tv = {10, 0};
    if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
                    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
                    connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* Sends the fill's buffered commands and reads an answer to each: every one must be STORED. */
static void mc_fill_drain(conn *c)
{
    for (size_t off = 0; off < c->fill_used;) {
        ssize_t n = send(c->fill_fd, c->fill_buf + off, c->fill_used - off, 0);
        if (n <= 0)
            die("fill: memcached %s: send: %s", c->addr, n ? strerror(errno) : "closed");
        off += (size_t)n;
    }
    c->fill_used = 0;
    char buf[4096];
    size_t have = 0;
    while (c->pending > 0) {
        char *eol = memchr(buf, '\n', have);
        if (!eol) {
            if (have == sizeof buf)
                die("fill: memcached %s: an answer too long", c->addr);
            ssize_t n = recv(c->fill_fd, buf + have, sizeof buf - have, 0);
            if (n <= 0)
                die("fill: memcached %s: recv: %s", c->addr, n ? strerror(errno) : "closed");
            have += (size_t)n;
            continue;
        }
        size_t line = (size_t)(eol - buf) + 1;
        if (line != 8 || memcmp(buf, "STORED\r\n", 8) != 0)
            die("fill: memcached %s answered: %.*s", c->addr, (int)line, buf);
        memmove(buf, buf + line, have - line);
        have -= line;
        c->pending--;
    }
    if (have)
        die("fill: memcached %s: more answers than commands", c->addr);
}

static void fill_drain(conn *c)
{
    if (opt->store == STORE_MEMCACHED) {
        if (c->fill_fd >= 0)
            mc_fill_drain(c);
        return;
    }
    for (; c->pending > 0; c->pending--) {
        redisReply *r;
        if (redisGetReply(c->rd, (void **)&r) != REDIS_OK)
            die("fill: redis %s: %s", c->addr, c->rd->errstr);
        int good = r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (!good)
            die("fill: redis %s refused a SET", c->addr);
    }
}

/* One SET of the fill, pipelined: FILL_BATCH commands a round trip on each node. */
static void fill_one(conn *c, const char *key, size_t klen, const char *v, size_t len)
{
    if (opt->store == STORE_MEMCACHED) {
        if (c->fill_fd < 0 && (c->fill_fd = sock_open(c->host, c->port)) < 0)
            die("fill: cannot connect to memcached %s: %s", c->addr, strerror(errno));
        size_t need = c->fill_used + klen + len + 64;
        if (need > c->fill_cap) {
            size_t cap = need * 2;
            char *b = realloc(c->fill_buf, cap);
            if (!b)
                die("out of memory");
            c->fill_buf = b;
            c->fill_cap = cap;
        }
        c->fill_used += (size_t)sprintf(c->fill_buf + c->fill_used, "set %.*s 0 0 %zu\r\n",
                                        (int)klen, key, len);
        memcpy(c->fill_buf + c->fill_used, v, len);
        memcpy(c->fill_buf + c->fill_used + len, "\r\n", 2);
        c->fill_used += len + 2;
    } else {
        if (conn_open(c) != 0)
            die("fill: cannot connect to redis %s", c->addr);
        if (redisAppendCommand(c->rd, "SET %b %b", key, klen, v, len) != REDIS_OK)
            die("fill: redis %s: out of memory", c->addr);
    }
    if (++c->pending >= FILL_BATCH)
        fill_drain(c);
}

/* After the fill: every command sent and answered; the fill's sockets closed. */
static void fill_sync(void)
{
    for (size_t i = 0; i < nconns; i++) {
        conn *c = &conns[i];
        fill_drain(c);
        if (c->fill_fd >= 0)
            close(c->fill_fd);
        c->fill_fd = -1;
        free(c->fill_buf);
        c->fill_buf = NULL;
        c->fill_used = c->fill_cap = 0;
    }
}

/* ---- routing ---- */

typedef struct route {
    conn *owner, *previous; /* previous: NULL unless a dual read may find the key there */
} route;

static rk_client *client;
static int64_t last_version, last_previous;
static conn *proxy_conn;

static route route_key(const char *key, size_t klen)
{
    route r = {proxy_conn, NULL};
    if (opt->via == VIA_NUTCRACKER)
        return r;
    rk_snapshot *s = rk_client_acquire(client);
    if (!s)
        die("no ring in service");
    const rk_node *prev = NULL;
    const rk_node *own = rk_snapshot_owner(s, key, klen, &prev);
    r.owner = conn_for(own->addr);
    if (opt->dual_read && prev && strcmp(prev->id, own->id) != 0)
        r.previous = conn_for(prev->addr);
    last_version = rk_snapshot_version(s);
    last_previous = rk_snapshot_previous_version(s);
    rk_snapshot_release(s);
    return r;
}

static void fill(void)
{
    char key[KEY_MAX];
    int64_t t0 = now_ns();
    op_deadline = INT64_MAX;
    for (long i = 0; i < opt->keys && !stop_flag; i++) {
        size_t klen = key_of(i, key);
        size_t len = make_value(i, 1, fill_len[i], value_buf);
        route r = route_key(key, klen);
        fill_one(r.owner, key, klen, value_buf, len);
        acked[i] = 1;
    }
    fill_sync();
    fprintf(stderr, "rk_workload: filled %ld keys in %.2f s\n", opt->keys,
            (double)(now_ns() - t0) / 1e9);
}

/* ---- one operation ---- */

static void count_read_value(counters *c, long i, const char *v, size_t len)
{
    int64_t seq = value_seq(i, v, len);
    if (seq < 0)
        c->corrupt++;
    else if (seq < (int64_t)acked[i]) {
        c->stale_reads++;
        if (!stale_seen[i]) {
            stale_seen[i] = 1;
            stale_keys++;
        }
    }
}

static void op_read(counters *c, long i, const char *key, size_t klen)
{
    route r = route_key(key, klen);
    size_t len = 0;
    c->reads++;
    int rc = do_get(r.owner, key, klen, &len);
    if (rc == OP_MISS && r.previous) {
        int prc = do_get(r.previous, key, klen, &len);
        if (prc == OP_OK) {
            c->hits++;
            c->dual_reads++;
            count_read_value(c, i, value_buf, len);
            /* the cache's own move: put what was found on the owner now, unless there */
            if (do_store(r.owner, key, klen, value_buf, len, 1) == OP_OK)
                c->repairs++;
            return;
        }
        if (prc == OP_FAIL) {
            c->errors++;
            return;
        }
    }
    if (rc == OP_OK) {
        c->hits++;
        count_read_value(c, i, value_buf, len);
        return;
    }
    if (rc == OP_FAIL) {
        c->errors++;
        return;
    }
    /* a miss: the database has the key's latest acknowledged value */
    c->misses++;
    c->db_loads++;
    size_t vlen = make_value(i, acked[i], fill_len[i], value_buf);
    if (do_store(r.owner, key, klen, value_buf, vlen, 1) == OP_FAIL)
        c->errors++;
}

static void op_write(counters *c, long i, const char *key, size_t klen)
{
    route r = route_key(key, klen);
    uint32_t seq = acked[i] + 1;
    size_t len = make_value(i, seq, (size_t)rng_range(opt->min_value, opt->max_value), value_buf);
    if (do_store(r.owner, key, klen, value_buf, len, 0) == OP_OK) {
        acked[i] = seq; /* fill_len stays: a database load writes the fill's length again */
        c->writes++;
    } else {
        c->errors++;
    }
}

/* ---- output ---- */

static FILE *out;

static void add_counters(counters *to, const counters *from)
{
    to->reads += from->reads;
    to->hits += from->hits;
    to->misses += from->misses;
    to->dual_reads += from->dual_reads;
    to->stale_reads += from->stale_reads;
    to->writes += from->writes;
    to->db_loads += from->db_loads;
    to->repairs += from->repairs;
    to->errors += from->errors;
    to->corrupt += from->corrupt;
    to->ops += from->ops;
}

static void emit(double t, int64_t unix_ms, const counters *c, const hist *h)
{
    if (!out)
        return;
    uint64_t p99 = hist_quantile(h, 0.99);
    if (opt->jsonl)
        fprintf(out,
                "{\"t\":%.1f,\"unix_ms\":%" PRId64 ",\"reads\":%" PRIu64 ",\"hits\":%" PRIu64
                ",\"misses\":%" PRIu64 ",\"dual_reads\":%" PRIu64 ",\"stale_reads\":%" PRIu64
                ",\"writes\":%" PRIu64 ",\"db_loads\":%" PRIu64 ",\"repairs\":%" PRIu64
                ",\"errors\":%" PRIu64 ",\"corrupt\":%" PRIu64 ",\"p99_us\":%" PRIu64
                ",\"version\":%" PRId64 ",\"previous\":%" PRId64 "}\n",
                t, unix_ms, c->reads, c->hits, c->misses, c->dual_reads, c->stale_reads, c->writes,
                c->db_loads, c->repairs, c->errors, c->corrupt, p99, last_version, last_previous);
    else
        fprintf(out,
                "%.1f,%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64
                ",%" PRId64 "\n",
                t, unix_ms, c->reads, c->hits, c->misses, c->dual_reads, c->stale_reads, c->writes,
                c->db_loads, c->repairs, c->errors, c->corrupt, p99, last_version, last_previous);
    fflush(out);
}

/* The keys the run wrote (their acknowledged seq is over the fill's 1), for a script to tell a
 * client's write from a bad copy. Non-zero when the file could not be written. */
static int write_written(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    for (long i = 0; i < opt->keys; i++)
        if (acked[i] > 1)
            fprintf(f, "wl:%ld\t%" PRIu32 "\n", i, acked[i]);
    return ferror(f) | fclose(f);
}

/* ---- the run ---- */

static void run(counters *total, hist *all, double *elapsed)
{
    static hist tick_hist;
    counters tick = {0};
    char key[KEY_MAX];
    int64_t t0 = now_ns(), wall0 = wall_ms();
    int64_t end = t0 + (int64_t)(opt->seconds * 1e9);
    int64_t next_tick = t0 + TICK_NS, base = t0;
    uint64_t ticks = 0, since_base = 0;
    memset(&tick_hist, 0, sizeof tick_hist);
    while (!stop_flag) {
        int64_t now = now_ns();
        while (now >= next_tick && next_tick <= end) {
            ticks++;
            emit((double)ticks * 0.1, wall0 + (int64_t)ticks * 100, &tick, &tick_hist);
            add_counters(total, &tick);
            memset(&tick, 0, sizeof tick);
            memset(&tick_hist, 0, sizeof tick_hist);
            next_tick += TICK_NS;
        }
        if (now >= end)
            break;
        if (opt->rate > 0) {
            int64_t due = base + (int64_t)((double)since_base * 1e9 / opt->rate);
            if (now - due > CATCH_UP_NS) { /* fell behind: go on from now, no burst */
                base = now;
                since_base = 0;
            } else if (due > now) {
                int64_t until = due < next_tick ? due : next_tick;
                sleep_ns((until < end ? until : end) - now);
                continue;
            }
        }
        long i = zipf_pick();
        size_t klen = key_of(i, key);
        int64_t start = now_ns();
        op_deadline = start + opt->op_timeout_ms * 1000000LL;
        if (rng_unit() < opt->read_ratio)
            op_read(&tick, i, key, klen);
        else
            op_write(&tick, i, key, klen);
        tick.ops++;
        since_base++;
        uint64_t us = (uint64_t)((now_ns() - start) / 1000);
        hist_add(&tick_hist, us);
        hist_add(all, us);
    }
    add_counters(total, &tick); /* what ran after the last whole tick (a stop) */
    *elapsed = (double)(now_ns() - t0) / 1e9;
}

/* ---- flags ---- */

static double num(const char *flag, const char *s, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        char why[160];
        snprintf(why, sizeof why, "%s: want a number in %g..%g, got '%s'", flag, lo, hi, s);
        usage(why);
    }
    return v;
}

static void parse(int argc, char **argv, options *o)
{
    *o = (options){.keys = 200000,
                   .zipf = 0.99,
                   .read_ratio = 0.9,
                   .seconds = 30,
                   .min_value = 100,
                   .max_value = 4096,
                   .seed = 1,
                   .dual_read = 1,
                   .op_timeout_ms = 3000,
                   .poll_wait_s = 30,
                   .via = (via_kind)-1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define VALUE()                                                                                    \
    do {                                                                                           \
        if (!v)                                                                                    \
            usage("a flag wants a value");                                                         \
        i++;                                                                                       \
    } while (0)
        if (strcmp(a, "--via") == 0) {
            VALUE();
            if (strcmp(v, "ringkeeper") == 0)
                o->via = VIA_RINGKEEPER;
            else if (strcmp(v, "nutcracker") == 0)
                o->via = VIA_NUTCRACKER;
            else
                usage("--via: ringkeeper or nutcracker");
        } else if (strcmp(a, "--store") == 0) {
            VALUE();
            if (strcmp(v, "memcached") == 0)
                o->store = STORE_MEMCACHED;
            else if (strcmp(v, "redis") == 0)
                o->store = STORE_REDIS;
            else
                usage("--store: memcached or redis");
            o->store_set = 1;
        } else if (strcmp(a, "--server") == 0) {
            VALUE();
            o->server = v;
        } else if (strcmp(a, "--cluster") == 0) {
            VALUE();
            o->cluster = v;
        } else if (strcmp(a, "--proxy") == 0) {
            VALUE();
            o->proxy = v;
        } else if (strcmp(a, "--out") == 0) {
            VALUE();
            o->out = v;
        } else if (strcmp(a, "--client-id") == 0) {
            VALUE();
            o->client_id = v;
        } else if (strcmp(a, "--written") == 0) {
            VALUE();
            o->written = v;
        } else if (strcmp(a, "--token") == 0) {
            VALUE();
            o->token = v;
        } else if (strcmp(a, "--format") == 0) {
            VALUE();
            if (strcmp(v, "csv") != 0 && strcmp(v, "jsonl") != 0)
                usage("--format: csv or jsonl");
            o->jsonl = strcmp(v, "jsonl") == 0;
        } else if (strcmp(a, "--keys") == 0) {
            VALUE();
            o->keys = (long)num(a, v, 1, 100000000);
        } else if (strcmp(a, "--zipf") == 0) {
            VALUE();
            o->zipf = num(a, v, 0, 10);
        } else if (strcmp(a, "--reads") == 0) {
            VALUE();
            o->read_ratio = num(a, v, 0, 1);
        } else if (strcmp(a, "--min-value") == 0) {
            VALUE();
            o->min_value = (long)num(a, v, HEADER_MAX, VALUE_MAX);
        } else if (strcmp(a, "--max-value") == 0) {
            VALUE();
            o->max_value = (long)num(a, v, HEADER_MAX, VALUE_MAX);
        } else if (strcmp(a, "--seconds") == 0) {
            VALUE();
            o->seconds = num(a, v, 0.1, 86400);
        } else if (strcmp(a, "--rate") == 0) {
            VALUE();
            o->rate = num(a, v, 0, 10000000);
        } else if (strcmp(a, "--seed") == 0) {
            VALUE();
            o->seed = (uint64_t)num(a, v, 0, 4294967295.0);
        } else if (strcmp(a, "--op-timeout") == 0) {
            VALUE();
            o->op_timeout_ms = (long)num(a, v, 1, 600000);
        } else if (strcmp(a, "--poll-wait") == 0) {
            VALUE();
            o->poll_wait_s = (unsigned)num(a, v, 1, 60);
        } else if (strcmp(a, "--fill") == 0) {
            o->fill = 1;
        } else if (strcmp(a, "--no-dual-read") == 0) {
            o->dual_read = 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(NULL);
        } else {
            char why[160];
            snprintf(why, sizeof why, "unknown flag '%s'", a);
            usage(why);
        }
#undef VALUE
    }
    if (o->via == (via_kind)-1)
        usage("--via ringkeeper or --via nutcracker");
    if (o->via == VIA_RINGKEEPER && (!o->server || !o->cluster))
        usage("--via ringkeeper needs --server and --cluster");
    if (o->via == VIA_NUTCRACKER && !o->proxy)
        usage("--via nutcracker needs --proxy HOST:PORT");
    if (o->min_value > o->max_value)
        usage("--min-value is over --max-value");
}

static void start_client(options *o)
{
    char id[64];
    snprintf(id, sizeof id, "rk-workload:%ld", (long)getpid());
    rk_client_config cfg = {.server = o->server,
                            .cluster = o->cluster,
                            .client_id = o->client_id ? o->client_id : id,
                            .token = o->token ? o->token : getenv("RINGKEEPER_TOKEN")};
    rk_error err = {0};
    client = rk_client_new(&cfg, &err);
    if (!client)
        die("%s", err.message);
    if (rk_client_fetch(client, &err) != RK_OK)
        die("no ring: %s", err.message);
    if (rk_client_start_refresher(client, o->poll_wait_s, 200, &err) != RK_OK)
        die("the refresher: %s", err.message);
    rk_snapshot *s = rk_client_acquire(client);
    const char *data = rk_topology_data(rk_ring_topology(rk_snapshot_ring(s)));
    last_version = rk_snapshot_version(s);
    rk_snapshot_release(s);
    if (!o->store_set) {
        if (data && strcmp(data, "redis") == 0)
            o->store = STORE_REDIS;
        else if (data && strcmp(data, "memcached") == 0)
            o->store = STORE_MEMCACHED;
        else
            die("the topology names no data store (\"data\"): give --store");
    }
}

int main(int argc, char **argv)
{
    static options o;
    parse(argc, argv, &o);
    opt = &o;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (o.out) {
        out = fopen(o.out, "w");
        if (!out)
            die("%s: %s", o.out, strerror(errno));
        if (!o.jsonl)
            fputs("t,unix_ms,reads,hits,misses,dual_reads,stale_reads,writes,db_loads,repairs,"
                  "errors,corrupt,p99_us,version,previous\n",
                  out);
    }
    acked = calloc((size_t)o.keys, sizeof *acked);
    fill_len = calloc((size_t)o.keys, sizeof *fill_len);
    stale_seen = calloc((size_t)o.keys, 1);
    if (!acked || !fill_len || !stale_seen)
        die("out of memory");
    rng_state = o.seed;
    zipf_init();
    for (long i = 0; i < o.keys; i++) {
        fill_len[i] = (uint32_t)fill_length(i);
        acked[i] = 1; /* without --fill the keys are taken to be there as the fill leaves them */
    }
    if (o.via == VIA_RINGKEEPER)
        start_client(&o);
    else
        proxy_conn = conn_for(o.proxy);
    if (o.fill)
        fill();

    counters total = {0};
    static hist all;
    double elapsed = 0;
    if (!stop_flag)
        run(&total, &all, &elapsed);

    if (client) {
        rk_client_stop_refresher(client);
        rk_client_free(client);
    }
    for (size_t i = 0; i < nconns; i++) {
        conn_close(&conns[i]);
    }
    int bad_out = out && (ferror(out) | fclose(out));
    int bad_written = o.written && write_written(o.written);
    printf("{\"seconds\":%.3f,\"ops\":%" PRIu64 ",\"reads\":%" PRIu64 ",\"hits\":%" PRIu64
           ",\"misses\":%" PRIu64 ",\"dual_reads\":%" PRIu64 ",\"stale_reads\":%" PRIu64
           ",\"stale_keys\":%" PRIu64 ",\"writes\":%" PRIu64 ",\"db_loads\":%" PRIu64
           ",\"repairs\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"corrupt\":%" PRIu64
           ",\"p50_us\":%" PRIu64 ",\"p99_us\":%" PRIu64 ",\"p999_us\":%" PRIu64
           ",\"version\":%" PRId64 ",\"interrupted\":%s}\n",
           elapsed, total.ops, total.reads, total.hits, total.misses, total.dual_reads,
           total.stale_reads, stale_keys, total.writes, total.db_loads, total.repairs, total.errors,
           total.corrupt, hist_quantile(&all, 0.5), hist_quantile(&all, 0.99),
           hist_quantile(&all, 0.999), last_version, stop_flag ? "true" : "false");
    free(acked);
    free(fill_len);
    free(stale_seen);
    free(zipf_cdf);
    if (bad_out)
        die("%s: a write failed", o.out);
    if (bad_written)
        die("%s: a write failed", o.written);
    return 0;
}
