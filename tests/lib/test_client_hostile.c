/* test_client_hostile.c — the network client (rk_client_*) against a fake ringkeeperd that serves
 * hostile answers: each one is refused with its own code and a message, the last good ring stays in
 * service, the refusal is counted, and nothing crashes or leaks (run under ASan and valgrind). The
 * last-known-good file is served when the server is gone, and never trusted when corrupt. The same
 * documents go through rk_client_verify (no network) for the same codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "ringkeeper.h"

#define CLUSTER      "cache"
#define GOOD_VERSION 5 /* the ring accepted first */
#define BAD_VERSION  6 /* hostile variants claim to be newer, so only their flaw refuses them */
#define MIB          (1024u * 1024u)
#define SLOW_MS      500    /* timeout_ms of the slow-server cases */
#define STALL_MS     3000   /* how long the slow server stalls (woken at teardown) */
#define DEEP         100000 /* nesting depth of the deeply nested document */

/* The topology of docs/API.md's GET .../ring example (hash and vnode_factor filled in), and the
 * fingerprint the server gave it. */
static const char TOPOLOGY_FMT[] =
    "{\"hash\": \"%s\", \"vnode_factor\": %u, \"comment\": \"add cache-d\", \"nodes\": ["
    "{\"id\": \"cache-a\", \"addr\": \"10.0.0.1:11211\", \"weight\": 1},"
    "{\"id\": \"cache-b\", \"addr\": \"10.0.0.2:11211\", \"weight\": 1},"
    "{\"id\": \"cache-c\", \"addr\": \"10.0.0.3:11211\", \"weight\": 1},"
    "{\"id\": \"cache-d\", \"addr\": \"10.0.0.4:11211\", \"weight\": 1}]}";
#define N_NODES        4
#define API_DOC_FP     "9b943d19c0d6d4a3"
#define API_DOC_VNODES 8

/* ---- The fake server ---- */

/* What the server answers next; set by the test, copied by the handler under the lock. */
typedef struct reply {
    unsigned status;     /* HTTP status; 0: 200 */
    const char *body;    /* body text (copied per request), NULL: empty */
    size_t body_len;     /* its length (it may hold NUL bytes) */
    uint64_t stream_len; /* > 0: instead, a body of this many bytes made by a content reader */
    int stream_sized;    /* the streamed body declares its length (otherwise chunked) */
    unsigned delay_ms;   /* wait this long before answering */
    size_t stall_at;     /* > 0: send the body through a reader that stalls after this many bytes */
    int64_t etag_version; /* > 0: ETag: "v<N>" */
} reply;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct MHD_Daemon *d;
    int stopping;       /* teardown: wake every waiting handler and reader */
    reply next;         /* what to serve */
    reply list;         /* what GET .../versions answers when its body is set, else `next` */
    unsigned requests;  /* requests answered since the last reset */
    unsigned lists;     /* of which GET .../versions */
    char last_inm[64];  /* If-None-Match of the last request, "" when none */
    char last_url[256]; /* URL of the last request */
    char base[64];      /* "http://127.0.0.1:<port>" */
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Waits up to `ms`; returns non-zero when the server is stopping. */
static int server_wait(unsigned ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&srv.mu);
    while (!srv.stopping && pthread_cond_timedwait(&srv.cv, &srv.mu, &until) != ETIMEDOUT)
        ;
    int stopping = srv.stopping;
    pthread_mutex_unlock(&srv.mu);
    return stopping;
}

/* A body produced piece by piece: `text` when given, else an endless unterminated JSON string. */
typedef struct stream {
    char *text;        /* owned copy of the body, or NULL for the filler */
    uint64_t total;    /* bytes to send */
    uint64_t stall_at; /* stall once when this many bytes are out (UINT64_MAX: never) */
    int stalled;
} stream;

static const char FILLER_HEAD[] = "{\"comment\":\"";

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream *s = cls;
    if (pos >= s->total)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (pos >= s->stall_at && !s->stalled) {
        s->stalled = 1;
        if (server_wait(STALL_MS))
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    uint64_t n = s->total - pos < max ? s->total - pos : max;
    if (pos < s->stall_at && pos + n > s->stall_at)
        n = s->stall_at - pos;
    if (s->text) {
        memcpy(buf, s->text + pos, (size_t)n);
        return (ssize_t)n;
    }
    memset(buf, 'a', (size_t)n);
    for (uint64_t i = pos; i < sizeof FILLER_HEAD - 1 && i < pos + n; i++)
        buf[i - pos] = FILLER_HEAD[i];
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    stream *s = cls;
    free(s->text);
    free(s);
}

static struct MHD_Response *make_response(const reply *r, char *body)
{
    if (!r->stream_len && !r->stall_at)
        return MHD_create_response_from_buffer(r->body_len, body, MHD_RESPMEM_MUST_FREE);
    stream *s = calloc(1, sizeof *s);
    if (!s) {
        free(body);
        return NULL;
    }
    if (r->stream_len) { /* filler: the fixed body is not used */
        free(body);
        body = NULL;
    }
    s->text = body;
    s->total = r->stream_len ? r->stream_len : r->body_len;
    s->stall_at = r->stall_at ? r->stall_at : UINT64_MAX;
    uint64_t size = r->stream_len && !r->stream_sized ? MHD_SIZE_UNKNOWN : s->total;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(size, 64 * 1024, stream_read, s, stream_free);
    if (!resp)
        stream_free(s);
    return resp;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    static int seen;
    (void)cls, (void)method, (void)version, (void)upload, (void)upload_size;
    if (!*req_cls) { /* headers only: answer on the next call */
        *req_cls = &seen;
        return MHD_YES;
    }
    const char *inm = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "If-None-Match");
    size_t n = strlen(url);
    int list = n >= 9 && strcmp(url + n - 9, "/versions") == 0;
    pthread_mutex_lock(&srv.mu);
    reply r = list && srv.list.body ? srv.list : srv.next;
    srv.lists += list;
    char *body = malloc(r.body_len + 1);
    if (body && r.body_len)
        memcpy(body, r.body, r.body_len);
    srv.requests++;
    snprintf(srv.last_inm, sizeof srv.last_inm, "%s", inm ? inm : "");
    snprintf(srv.last_url, sizeof srv.last_url, "%s", url);
    pthread_mutex_unlock(&srv.mu);
    if (!body)
        return MHD_NO;
    if (r.delay_ms && server_wait(r.delay_ms)) {
        free(body);
        return MHD_NO;
    }
    struct MHD_Response *resp = make_response(&r, body);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json; charset=utf-8");
    if (r.etag_version > 0) {
        char etag[32];
        snprintf(etag, sizeof etag, "\"v%lld\"", (long long)r.etag_version);
        MHD_add_response_header(resp, "ETag", etag);
    }
    enum MHD_Result ret = MHD_queue_response(conn, r.status ? r.status : 200, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void server_set(const reply *r)
{
    pthread_mutex_lock(&srv.mu);
    srv.next = *r;
    pthread_mutex_unlock(&srv.mu);
}

static int server_start(void)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    srv.stopping = 0;
    srv.requests = 0;
    srv.lists = 0;
    memset(&srv.next, 0, sizeof srv.next);
    memset(&srv.list, 0, sizeof srv.list);
    srv.d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                         NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (!srv.d)
        return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv.d, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port) {
        MHD_stop_daemon(srv.d);
        srv.d = NULL;
        return -1;
    }
    snprintf(srv.base, sizeof srv.base, "http://127.0.0.1:%u", (unsigned)info->port);
    return 0;
}

