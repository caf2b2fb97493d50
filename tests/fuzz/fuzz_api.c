/* fuzz_api.c — libFuzzer harness: ringkeeperd's request handling in-process (rkd_api_handle through
 * the real route table) against a temporary database. Input: method, path, query ("a=1&b=2") and
 * headers ("Name: value|Name: value") on one line each, then the body. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api.h"
#include "../server/api/fake_request.h"
#include "ringkeeper.h"
#include "store.h"

#define FIELD_MAX 4096 /* method, path, query and headers together */
#define RUNS_MAX  1000 /* requests before the database is thrown away, so it stays small */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fake {
    char text[FIELD_MAX + 1]; /* the four lines, split in place */
    rk_fake_pairs p;          /* the request's ctx */
} fake;

static char dir[] = "/tmp/rk_fuzz_api.XXXXXX";
static char db[sizeof dir + 16];
static rkd_store *store;
static rkd_app *app;
static unsigned runs;

static void db_remove(void)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    char path[sizeof db + 16];
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        snprintf(path, sizeof path, "%s%s", db, suffix[i]);
        unlink(path);
    }
}

static void db_close(void)
{
    rkd_app_free(app);
    rkd_store_close(store);
    app = NULL, store = NULL;
    db_remove();
}

static void db_open(void)
{
    rk_error err = {0};
    db_remove();
    store = rkd_store_open_with(db, &(rkd_store_param){"migrations", RK_MIGRATIONS_DIR}, 1, &err);
    app = store ? rkd_app_new(store, NULL, &err) : NULL;
    if (!app) {
        fprintf(stderr, "fuzz_api: cannot open %s: %s\n", db, err.message);
        abort();
    }
}

static void cleanup(void)
{
    db_close();
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    if (!mkdtemp(dir))
        abort();
    snprintf(db, sizeof db, "%s/fuzz.db", dir);
    db_open();
    atexit(cleanup);
    return 0;
}

/* The next line of f->text from *at on (NUL-terminated in place), or "" past the end. */
static char *line(char **at)
{
    char *s = *at, *nl = strchr(s, '\n');
    if (nl)
        *nl = '\0', *at = nl + 1;
    else
        *at = s + strlen(s);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fake f;
    memset(&f, 0, sizeof f);
    size_t head = 0; /* bytes of the four lines, their newlines included */
    for (int lines = 0; head < size && head < FIELD_MAX && lines < 4; head++)
        lines += data[head] == '\n';
    memcpy(f.text, data, head);
    for (size_t i = 0; i < head; i++)
        f.text[i] = f.text[i] ? f.text[i] : ' '; /* the HTTP layer never passes NUL in these */
    char *at = f.text;
    const char *method = line(&at), *path = line(&at);
    fake_split(line(&at), "&", "=", f.p.q);
    fake_split(line(&at), "|", ": ", f.p.h);
    rkd_request req = {.method = method,
                       .path = path,
                       .query = fake_query,
                       .header = fake_header,
                       .ctx = &f.p,
                       .body = size > head ? (const char *)data + head : NULL,
                       .body_len = size - head,
                       .author = "fuzz"};
    rkd_response resp = {0};
    rkd_api_handle(app, &req, &resp);
    if (resp.wait_seconds > 0) { /* a long poll held (no status yet): answer as if it timed out */
        rkd_response_clear(&resp);
        req.resumed = 1;
        rkd_api_handle(app, &req, &resp);
    }
    if (resp.status < 100 || resp.status > 599 || !resp.route || resp.wait_seconds > 0)
        abort();
    rkd_response_clear(&resp);
    if (++runs % RUNS_MAX == 0) {
        db_close();
        db_open();
    }
    return 0;
}
