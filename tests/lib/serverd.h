/* serverd.h — a real ringkeeperd for C tests and benchmarks: started on a free loopback port with
 * its log drained (so it can never block on a full pipe), stopped with SIGTERM; and one libcurl
 * call to it. Header-only: each program includes it once. */
#ifndef RK_TEST_SERVERD_H
#define RK_TEST_SERVERD_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

typedef struct rk_serverd {
    pid_t pid;       /* 0 when not running */
    unsigned port;   /* the port it bound */
    FILE *log;       /* its stderr, read by `drain` */
    pthread_t drain; /* empties the log */
    char url[64];    /* "http://127.0.0.1:<port>" */
} rk_serverd;

static void *serverd_drain(void *arg)
{
    char buf[4096];
    while (fread(buf, 1, sizeof buf, arg) > 0)
        ;
    return NULL;
}

static void serverd_reap(rk_serverd *s)
{
    int st;
    kill(s->pid, SIGTERM);
    waitpid(s->pid, &st, 0);
    s->pid = 0;
}

/* Runs `binary --listen 127.0.0.1:0 --db db` plus `extra` (NULL-terminated, at most 8) and waits
 * for its "listening on port N" line. 0 on success; -1 with nothing left running otherwise. */
static int serverd_start(rk_serverd *s, const char *binary, const char *db,
                         const char *const *extra)
{
    const char *argv[16] = {"ringkeeperd", "--listen", "127.0.0.1:0", "--db", db};
    int fds[2];
    for (size_t i = 0; extra && extra[i] && i < 8; i++)
        argv[5 + i] = extra[i];
    memset(s, 0, sizeof *s);
    if (pipe(fds) != 0)
        return -1;
    s->pid = fork();
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive the test */
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execv(binary, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    s->log = s->pid > 0 ? fdopen(fds[0], "r") : NULL;
    char line[512];
    while (s->log && !s->port && fgets(line, sizeof line, s->log)) {
        const char *p = strstr(line, "listening on port ");
        if (p)
            s->port = (unsigned)atoi(p + strlen("listening on port "));
    }
    if (s->port && pthread_create(&s->drain, NULL, serverd_drain, s->log) == 0) {
        snprintf(s->url, sizeof s->url, "http://127.0.0.1:%u", s->port);
        return 0;
    }
    if (s->pid > 0)
        serverd_reap(s);
    if (s->log)
        fclose(s->log);
    else
        close(fds[0]);
    return -1;
}

static void serverd_stop(rk_serverd *s)
{
    serverd_reap(s);
    pthread_join(s->drain, NULL);
    fclose(s->log);
}

typedef struct rk_body {
    char *data; /* NUL-terminated, malloc'd */
    size_t len;
} rk_body;

static size_t serverd_collect(char *p, size_t size, size_t n, void *arg)
{
    rk_body *b = arg;
    char *d = realloc(b->data, b->len + size * n + 1);
    if (!d)
        return 0;
    memcpy(d + b->len, p, size * n);
    b->len += size * n;
    d[b->len] = '\0';
    b->data = d;
    return size * n;
}

/* The status of `method path` with `data` (may be NULL) on handle `e` (reusable: keep-alive), or -1
 * when the request failed; the body into *out when out is set (free out->data). */
static long serverd_http(CURL *e, const rk_serverd *s, const char *method, const char *path,
                         const char *data, rk_body *out)
{
    char url[512];
    rk_body b = {0};
    long status = 0;
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    snprintf(url, sizeof url, "%s%s", s->url, path);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, serverd_collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    if (data)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, data);
    else
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    CURLcode rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    if (out)
        *out = b;
    else
        free(b.data);
    return rc == CURLE_OK ? status : -1;
}

#endif