/* Stops the server (waking stalled handlers first); a no-op when it is not running. */
static void server_stop(void)
{
    if (!srv.d)
        return;
    pthread_mutex_lock(&srv.mu);
    srv.stopping = 1;
    pthread_cond_broadcast(&srv.cv);
    pthread_mutex_unlock(&srv.mu);
    MHD_stop_daemon(srv.d);
    srv.d = NULL;
}

/* ---- Documents ---- */

static json_t *good5;            /* the good document, version 5 */
static json_t *base6;            /* the same at version 6: what hostile variants start from */
static char *good5_text;         /* compact text of good5 */
static char fingerprint_hex[17]; /* the ring's fingerprint, computed here */

/* A version document as ringkeeperd writes it, for a topology built by the library (so the
 * fingerprint is the real one). New reference. */
static json_t *make_doc(rk_hash_alg hash, uint32_t vnodes, const char *cluster, int64_t version)
{
    char text[1024];
    rk_error err;
    int n = snprintf(text, sizeof text, TOPOLOGY_FMT, rk_hash_name(hash), (unsigned)vnodes);
    assert_true(n > 0 && (size_t)n < sizeof text);
    rk_topology *t = rk_topology_parse(text, (size_t)n, &err);
    assert_non_null(t);
    rk_ring *ring = rk_ring_build(t, &err);
    assert_non_null(ring);
    json_t *doc = rk_topology_to_json(t);
    assert_non_null(doc);
    json_t *fields = json_pack(
        "{s:s, s:I, s:s, s:s, s:s, s:s, s:I, s:s}", "cluster", cluster, "version",
        (json_int_t)version, "state", "active", "created_at", "2026-11-29T19:49:48Z",
        "activated_at", "2026-11-29T19:49:48Z", "author", "anonymous", "points",
        (json_int_t)rk_ring_point_count(ring), "fingerprint", rk_ring_fingerprint_hex(ring));
    assert_non_null(fields);
    assert_int_equal(json_object_update(doc, fields), 0);
    json_decref(fields);
    rk_ring_free(ring);
    rk_topology_free(t);
    return doc;
}

static char *dump(const json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    assert_non_null(text);
    return text;
}

static char *text_copy(const char *s, size_t len)
{
    char *out = malloc(len + 1);
    assert_non_null(out);
    memcpy(out, s, len);
    out[len] = '\0';
    return out;
}

/* Edits of a copy of base6. */

static void ed_wrong_fingerprint(json_t *d)
{
    char fp[17];
    snprintf(fp, sizeof fp, "%s", json_string_value(json_object_get(d, "fingerprint")));
    fp[15] = fp[15] == '0' ? '1' : '0';
    json_object_set_new(d, "fingerprint", json_string(fp));
}

static void ed_tampered_weights(json_t *d)
{
    /* cache-b claims weight 3; points follow, so only the fingerprint can tell */
    json_t *b = json_array_get(json_object_get(d, "nodes"), 1);
    json_object_set_new(b, "weight", json_integer(3));
    json_object_set_new(d, "points", json_integer(API_DOC_VNODES * 6));
}

static void ed_other_cluster(json_t *d)
{
    json_object_set_new(d, "cluster", json_string("sessions"));
}

static void ed_unknown_hash(json_t *d)
{
    json_object_set_new(d, "hash", json_string("sha1_32"));
}

/* A consistent ring (its own fingerprint), but not the hash / vnode_factor the application wants.
 */
static void ed_other_hash(json_t *d)
{
    json_t *other = make_doc(RK_HASH_MD5_32, API_DOC_VNODES, CLUSTER, BAD_VERSION);
    json_object_update(d, other);
    json_decref(other);
}

static void ed_other_vnodes(json_t *d)
{
    json_t *other = make_doc(RK_HASH_XXH3_64, 2 * API_DOC_VNODES, CLUSTER, BAD_VERSION);
    json_object_update(d, other);
    json_decref(other);
}

static void ed_version_string(json_t *d)
{
    json_object_set_new(d, "version", json_string("6"));
}

static void ed_version_real(json_t *d)
{
    json_object_set_new(d, "version", json_real(6.0));
}

static void ed_version_negative(json_t *d)
{
    json_object_set_new(d, "version", json_integer(-6));
}

/* A version no server reaches; saved, it would refuse every real ring as older. */
static void ed_version_huge(json_t *d)
{
    json_object_set_new(d, "version", json_integer(INT64_MAX));
}

/* A published version that is not (or not yet) the ring. */
static void ed_staged(json_t *d)
{
    json_object_set_new(d, "state", json_string("staged"));
}

static void ed_no_state(json_t *d)
{
    json_object_del(d, "state");
}

static void ed_no_fingerprint(json_t *d)
{
    json_object_del(d, "fingerprint");
}

static void ed_store_id_short(json_t *d)
{
    json_object_set_new(d, "store_id", json_string("0123abcd"));
}

static void ed_store_id_upper(json_t *d)
{
    json_object_set_new(d, "store_id", json_string("0123456789ABCDEF"));
}

static void ed_store_id_number(json_t *d)
{
    json_object_set_new(d, "store_id", json_integer(81985529216486895));
}

/* A migration window naming a version that is not older than the ring (docs/API.md). */
static void ed_previous_not_older(json_t *d)
{
    json_object_set_new(
        d, "previous",
        json_pack("{s:I, s:s}", "version", (json_int_t)6, "fingerprint", "0123456789abcdef"));
}

static void ed_previous_string(json_t *d)
{
    json_object_set_new(d, "previous", json_string("v5"));
}

static void ed_older(json_t *d)
{
    json_object_set_new(d, "version", json_integer(GOOD_VERSION - 1));
}

/* Bodies made as text from base6's text. */

static char *tx_truncated(const char *good, size_t *len)
{
    *len = strlen(good) / 2;
    return text_copy(good, *len);
}

static char *tx_deeply_nested(const char *good, size_t *len)
{
    /* the good document whose comment is nested DEEP arrays down */
    (void)good;
    json_t *d = json_deep_copy(base6);
    assert_non_null(d);
    json_object_del(d, "comment");
    char *head = dump(d);
    json_decref(d);
    size_t n = strlen(head) - 1; /* without the closing brace */
    static const char key[] = ",\"comment\":";
    char *out = malloc(n + sizeof key + 2 * DEEP + 2);
    assert_non_null(out);
    memcpy(out, head, n);
    free(head);
    memcpy(out + n, key, sizeof key - 1);
    n += sizeof key - 1;
    memset(out + n, '[', DEEP);
    memset(out + n + DEEP, ']', DEEP);
    n += 2 * DEEP;
    out[n++] = '}';
    out[n] = '\0';
    *len = n;
    return out;
}

