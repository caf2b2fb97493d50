/* nginx.c — nginx for the agent (docs/AGENT.md, "nginx"): `nginx -t` validates, the reload signal
 * (SIGHUP) to the master named by its pid file reloads, and a new generation of workers (a worker
 * PID the master did not have before) confirms: nginx starts new workers only when it loaded the
 * new configuration, and keeps the old ones when it could not. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

/* The master's PID from the pid file; -1 with a sentence in msg. */
static long master_pid(const rk_cli_agent_state *a, char msg[RK_CLI_AGENT_MSG])
{
    FILE *f = fopen(a->where, "r");
    long pid = -1;
    if (!f || fscanf(f, "%ld", &pid) != 1 || pid <= 1)
        pid = -1;
    if (f)
        fclose(f);
    if (pid < 0)
        snprintf(msg, RK_CLI_AGENT_MSG, "no master PID in the pid file %s (--pid-file)", a->where);
    else if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        snprintf(msg, RK_CLI_AGENT_MSG, "the master %ld of the pid file %s is not running", pid,
                 a->where),
            pid = -1;
    return pid;
}

/* The PIDs whose parent is `parent` (Linux: /proc/PID/stat's fourth field), at most max. */
static size_t children(long parent, long *pids, size_t max)
{
    DIR *d = opendir("/proc");
    size_t n = 0;
    for (struct dirent *e; d && n < max && (e = readdir(d));) {
        char path[300], line[512];
        long pid = strtol(e->d_name, NULL, 10), ppid = 0;
        if (pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        /* "pid (comm) state ppid ...": comm may hold anything, so read after its last ')' */
        char *end = f && fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
        if (end && sscanf(end + 1, " %*c %ld", &ppid) == 1 && ppid == parent)
            pids[n++] = pid;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

static int before(const rk_cli_agent_state *a, rk_cli_proxy_before *b, char msg[RK_CLI_AGENT_MSG])
{
    long master = master_pid(a, msg);
    if (master < 0)
        return -1;
    b->n_pids = children(master, b->pids, RK_CLI_AGENT_MAX_PIDS);
    return 0;
}

static int reload_now(const rk_cli_agent_state *a, char msg[RK_CLI_AGENT_MSG])
{
    long master = master_pid(a, msg);
    if (master >= 0 && kill((pid_t)master, SIGHUP) != 0)
        return snprintf(msg, RK_CLI_AGENT_MSG, "SIGHUP to the master %ld: %s", master,
                        strerror(errno)),
               -1;
    return master < 0 ? -1 : 0;
}

static int had(const rk_cli_proxy_before *b, long pid)
{
    for (size_t i = 0; i < b->n_pids; i++)
        if (b->pids[i] == pid)
            return 1;
    return 0;
}

static int confirm(const rk_cli_agent_state *a, const rk_cli_proxy_before *b, const rk_topology *t,
                   char msg[RK_CLI_AGENT_MSG])
{
    (void)t; /* nginx shows no upstream's servers: its new workers are the proof */
    long master = master_pid(a, msg), now[RK_CLI_AGENT_MAX_PIDS];
    if (master < 0)
        return RK_CLI_CONFIRM_UNASKED;
    size_t n = children(master, now, RK_CLI_AGENT_MAX_PIDS);
    for (size_t i = 0; i < n; i++)
        if (!had(b, now[i]))
            return snprintf(msg, RK_CLI_AGENT_MSG, "master %ld runs a new worker generation (%ld)",
                            master, now[i]),
                   RK_CLI_CONFIRM_RUNS;
    snprintf(msg, RK_CLI_AGENT_MSG,
             "master %ld started no new worker: it did not load the file (see its error log)",
             master);
    return RK_CLI_CONFIRM_UNCHANGED;
}

const rk_cli_proxy rk_cli_proxy_nginx = {
    .name = "nginx",
    .format = "nginx",
    .validate = "nginx -t -q -c \"$RK_AGENT_FILE\"",
    .reload_word = "reload",
    .where_option = "pid-file",
    .where_default = "/run/nginx.pid",
    .before = before,
    .reload_now = reload_now,
    .confirm = confirm,
};
