/* apply.c — the agent's cutover of its proxy to one version (docs/AGENT.md, "What each step
 * does"): the library hands it each new ring that passed its checks (rk_client_set_admit), and it
 * (1) writes the ring into the proxy's file with the format's --into, the file before it kept
 * beside it; (2) validates the file with the proxy; (3) reloads (or restarts) the proxy, or with
 * --catch-up stops it, catches the moving keys up on their new owners and starts it; (4) waits
 * until the proxy shows it runs the new file; (5) admits the ring, which the library then reports
 * held with its next poll. A failure at any step restores the file (and, once a reload was sent,
 * reloads the restored file) and refuses the ring with the reason, which the library tells the
 * server (RK-Refused). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

void rk_cli_agent_log(const rk_cli_agent_state *a, int64_t version, const char *fmt, ...)
{
    char line[2 * RK_CLI_AGENT_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rk_cli_print_safe(stderr, RK_CLI_SAFE_LINE, "ringkeeper agent: %s v%" PRId64 ": %s", a->cluster,
                      version, line);
    fputc('\n', stderr);
}

/* The part of the file the agent rewrites, for people. */
static const char *part_name(const rk_cli_agent_state *a)
{
    return a->part ? a->part : a->chosen[0] ? a->chosen : "(the only one)";
}

rk_topology *rk_cli_agent_file_topology(const rk_cli_agent_state *a, char msg[RK_CLI_AGENT_MSG])
{
    size_t len;
    char note[RK_CLI_FORMAT_MSG_MAX] = "", why[RK_CLI_FORMAT_MSG_MAX];
    char *text = rk_cli_slurp(a->file, &len);
    if (!text)
        return snprintf(msg, RK_CLI_AGENT_MSG, "cannot read %.100s: %s", a->file, strerror(errno)),
               NULL;
    json_t *doc = a->format->import(text, len, a->part, why, note);
    free(text);
    if (!doc)
        return snprintf(msg, RK_CLI_AGENT_MSG, "%.100s: %.400s", a->file, why), NULL;
    rk_error e = {0};
    rk_topology *own = rk_topology_from_json(doc, &e);
    json_decref(doc);
    if (!own)
        snprintf(msg, RK_CLI_AGENT_MSG, "%.100s: the %s %.64s is no topology: %.300s", a->file,
                 a->format->part, part_name(a), e.message);
    return own;
}

/* RK_OK when the file's part (own: its topology, NULL when the file could not give one, msg
 * saying why) routes as t does (the same scheme, hash and its settings), so the version may go
 * into it; else a sentence in msg. */
static int comparable(const rk_cli_agent_state *a, const rk_topology *own, const rk_topology *t,
                      char msg[RK_CLI_AGENT_MSG])
{
    rk_error e = {0};
    int rc = own ? rk_topology_comparable(own, t, &e) : RK_EINVAL;
    if (own && rc != RK_OK)
        snprintf(msg, RK_CLI_AGENT_MSG,
                 "%.100s: the %s %.64s does not route as the cluster's ring: %.300s", a->file,
                 a->format->part, part_name(a), e.message);
    return rc;
}

/* The reload of the agent's proxy: its command, else the proxy's default command or built-in. */
static int reload(const rk_cli_agent_state *a, int64_t v, char msg[RK_CLI_AGENT_MSG])
{
    const char *command = a->reload ? a->reload : a->proxy->reload;
    return command ? rk_cli_agent_exec(a, command, v, msg) : a->proxy->reload_now(a, msg);
}

/* The switch to the file written: the reload; with --catch-up the stop, the catch-up from the
 * pool the proxy ran (own) to the version, and the start, so that nothing passes the proxy while
 * the new owners are written. 0, or -1 with the step and its reason in msg. */