static char *tx_const(const char *s, size_t *len)
{
    *len = strlen(s);
    return text_copy(s, *len);
}

static char *tx_array(const char *good, size_t *len)
{
    (void)good;
    return tx_const("[{\"cluster\":\"cache\",\"version\":6}]", len);
}

static char *tx_string(const char *good, size_t *len)
{
    (void)good;
    return tx_const("\"cache\"", len);
}

static char *tx_number(const char *good, size_t *len)
{
    (void)good;
    return tx_const("6", len);
}

static char *tx_null(const char *good, size_t *len)
{
    (void)good;
    return tx_const("null", len);
}

static char *tx_empty(const char *good, size_t *len)
{
    (void)good;
    return tx_const("", len);
}

static char *tx_duplicate_key(const char *good, size_t *len)
{
    /* "cluster" twice: a parser keeping the last one would see a perfect document */
    static const char head[] = "{\"cluster\":\"sessions\",";
    size_t n = strlen(good);
    char *out = malloc(sizeof head + n);
    assert_non_null(out);
    memcpy(out, head, sizeof head - 1);
    memcpy(out + sizeof head - 1, good + 1, n); /* good without its '{', with its NUL */
    *len = sizeof head - 1 + n - 1;
    return out;
}

static char *tx_trailing_garbage(const char *good, size_t *len)
{
    size_t n = strlen(good);
    char *out = malloc(n + 8);
    assert_non_null(out);
    memcpy(out, good, n);
    memcpy(out + n, "{\"x\":1}", 8);
    *len = n + 7;
    return out;
}

static char *tx_nul_byte(const char *good, size_t *len)
{
    /* the good document, a NUL byte, then more: a reader stopping at NUL would accept it */
    size_t n = strlen(good);
    char *out = malloc(n + 8);
    assert_non_null(out);
    memcpy(out, good, n);
    memcpy(out + n, "\0junk}", 7);
    *len = n + 6;
    return out;
}

static char *tx_error_500(const char *good, size_t *len)
{
    (void)good;
    return tx_const("{\"error\":{\"code\":\"internal\",\"message\":\"the database is down\"}}",
                    len);
}

static char *tx_error_404(const char *good, size_t *len)
{
    (void)good;
    return tx_const("{\"error\":{\"code\":\"no_active_version\",\"message\":\"cluster cache has no "
                    "active version yet; activate one first\"}}",
                    len);
}

/* ---- Cases ---- */

enum { COUNT_REFUSED = 1, COUNT_ERRORS = 2 };
enum { MODE_FETCH, MODE_REFRESH, MODE_VERIFY };
enum { ONLY_NOT_FETCH = 1, NOT_A_DOCUMENT = 2, ONLY_FETCH = 4 };

typedef struct hostile {
    const char *name;
    void (*edit)(json_t *doc);                    /* edits a copy of base6, or NULL */
    char *(*text)(const char *good, size_t *len); /* makes the body from base6's text, or NULL */
    unsigned status;                              /* 0: 200 */
    uint64_t stream_len;                          /* > 0: a filler body of this size */
    int stream_sized;                             /* ... with Content-Length */
    size_t max_body;                              /* client cap; 0: the default (64 MiB) */
    unsigned delay_ms;                            /* server delay before answering */
    int stall_mid_body;                           /* the server stalls halfway through the body */
    int any_hash;                                 /* expect_hash NULL (else "xxh3_64") */
    int code;                                     /* the expected rk_status */
    int count;                                    /* where rk_client_status counts it */
    int flags;                                    /* ONLY_NOT_FETCH, NOT_A_DOCUMENT, ONLY_FETCH */
} hostile;

static const hostile CASES[] = {
    {.name = "wrong_fingerprint", .edit = ed_wrong_fingerprint, .code = RK_EFINGERPRINT},
    {.name = "tampered_weights", .edit = ed_tampered_weights, .code = RK_EFINGERPRINT},
    {.name = "other_cluster", .edit = ed_other_cluster, .code = RK_ECLUSTER},
    {.name = "unknown_hash", .edit = ed_unknown_hash, .any_hash = 1, .code = RK_EUNKNOWNHASH},
    {.name = "expect_hash_mismatch", .edit = ed_other_hash, .code = RK_EEXPECT},
    {.name = "expect_vnode_factor_mismatch", .edit = ed_other_vnodes, .code = RK_EEXPECT},
    {.name = "version_string", .edit = ed_version_string, .code = RK_EDOCUMENT},
    {.name = "version_real", .edit = ed_version_real, .code = RK_EDOCUMENT},
    {.name = "version_negative", .edit = ed_version_negative, .code = RK_EDOCUMENT},
    {.name = "version_huge", .edit = ed_version_huge, .code = RK_EDOCUMENT},
    {.name = "state_staged", .edit = ed_staged, .code = RK_EDOCUMENT},
    {.name = "state_missing", .edit = ed_no_state, .code = RK_EDOCUMENT},
    {.name = "no_fingerprint", .edit = ed_no_fingerprint, .code = RK_EDOCUMENT},
    {.name = "store_id_short", .edit = ed_store_id_short, .code = RK_EDOCUMENT},
    {.name = "store_id_upper", .edit = ed_store_id_upper, .code = RK_EDOCUMENT},
    {.name = "store_id_number", .edit = ed_store_id_number, .code = RK_EDOCUMENT},
    {.name = "previous_not_older", .edit = ed_previous_not_older, .code = RK_EDOCUMENT},
    {.name = "previous_string", .edit = ed_previous_string, .code = RK_EDOCUMENT},
    {.name = "older_version", .edit = ed_older, .code = RK_EOLDVERSION, .flags = ONLY_NOT_FETCH},
    {.name = "truncated_json", .text = tx_truncated, .code = RK_EDOCUMENT},
    {.name = "deeply_nested", .text = tx_deeply_nested, .code = RK_EDOCUMENT},
    {.name = "not_object_array", .text = tx_array, .code = RK_EDOCUMENT},
    {.name = "not_object_string", .text = tx_string, .code = RK_EDOCUMENT},
    {.name = "not_object_number", .text = tx_number, .code = RK_EDOCUMENT},
    {.name = "not_object_null", .text = tx_null, .code = RK_EDOCUMENT},
    {.name = "empty_body", .text = tx_empty, .code = RK_EDOCUMENT},
    {.name = "duplicate_key", .text = tx_duplicate_key, .code = RK_EDOCUMENT},
    {.name = "trailing_garbage", .text = tx_trailing_garbage, .code = RK_EDOCUMENT},
    {.name = "nul_byte", .text = tx_nul_byte, .code = RK_EDOCUMENT},
    {.name = "status_500",
     .text = tx_error_500,
     .status = 500,
     .code = RK_EHTTP,
     .count = COUNT_ERRORS,
     .flags = NOT_A_DOCUMENT},
    {.name = "status_404",
     .text = tx_error_404,
     .status = 404,
     .code = RK_EHTTP,
     .count = COUNT_ERRORS,
     .flags = NOT_A_DOCUMENT},
    {.name = "status_304_unasked", /* a 304 to a request without If-None-Match */
     .status = 304,
     .code = RK_EHTTP,
     .count = COUNT_ERRORS,
     .flags = NOT_A_DOCUMENT | ONLY_FETCH},
    {.name = "body_64mib_chunked",
     .stream_len = 64ull * MIB + 1,
     .code = RK_ETOOLARGE,
     .count = COUNT_ERRORS,
     .flags = NOT_A_DOCUMENT},
    {.name = "body_64mib_over_cap",
     .stream_len = 64ull * MIB,
     .stream_sized = 1,
     .max_body = 64 * 1024,
     .code = RK_ETOOLARGE,
     .count = COUNT_ERRORS,
     .flags = NOT_A_DOCUMENT},
    {.name = "slow_headers",
     .edit = ed_older, /* never seen: the timeout comes first */
     .delay_ms = STALL_MS,
     .code = RK_EUNREACHABLE,
     .count = COUNT_ERRORS,
     .flags = NOT_A_DOCUMENT},
    {.name = "slow_body",
     .stall_mid_body = 1,
     .code = RK_EUNREACHABLE,
     .count = COUNT_ERRORS,
     .flags = NOT_A_DOCUMENT},
};
#define N_CASES (sizeof CASES / sizeof CASES[0])

typedef struct run {
    const hostile *c;
    int mode;
} run;

static void config_for(const hostile *c, rk_client_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->server = srv.base;
    cfg->cluster = CLUSTER;
    cfg->expect_hash = c && c->any_hash ? NULL : "xxh3_64";
    cfg->expect_vnode_factor = c && c->any_hash ? 0 : API_DOC_VNODES;
    cfg->connect_timeout_ms = 2000;
    cfg->timeout_ms = c && (c->delay_ms || c->stall_mid_body) ? SLOW_MS : 60000;
    cfg->max_body = c ? c->max_body : 0;
}

/* The hostile body of case `c` (malloc'd; *len bytes, may hold NUL). */
static char *case_body(const hostile *c, size_t *len)
{
    char *base = dump(base6);
    char *out = base;
    if (c->edit) {
        json_t *d = json_deep_copy(base6);
        assert_non_null(d);
        c->edit(d);
        out = dump(d);
        json_decref(d);
        free(base);
    } else if (c->text) {
        out = c->text(base, len);
        free(base);
        return out;
    }
    *len = strlen(out);
    return out;
}

/* Serves the good ring as `version` of the store `store_id` (NULL: no store_id, as servers from
 * before store ids). */
static void serve_store(int64_t version, const char *store_id)
{
    reply r = {.etag_version = version};
    char *text = NULL;
    if (version == GOOD_VERSION && !store_id) {
        r.body = good5_text;
    } else {
        json_t *d = json_deep_copy(good5);
        json_object_set_new(d, "version", json_integer(version));
        if (store_id)
            json_object_set_new(d, "store_id", json_string(store_id));
        text = dump(d);
        json_decref(d);
        r.body = text;
    }
    r.body_len = strlen(r.body);
    server_set(&r);
    /* the handler copies the body under the lock; keep `text` until the next server_set */
    static char *kept;
    free(kept);
    kept = text;
}

static void serve_good(int64_t version)
{
    serve_store(version, NULL);
}

static void assert_refused(rk_client *c, const hostile *hc, int rc, const rk_error *err,
                           int64_t in_service)
{
    assert_int_equal(rc, hc->code);
    assert_int_equal(err->code, hc->code);
    assert_true(err->message[0] != '\0');

    rk_snapshot *s = rk_client_acquire(c);
    if (in_service) {
        assert_non_null(s);
        assert_int_equal(rk_snapshot_version(s), in_service);
        assert_string_equal(rk_ring_fingerprint_hex(rk_snapshot_ring(s)), fingerprint_hex);
        rk_snapshot_release(s);
    } else {
        assert_null(s);
    }

    rk_client_status st;
    rk_client_status_get(c, &st);
    assert_int_equal(st.version, in_service);
    assert_int_equal(st.from_cache, 0);
    assert_int_equal(st.accepted, in_service ? 1 : 0);
    int count = hc->count ? hc->count : COUNT_REFUSED;
    if (count == COUNT_REFUSED) {
        assert_int_equal(st.refused, 1);
        assert_int_equal(st.errors, 0);
    } else {
        assert_int_equal(st.errors, 1);
        assert_int_equal(st.refused, 0);
    }
    assert_int_equal(st.last_error, hc->code);
    assert_true(st.last_message[0] != '\0');
}

static void run_verify(const hostile *hc, const char *body, size_t len)
{
    rk_client_config cfg;
    config_for(hc, &cfg);
    int64_t min = hc->code == RK_EOLDVERSION ? GOOD_VERSION : 0;
    int64_t version = -1;
    rk_error err;
    memset(&err, 0, sizeof err);
    rk_topology *t = rk_client_verify(&cfg, body, len, min, &version, &err);
    if (t)
        fail_msg("%s: rk_client_verify accepted a hostile document", hc->name);
    assert_int_equal(err.code, hc->code);
    assert_true(err.message[0] != '\0');
}

static void test_hostile(void **state)
{
    const run *ru = *state;
    const hostile *hc = ru->c;
    size_t len = 0;
    char *body = hc->stream_len ? NULL : case_body(hc, &len);

    if (ru->mode == MODE_VERIFY) {
        run_verify(hc, body, len);
        free(body);
        return;
    }

    rk_client_config cfg;
    config_for(hc, &cfg);
    rk_error err;
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    int64_t in_service = 0;
    if (ru->mode == MODE_REFRESH) {
        serve_good(GOOD_VERSION);
        assert_int_equal(rk_client_fetch(c, &err), RK_OK);
        in_service = GOOD_VERSION;
    }

    reply r = {.status = hc->status,
               .body = body,
               .body_len = len,
               .stream_len = hc->stream_len,
               .stream_sized = hc->stream_sized,
               .delay_ms = hc->delay_ms,
               .stall_at = hc->stall_mid_body ? len / 2 : 0,
               .etag_version = hc->status ? 0 : BAD_VERSION};
    server_set(&r);
    memset(&err, 0, sizeof err);
    int rc;
    if (ru->mode == MODE_FETCH) {
        rc = rk_client_fetch(c, &err);
    } else {
        int changed = -1;
        rc = rk_client_refresh(c, 0, &changed, &err);
        assert_int_equal(changed, 0);
    }
    assert_refused(c, hc, rc, &err, in_service);
    pthread_mutex_lock(&srv.mu);
    unsigned requests = srv.requests;
    pthread_mutex_unlock(&srv.mu);
    /* no retries behind our back; a ring older than one accepted has the client ask once whether
     * its store issued that one (docs/CLIENT.md, "Healing") */
    unsigned asked = hc->code == RK_EOLDVERSION;
    assert_int_equal(requests, (ru->mode == MODE_REFRESH ? 2 : 1) + asked);

    if (ru->mode == MODE_REFRESH) { /* the client still takes a good ring afterwards */
        serve_good(BAD_VERSION + 1);
        int changed = -1;
        assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
        assert_int_equal(changed, 1);
        rk_snapshot *s = rk_client_acquire(c);
        assert_non_null(s);
        assert_int_equal(rk_snapshot_version(s), BAD_VERSION + 1);
        rk_snapshot_release(s);
    }
    rk_client_free(c);
    free(body);
}