static int switch_over(const rk_cli_agent_state *a, rk_topology *own, const rk_ring *ring,
                       int64_t v, char msg[RK_CLI_AGENT_MSG])
{
    char why[RK_CLI_AGENT_MSG];
    if (!a->catch_up)
        return reload(a, v, msg);
    if (rk_cli_agent_exec(a, a->stop ? a->stop : a->proxy->stop, v, why) != 0)
        return snprintf(msg, RK_CLI_AGENT_MSG, "stop: %.400s", why), -1;
    rk_cli_agent_log(a, v, "stopped: catching up");
    if (a->catch_up(a, own, ring, v, why) != 0)
        return snprintf(msg, RK_CLI_AGENT_MSG, "catch-up: %.400s", why), -1;
    if (rk_cli_agent_exec(a, a->start ? a->start : a->proxy->start, v, why) != 0)
        return snprintf(msg, RK_CLI_AGENT_MSG, "start: %.400s", why), -1;
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits (confirm timeout) until the proxy shows it runs t: the confirm command exits 0, or the
 * proxy's built-in confirm says so. 0, or -1 with the last answer in msg and *unchanged set when
 * that answer was that the proxy still runs what it ran before the reload. */
static int confirmed(const rk_cli_agent_state *a, const rk_cli_proxy_before *b,
                     const rk_topology *t, int64_t v, int *unchanged, char msg[RK_CLI_AGENT_MSG])
{
    time_t deadline = time(NULL) + (time_t)a->confirm_timeout;
    for (;;) {
        int says = a->confirm
                       ? (rk_cli_agent_exec(a, a->confirm, v, msg) == 0 ? RK_CLI_CONFIRM_RUNS
                                                                        : RK_CLI_CONFIRM_NOT_YET)
                       : a->proxy->confirm(a, b, t, msg);
        if (says == RK_CLI_CONFIRM_RUNS)
            return 0;
        *unchanged = says == RK_CLI_CONFIRM_UNCHANGED;
        if (time(NULL) >= deadline)
            return -1;
        sleep_ms(RK_CLI_AGENT_POLL_MS);
    }
}

/* Steps 2 to 4 on the file written: 0, or -1 with the step and its reason in msg; *reloaded
 * says whether the running configuration may have changed (a reload was sent, and took or may
 * have), so that the file restored is to be reloaded too. */
static int validate_reload_confirm(const rk_cli_agent_state *a, rk_topology *own,
                                   const rk_ring *ring, int64_t v, int *reloaded,
                                   char msg[RK_CLI_AGENT_MSG])
{
    const rk_topology *t = rk_ring_topology(ring);
    char why[RK_CLI_AGENT_MSG];
    const char *validate = a->validate ? a->validate : a->proxy->validate;
    rk_cli_proxy_before b = {{0}, 0};
    int unchanged = 0;
    if (rk_cli_agent_exec(a, validate, v, why) != 0)
        return snprintf(msg, RK_CLI_AGENT_MSG, "validate: %.400s", why), -1;
    rk_cli_agent_log(a, v, "validated (%s)", validate);
    if (!a->confirm && a->proxy->before && a->proxy->before(a, &b, why) != 0)
        return snprintf(msg, RK_CLI_AGENT_MSG, "%s: %.400s", a->proxy->reload_word, why), -1;
    *reloaded = 1;
    if (switch_over(a, own, ring, v, why) != 0)
        return snprintf(msg, RK_CLI_AGENT_MSG, "%s: %.400s", a->proxy->reload_word, why), -1;
    rk_cli_agent_log(a, v, "%s sent", a->proxy->reload_word);
    if (confirmed(a, &b, t, v, &unchanged, why) != 0) {
        /* a reload that did not take changed nothing: reloading the file restored would only
         * fail again (HAProxy pauses its listeners for each try) */
        *reloaded = !unchanged;
        return snprintf(msg, RK_CLI_AGENT_MSG,
                        "confirm: not running the version after %llu s: %.400s", a->confirm_timeout,
                        why),
               -1;
    }
    rk_cli_agent_log(a, v, "confirmed: %s", why);
    return 0;
}

/* Puts the file as it was (`old`, len bytes) back and, when a reload was sent, reloads it: the
 * proxy runs what it ran before. Logged, as what the refusal leaves behind. */
static void restore(const rk_cli_agent_state *a, int64_t v, const char *old, size_t len,
                    int reloaded)
{
    char why[RK_CLI_AGENT_MSG];
    if (rk_cli_replace_file(a->file, a->file, old, len) != 0) {
        rk_cli_agent_log(a, v, "the file could not be restored (%s): the file before is %s",
                         strerror(errno), a->previous);
        return;
    }
    if (!reloaded) {
        rk_cli_agent_log(a, v, "file restored; the proxy runs what it ran before (not reloaded)");
        return;
    }
    if (reload(a, v, why) == 0)
        rk_cli_agent_log(a, v, "file restored and %s sent again", a->proxy->reload_word);
    else
        rk_cli_agent_log(a, v, "file restored; its %s failed: %s", a->proxy->reload_word, why);
}

/* Steps 1 to 4 for the version's ring, own the topology of the pool the file had: 0, or -1
 * with the reason in msg (the file restored). */
static int cut_over(rk_cli_agent_state *a, rk_topology *own, const rk_ring *ring, int64_t v,
                    char msg[RK_CLI_AGENT_MSG])
{
    const rk_topology *t = rk_ring_topology(ring);
    size_t len;
    char why[RK_CLI_AGENT_MSG];
    char *old = rk_cli_slurp(a->file, &len), *text = NULL;
    json_t *doc = old ? rk_topology_to_json(t) : NULL;
    if (doc)
        text = a->format->into(old, len, a->part, doc, a->chosen, why);
    json_decref(doc);
    int rc = -1, reloaded = 0;
    if (!text)
        snprintf(msg, RK_CLI_AGENT_MSG, "write: %.100s: %.400s", a->file,
                 !old   ? strerror(errno)
                 : !doc ? "out of memory"
                        : why);
    else if (rk_cli_replace_file(a->previous, a->file, old, len) != 0 ||
             rk_cli_replace_file(a->file, a->file, text, strlen(text)) != 0)
        snprintf(msg, RK_CLI_AGENT_MSG, "write: %.100s: %.400s", a->file, strerror(errno));
    else {
        rk_cli_agent_log(a, v, "written into %s (%s %s; the file before: %s)", a->file,
                         a->format->part, part_name(a), a->previous);
        rc = validate_reload_confirm(a, own, ring, v, &reloaded, msg);
        if (rc != 0)
            restore(a, v, old, len, reloaded);
    }
    free(text);
    free(old);
    return rc;
}

int rk_cli_agent_admit(void *arg, const rk_ring *ring, int64_t version, rk_error *why)
{
    rk_cli_agent_state *a = arg;
    const rk_topology *t = rk_ring_topology(ring);
    char msg[RK_CLI_AGENT_MSG];
    int first = !a->admitted_once;
    a->admitted_once = 1;
    rk_cli_agent_log(a, version, "active: cutting %s over", a->proxy->name);
    rk_topology *own = rk_cli_agent_file_topology(a, msg);
    int rc = comparable(a, own, t, msg);
    if (rc != RK_OK && first) {
        snprintf(a->fatal_why, sizeof a->fatal_why, "%s", msg);
        atomic_store(&a->fatal, 1);
    }
    if (rc == RK_OK && cut_over(a, own, ring, version, msg) != 0)
        rc = RK_EIO;
    rk_topology_free(own);
    if (rc != RK_OK) {
        atomic_fetch_add(&a->refused, 1);
        atomic_store(&a->refusing, version);
        rk_cli_agent_log(a, version, "refused: %s", msg);
        return rk_error_set(why, rc, NULL, "%s", msg); /* RK-Refused keeps its first 159 bytes */
    }
    atomic_fetch_add(&a->applied, 1);
    atomic_store(&a->held, version);
    atomic_store(&a->refusing, 0);
    rk_cli_agent_log(a, version, "held: the next poll reports it");
    return RK_OK;
}