/* ---- The good path, as a baseline for the cases above ---- */

static void test_good_document(void **state)
{
    (void)state;
    assert_string_equal(fingerprint_hex, API_DOC_FP); /* the same ring as the server's */
    rk_client_config cfg;
    config_for(NULL, &cfg);
    int64_t version = 0;
    rk_error err;
    rk_topology *t =
        rk_client_verify(&cfg, good5_text, strlen(good5_text), GOOD_VERSION, &version, &err);
    assert_non_null(t);
    assert_int_equal(version, GOOD_VERSION);
    assert_int_equal(rk_topology_node_count(t), N_NODES);
    rk_topology_free(t);

    serve_good(GOOD_VERSION);
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    pthread_mutex_lock(&srv.mu);
    assert_string_equal(srv.last_url, "/v1/clusters/" CLUSTER "/ring");
    pthread_mutex_unlock(&srv.mu);

    /* a refresh asks with the version it has; a 304 changes nothing */
    reply r = {.status = 304, .etag_version = GOOD_VERSION};
    server_set(&r);
    int changed = -1;
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
    assert_int_equal(changed, 0);
    pthread_mutex_lock(&srv.mu);
    assert_string_equal(srv.last_inm, "\"v5\"");
    pthread_mutex_unlock(&srv.mu);

    rk_client_status st;
    rk_client_status_get(c, &st);
    assert_int_equal(st.version, GOOD_VERSION);
    assert_int_equal(st.accepted, 1);
    assert_int_equal(st.refused, 0);
    assert_int_equal(st.errors, 0);
    rk_client_free(c);
}

/* ---- A migration window whose previous ring cannot be had ---- */

/* The server answers every URL with the ring document, which names version 4 as the previous ring
 * of an open window: the fetch of GET .../versions/4 gets version 5 and is refused. The ring stays
 * in service without a previous ring, the note says why, and each refresh tries again; when the
 * window closes, the note goes. */
static void test_previous_unavailable(void **state)
{
    (void)state;
    rk_client_config cfg;
    rk_error err;
    int changed = -1;
    config_for(NULL, &cfg);
    json_t *d = json_deep_copy(good5);
    json_object_set_new(
        d, "previous",
        json_pack("{s:I, s:s}", "version", (json_int_t)4, "fingerprint", "0123456789abcdef"));
    char *text = dump(d);
    json_decref(d);
    reply r = {.etag_version = GOOD_VERSION, .body = text, .body_len = strlen(text)};
    server_set(&r);
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    assert_int_equal(err.code, RK_EDOCUMENT);
    assert_non_null(strstr(err.message, "version 5 is in service without version 4, the previous "
                                        "ring of its migration window"));
    assert_non_null(strstr(err.message, "when asked for version 4"));
    rk_snapshot *s = rk_client_acquire(c);
    assert_int_equal(rk_snapshot_version(s), GOOD_VERSION);
    assert_null(rk_snapshot_previous(s));
    rk_snapshot_release(s);
    rk_client_status st;
    rk_client_status_get(c, &st);
    assert_int_equal(st.last_error, RK_EDOCUMENT);
    assert_int_equal(st.refused, 0);

    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK); /* tried again */
    assert_int_equal(err.code, RK_EDOCUMENT);
    pthread_mutex_lock(&srv.mu);
    assert_string_equal(srv.last_inm, "\"v5+\""); /* the window is open */
    pthread_mutex_unlock(&srv.mu);

    serve_good(GOOD_VERSION); /* "previous" absent: no window */
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
    assert_int_equal(err.code, RK_OK);
    assert_int_equal(changed, 0);
    rk_client_status_get(c, &st);
    assert_int_equal(st.last_error, RK_OK);
    rk_client_free(c);
    free(text);
}

/* ---- The server gone, with and without a last-known-good file ---- */

static char lkg_dir[64];
static char lkg_path[128];

static void lkg_setup_dir(void)
{
    snprintf(lkg_dir, sizeof lkg_dir, "/tmp/rk_hostile.XXXXXX");
    assert_non_null(mkdtemp(lkg_dir));
    snprintf(lkg_path, sizeof lkg_path, "%s/cache.ring", lkg_dir);
}

static void lkg_remove_dir(void)
{
    if (!lkg_dir[0])
        return;
    DIR *dir = opendir(lkg_dir);
    if (!dir)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", lkg_dir, e->d_name);
        unlink(path);
    }
    closedir(dir);
    rmdir(lkg_dir);
    lkg_dir[0] = '\0';
}

/* A client with the file fetches the good ring (which saves it), then the server goes away. */
static void lkg_prime(int64_t version)
{
    lkg_setup_dir();
    rk_client_config cfg;
    config_for(NULL, &cfg);
    cfg.cache_file = lkg_path;
    rk_error err;
    serve_good(version);
    mode_t mask = umask(022);
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    rk_client_free(c);
    umask(mask);
    struct stat sb;
    assert_int_equal(stat(lkg_path, &sb), 0);
    assert_true(sb.st_size > 0);
    assert_int_equal(sb.st_mode & 0777, 0600); /* its owner's alone, whatever the umask */
}

static void test_server_gone_no_file(void **state)
{
    (void)state;
    rk_client_config cfg;
    config_for(NULL, &cfg);
    server_stop();
    rk_error err;
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    static const hostile gone = {.name = "gone", .code = RK_EUNREACHABLE, .count = COUNT_ERRORS};
    assert_refused(c, &gone, rk_client_fetch(c, &err), &err, 0);
    rk_client_free(c);
}

static void test_server_gone_file_served(void **state)
{
    (void)state;
    lkg_prime(GOOD_VERSION);
    server_stop();

    rk_client_config cfg;
    config_for(NULL, &cfg);
    cfg.cache_file = lkg_path;
    rk_error err;
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    rk_client_status st;
    rk_client_status_get(c, &st);
    assert_int_equal(st.from_cache, 1);
    assert_int_equal(st.version, GOOD_VERSION);

    rk_snapshot *s = rk_client_acquire(c);
    assert_non_null(s);
    assert_int_equal(rk_snapshot_version(s), GOOD_VERSION);
    const rk_ring *ring = rk_snapshot_ring(s);
    assert_string_equal(rk_ring_fingerprint_hex(ring), fingerprint_hex);
    const rk_node *prev = NULL;
    const rk_node *owner = rk_snapshot_owner(s, "user:42", 7, &prev);
    assert_non_null(owner);
    assert_string_equal(
        owner->id,
        rk_topology_node(rk_ring_topology(ring), rk_ring_lookup(ring, "user:42", 7))->id);
    rk_snapshot_release(s);
    rk_client_free(c);
    lkg_remove_dir();
}

/* A new client with the last-known-good file (and reset_cache as given) fetches once; returns
 * what the fetch returned, with the client's status in *st. */
static int fetch_with_file(int reset_cache, rk_client_status *st)
{
    rk_client_config cfg;
    config_for(NULL, &cfg);
    cfg.cache_file = lkg_path;
    cfg.reset_cache = reset_cache;
    rk_error err;
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    int rc = rk_client_fetch(c, &err);
    rk_client_status_get(c, st);
    rk_client_free(c);
    return rc;
}

/* A file its owner opened to others (say, for a sidecar) keeps that mode when it is replaced. */
static void test_file_mode_kept(void **state)
{
    (void)state;
    lkg_prime(GOOD_VERSION);
    assert_int_equal(chmod(lkg_path, 0640), 0);
    serve_good(BAD_VERSION);
    rk_client_status st;
    assert_int_equal(fetch_with_file(0, &st), RK_OK);
    assert_int_equal(st.version, BAD_VERSION);
    struct stat sb;
    assert_int_equal(stat(lkg_path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);
    lkg_remove_dir();
}

/* The file's version counts as accepted: a server offering an older ring cannot roll a restart
 * back; the client starts from the file instead. */
static void test_file_blocks_rollback(void **state)
{
    (void)state;
    lkg_prime(GOOD_VERSION);
    serve_good(GOOD_VERSION - 1);

    rk_client_config cfg;
    config_for(NULL, &cfg);
    cfg.cache_file = lkg_path;
    rk_error err;
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    rk_client_status st;
    rk_client_status_get(c, &st);
    assert_int_equal(st.version, GOOD_VERSION);
    assert_int_equal(st.from_cache, 1);
    assert_int_equal(st.refused, 1);
    rk_client_free(c);
    lkg_remove_dir();
}

/* A file that holds a version far ahead of the server's (saved from a hostile server, or from
 * another one) blocks the server's ring, with a message that names the file, both versions and the
 * way out; reset_cache takes the server's ring, rewrites the file, and serves no file meanwhile. */
static void test_file_ahead_reset(void **state)
{
    (void)state;
    const int64_t ahead = 1000000;
    lkg_prime(ahead);
    serve_good(GOOD_VERSION);
    rk_client_status st;
    assert_int_equal(fetch_with_file(0, &st), RK_OK);
    assert_int_equal(st.version, ahead);
    assert_int_equal(st.last_error, RK_EOLDVERSION);
    assert_non_null(strstr(st.last_message, "v5 is older than v1000000"));
    assert_non_null(strstr(st.last_message, lkg_path));
    assert_non_null(strstr(st.last_message, "reset_cache"));

    rk_client_config cfg;
    config_for(NULL, &cfg);
    cfg.cache_file = lkg_path;
    cfg.reset_cache = 1;
    rk_error err;
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    rk_client_status_get(c, &st);
    assert_int_equal(st.version, GOOD_VERSION);
    assert_int_equal(st.from_cache, 0);
    serve_good(GOOD_VERSION - 1); /* the rollback guard holds again after the one ring taken */
    assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_EOLDVERSION);
    rk_client_free(c);

    server_stop();
    /* reset_cache never serves the file it distrusts; the file holds the server's ring now */
    assert_int_equal(fetch_with_file(1, &st), RK_EUNREACHABLE);
    assert_int_equal(fetch_with_file(0, &st), RK_OK);
    assert_int_equal(st.version, GOOD_VERSION);
    assert_int_equal(st.from_cache, 1);
    lkg_remove_dir();
}

/* Ways to damage the file: truncate it, or change one byte: the last byte of the first `needle` in
 * it (the middle byte when the needle is NULL or not there) becomes `to` (or has its low bit
 * flipped when `to` is 0). */
typedef struct corruption {
    const char *name;
    long truncate_to; /* >= 0: truncate to this many bytes (-2: to half); -1: change a byte */
    const char *needle;
    char to;
} corruption;

static const corruption TRUNCATED = {"truncated to half", -2, NULL, 0};
static const corruption EMPTIED = {"truncated to nothing", 0, NULL, 0};
static const corruption FP_FLIPPED = {"a fingerprint byte flipped", -1, API_DOC_FP, 0};
static const corruption ADDR_FLIPPED = {"a node address byte flipped", -1, "10.0.0.2", '9'};
static const corruption MIDDLE_FLIPPED = {"the middle byte flipped", -1, NULL, 0};
static const corruption VERSION_RAISED = {"the version digit raised", -1, "\"version\":5", '7'};

static void corrupt(const corruption *how)
{
    static char buf[1 << 16];
    FILE *f = fopen(lkg_path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 0 && n < sizeof buf);
    if (how->truncate_to != -1) {
        off_t size = how->truncate_to == -2 ? (off_t)(n / 2) : (off_t)how->truncate_to;
        assert_int_equal(truncate(lkg_path, size), 0);
        return;
    }
    size_t at = n / 2;
    size_t k = how->needle ? strlen(how->needle) : 0;
    for (size_t i = 0; k && i + k <= n; i++) {
        if (memcmp(buf + i, how->needle, k) == 0) {
            at = i + k - 1;
            break;
        }
    }
    buf[at] = how->to ? how->to : (char)(buf[at] ^ 0x01);
    f = fopen(lkg_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* A client for `cluster` starts with the server gone and a damaged (or foreign) file: the fetch
 * fails with the server's error, nothing is in service, and RK_ECACHE is reported. */
static void check_file_refused(const corruption *how, const char *cluster)
{
    lkg_prime(GOOD_VERSION);
    server_stop();
    if (how)
        corrupt(how);
    const char *name = how ? how->name : "another cluster's file";

    rk_client_config cfg;
    config_for(NULL, &cfg);
    cfg.cluster = cluster;
    cfg.cache_file = lkg_path;
    rk_error err;
    memset(&err, 0, sizeof err);
    rk_client *c = rk_client_new(&cfg, &err);
    if (!c) { /* refusing the file already at start is fine, when it says why */
        assert_int_equal(err.code, RK_ECACHE);
        assert_true(err.message[0] != '\0');
        lkg_remove_dir();
        return;
    }
    memset(&err, 0, sizeof err);
    int rc = rk_client_fetch(c, &err);
    rk_client_status st;
    rk_client_status_get(c, &st);
    rk_snapshot *s = rk_client_acquire(c);
    rk_snapshot_release(s);
    rk_client_free(c);
    lkg_remove_dir();
    if (rc == RK_OK)
        fail_msg("%s: the client served the last-known-good file (version %lld, from_cache %d): "
                 "it must be refused",
                 name, (long long)st.version, st.from_cache);
    assert_true(rc == RK_EUNREACHABLE || rc == RK_ECACHE);
    assert_true(err.message[0] != '\0');
    assert_null(s);
    assert_int_equal(st.version, 0);
    assert_int_equal(st.from_cache, 0);
    assert_int_equal(st.accepted, 0);
    if (rc != RK_ECACHE && st.last_error != RK_ECACHE) /* reported, not silently skipped */
        fail_msg("%s: fetch returned %s (%s), last_error %s: RK_ECACHE not reported", name,
                 rk_errname(rc), err.message, rk_errname(st.last_error));
    assert_true(strstr(st.last_message, "last-known-good") != NULL);
}

static void test_file_truncated(void **state)
{
    (void)state;
    check_file_refused(&TRUNCATED, CLUSTER);
}

static void test_file_empty(void **state)
{
    (void)state;
    check_file_refused(&EMPTIED, CLUSTER);
}

static void test_file_fingerprint_flipped(void **state)
{
    (void)state;
    check_file_refused(&FP_FLIPPED, CLUSTER);
}

/* The fingerprint covers ids and positions, not addresses: only the file's own integrity check
 * can catch this one. */
static void test_file_address_flipped(void **state)
{
    (void)state;
    check_file_refused(&ADDR_FLIPPED, CLUSTER);
}

static void test_file_middle_flipped(void **state)
{
    (void)state;
    check_file_refused(&MIDDLE_FLIPPED, CLUSTER);
}

static void test_file_other_cluster(void **state)
{
    (void)state;
    check_file_refused(NULL, "sessions");
}

/* One flipped digit must not raise the floor: a file damaged to say version 7 must neither block
 * the server's version 6 nor be served in its place. */
static void test_file_version_raised(void **state)
{
    (void)state;
    lkg_prime(GOOD_VERSION);
    corrupt(&VERSION_RAISED);
    serve_good(BAD_VERSION);
    rk_client_status st;
    int rc = fetch_with_file(0, &st);
    lkg_remove_dir();
    assert_int_equal(rc, RK_OK);
    if (st.version != BAD_VERSION || st.from_cache)
        fail_msg("%s: the client runs version %lld (from_cache %d) instead of the server's "
                 "version %d: the damaged file was trusted",
                 VERSION_RAISED.name, (long long)st.version, st.from_cache, BAD_VERSION);
}

/* ---- Fixtures and the run ---- */

static int group_setup(void **state)
{
    (void)state;
    good5 = make_doc(RK_HASH_XXH3_64, API_DOC_VNODES, CLUSTER, GOOD_VERSION);
    base6 = make_doc(RK_HASH_XXH3_64, API_DOC_VNODES, CLUSTER, BAD_VERSION);
    good5_text = dump(good5);
    snprintf(fingerprint_hex, sizeof fingerprint_hex, "%s",
             json_string_value(json_object_get(good5, "fingerprint")));
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    serve_good(GOOD_VERSION); /* frees the last kept body */
    json_decref(good5);
    json_decref(base6);
    free(good5_text);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    return server_start();
}

static int teardown(void **state)
{
    (void)state;
    server_stop();
    lkg_remove_dir(); /* when a failed assertion left the folder behind */
    return 0;
}

#define STORE_A "aaaaaaaaaaaaaaaa"
#define STORE_B "bbbbbbbbbbbbbbbb"

/* Whether the last-known-good file holds `needle` (it holds the document as served). */
static int lkg_holds(const char *needle)
{
    char buf[1 << 16];
    FILE *f = fopen(lkg_path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

/* A server restored from a backup has another store id and numbers its versions anew: the client
 * takes its ring although the file holds a higher version of the old store, says so, rewrites the
 * file, and then asks with the new store's ETag. Within one store, older rings are refused still.
 */
static void test_store_changed(void **state)
{
    (void)state;
    lkg_setup_dir();
    rk_client_config cfg;
    config_for(NULL, &cfg);
    cfg.cache_file = lkg_path;
    rk_error err;
    serve_store(GOOD_VERSION + 2, STORE_A);
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    rk_client_free(c);

    serve_store(GOOD_VERSION, STORE_B);
    c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    assert_int_equal(err.code, RK_OK);
    assert_non_null(strstr(err.message, "another history"));
    rk_client_status st;
    rk_client_status_get(c, &st);
    assert_int_equal(st.version, GOOD_VERSION);
    assert_int_equal(st.from_cache, 0);
    assert_int_equal(st.refused, 0);
    assert_true(lkg_holds("\"store_id\":\"" STORE_B "\""));

    int changed = 1;
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
    assert_int_equal(changed, 0); /* the same ring of the same store */
    char inm[sizeof srv.last_inm];
    pthread_mutex_lock(&srv.mu);
    memcpy(inm, srv.last_inm,
           sizeof inm); /* asserted unlocked: a failure must not hang the server */
    pthread_mutex_unlock(&srv.mu);
    /* the version, the store and the fingerprint of the ring held (16 hex digits) */
    assert_int_equal(strlen(inm), strlen("\"v5." STORE_B ".0123456789abcdef\""));
    assert_memory_equal(inm, "\"v5." STORE_B ".", strlen("\"v5." STORE_B "."));

    serve_store(GOOD_VERSION, STORE_A); /* the same number from another store: another ring */
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
    assert_int_equal(changed, 1);
    assert_true(lkg_holds("\"store_id\":\"" STORE_A "\""));
    serve_store(GOOD_VERSION - 1, STORE_A);
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_EOLDVERSION);
    rk_client_free(c);
    lkg_remove_dir();
}

/* GET .../versions answers a list whose newest version is `latest` of store `store_id`; with
 * `latest` 0, what every other request gets. */
static void serve_list(int64_t latest, const char *store_id)
{
    static char text[256];
    snprintf(text, sizeof text,
             "{\"versions\": [{\"cluster\": \"%s\", \"version\": %lld, \"state\": \"staged\", "
             "\"store_id\": \"%s\"}], \"next_before\": null}",
             CLUSTER, (long long)latest, store_id);
    reply r = {.body = latest ? text : NULL, .body_len = strlen(text)};
    pthread_mutex_lock(&srv.mu);
    srv.list = r;
    srv.lists = 0;
    pthread_mutex_unlock(&srv.mu);
}

static unsigned lists_asked(void)
{
    pthread_mutex_lock(&srv.mu);
    unsigned n = srv.lists;
    pthread_mutex_unlock(&srv.mu);
    return n;
}

#define FORGED_VERSION 9007199254740991LL /* 2^53-1, the largest version a client accepts */

/* The red team's attack (issue 20): a fake server sends the real ring as version 2^53-1 under the
 * real store id, and the client saves it. The real server heals the client at its next start: its
 * store never issued that version, so the file's ring is discarded, the server's ring is taken and
 * saved, the note says what and why, and the status counts it. */
static void test_poisoned_file_heals(void **state)
{
    (void)state;
    lkg_setup_dir();
    rk_client_config cfg;
    config_for(NULL, &cfg);
    cfg.cache_file = lkg_path;
    rk_error err;
    serve_store(FORGED_VERSION, STORE_A);
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    rk_client_free(c);
    assert_true(lkg_holds("\"version\":9007199254740991"));

    serve_store(GOOD_VERSION, STORE_A);
    serve_list(GOOD_VERSION + 1, STORE_A); /* v6 is staged: the latest issued, not active */
    rk_client_status st;
    assert_int_equal(fetch_with_file(0, &st), RK_OK);
    assert_int_equal(st.version, GOOD_VERSION);
    assert_int_equal(st.discarded, 1);
    assert_int_equal(st.from_cache, 0);
    assert_int_equal(st.refused, 0);
    assert_int_equal(st.last_error, RK_OK);
    assert_non_null(strstr(st.last_message, "discarded v9007199254740991 of the last-known-good "
                                            "file"));
    assert_non_null(strstr(st.last_message, "which store " STORE_A " never issued (its latest "
                                            "is v6): a hostile or broken server sent it; "
                                            "version 5 from"));
    assert_true(lkg_holds("\"version\":5"));
    assert_int_equal(lists_asked(), 1);

    assert_int_equal(fetch_with_file(0, &st), RK_OK); /* healed: nothing to discard */
    assert_int_equal(st.discarded, 0);
    assert_int_equal(st.version, GOOD_VERSION);
    server_stop();
    assert_int_equal(fetch_with_file(0, &st), RK_OK);
    assert_int_equal(st.version, GOOD_VERSION);
    assert_int_equal(st.from_cache, 1);
    lkg_remove_dir();
}

/* The same ring accepted from the fake server by a running client (no file): the real server's
 * ring replaces it at the next refresh, and the discarded ring is no previous ring. */
static void test_poisoned_ring_heals(void **state)
{
    (void)state;
    rk_client_config cfg;
    config_for(NULL, &cfg);
    rk_error err;
    serve_store(FORGED_VERSION, STORE_A);
    rk_client *c = rk_client_new(&cfg, &err);
    assert_non_null(c);
    assert_int_equal(rk_client_fetch(c, &err), RK_OK);
    serve_store(GOOD_VERSION, STORE_A);
    serve_list(GOOD_VERSION, STORE_A);
    int changed = 0;
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_OK);
    assert_int_equal(changed, 1);
    assert_non_null(strstr(err.message, "discarded v9007199254740991, accepted earlier, which"));
    rk_snapshot *s = rk_client_acquire(c);
    assert_int_equal(rk_snapshot_version(s), GOOD_VERSION);
    assert_null(rk_snapshot_previous(s));
    rk_snapshot_release(s);
    rk_client_status st;
    rk_client_status_get(c, &st);
    assert_int_equal(st.discarded, 1);
    serve_store(GOOD_VERSION - 1, STORE_A); /* and the ring taken is the floor as usual */
    assert_int_equal(rk_client_refresh(c, 0, &changed, &err), RK_EOLDVERSION);
    rk_client_free(c);
}

/* A version the store says it has issued is never discarded, however far behind the ring a server
 * serves (a lagging replica, a restored copy): the refusal stands, and the store is asked once. So
 * does the file when the list names another store, or cannot be had. */
static void test_issued_floor_stays(void **state)
{
    (void)state;
    static const struct {
        int64_t latest;    /* the list's newest version; 0: no list (the ring's body instead) */
        const char *store; /* its store */
        unsigned asked;    /* lists asked by a fetch and two refreshes */
    } cases[] = {
        {GOOD_VERSION + 2, STORE_A, 1}, /* the file's version itself */
        {GOOD_VERSION + 9, STORE_A, 1}, /* newer still */
        {GOOD_VERSION, STORE_B, 3},     /* another store: no word on this one's */
        {0, STORE_A, 3},                /* no list: no word */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lkg_setup_dir();
        rk_client_config cfg;
        config_for(NULL, &cfg);
        cfg.cache_file = lkg_path;
        rk_error err;
        serve_store(GOOD_VERSION + 2, STORE_A);
        rk_client *c = rk_client_new(&cfg, &err);
        assert_non_null(c);
        assert_int_equal(rk_client_fetch(c, &err), RK_OK);
        rk_client_free(c);

        serve_store(GOOD_VERSION, STORE_A);
        serve_list(cases[i].latest, cases[i].store);
        c = rk_client_new(&cfg, &err);
        assert_non_null(c);
        assert_int_equal(rk_client_fetch(c, &err), RK_OK);
        assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_EOLDVERSION);
        assert_int_equal(rk_client_refresh(c, 0, NULL, &err), RK_EOLDVERSION);
        rk_client_status st;
        rk_client_status_get(c, &st);
        assert_int_equal(st.version, GOOD_VERSION + 2);
        assert_int_equal(st.from_cache, 1);
        assert_int_equal(st.discarded, 0);
        assert_int_equal(lists_asked(), cases[i].asked);
        rk_client_free(c);
        assert_true(lkg_holds("\"version\":7"));
        lkg_remove_dir();
    }
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    static const char *mode_names[] = {"fetch", "refresh", "verify"};
    static run runs[3 * N_CASES];
    static char names[3 * N_CASES][80];
    static struct CMUnitTest tests[3 * N_CASES + 16] = {
        TEST(test_good_document),
        TEST(test_server_gone_no_file),
        TEST(test_server_gone_file_served),
        TEST(test_file_mode_kept),
        TEST(test_file_blocks_rollback),
        TEST(test_file_ahead_reset),
        TEST(test_file_truncated),
        TEST(test_file_empty),
        TEST(test_file_fingerprint_flipped),
        TEST(test_file_address_flipped),
        TEST(test_file_middle_flipped),
        TEST(test_file_other_cluster),
        TEST(test_file_version_raised),
        TEST(test_store_changed),
        TEST(test_poisoned_file_heals),
        TEST(test_poisoned_ring_heals),
        TEST(test_issued_floor_stays),
        TEST(test_previous_unavailable),
    };
    size_t n = 0, k = 0;
    while (tests[n].name)
        n++;
    for (size_t i = 0; i < N_CASES; i++) {
        for (int mode = MODE_FETCH; mode <= MODE_VERIFY; mode++) {
            if (mode == MODE_FETCH && (CASES[i].flags & ONLY_NOT_FETCH))
                continue;
            if (mode == MODE_VERIFY && (CASES[i].flags & NOT_A_DOCUMENT))
                continue;
            if (mode == MODE_REFRESH && (CASES[i].flags & ONLY_FETCH))
                continue;
            runs[k] = (run){.c = &CASES[i], .mode = mode};
            snprintf(names[k], sizeof names[k], "%s_%s", mode_names[mode], CASES[i].name);
            tests[n++] = (struct CMUnitTest){.name = names[k],
                                             .test_func = test_hostile,
                                             .setup_func = setup,
                                             .teardown_func = teardown,
                                             .initial_state = &runs[k]};
            k++;
        }
    }
    return _cmocka_run_group_tests("client_hostile", tests, n, group_setup, group_teardown);
}
