/* exec.c — runs a proxy's command for the agent (validate, reload, confirm): sh -c in a process
 * group of its own, bounded by the agent's command timeout, its output kept for the reason a
 * refusal gives. */
#define _GNU_SOURCE /* strcasestr, close_range */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define TAIL_MAX 1024 /* the last bytes of a command's output kept */

extern char **environ;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* In the child: its own process group (so a timeout kills what it started too), the output into
 * the pipe, then sh. Only calls that are safe between fork and exec in a process of threads. */
static void child(const char *command, char **env, int out)
{
    char *argv[] = {"sh", "-c", (char *)command, NULL};
    setpgid(0, 0);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    /* nothing else of the agent's: a proxy a command starts (nutcracker -d) would keep the
     * agent's sockets (its /metrics port, a long poll) open for as long as it runs */
    close_range(3, ~0U, 0);
    execve("/bin/sh", argv, env);
    _exit(127);
}

/* The command's variables, written before the fork (a child of a process of threads may not
 * allocate). */
typedef struct command_vars {
    char file[RK_CLI_AGENT_PATH + 16], previous[RK_CLI_AGENT_PATH + 24], version[48];
} command_vars;

/* The agent's environment without its own RK_AGENT_ variables, then those of `v`: a new array of
 * borrowed strings (free() the array only), NULL when out of memory. */
static char **command_env(const rk_cli_agent_state *a, int64_t version, command_vars *v)
{
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    char **env = malloc((n + 4) * sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "RK_AGENT_", 9) != 0)
            env[k++] = environ[i];
    snprintf(v->file, sizeof v->file, "RK_AGENT_FILE=%s", a->file);
    snprintf(v->previous, sizeof v->previous, "RK_AGENT_PREVIOUS=%s", a->previous);
    snprintf(v->version, sizeof v->version, "RK_AGENT_VERSION=%" PRId64, version);
    env[k++] = v->file;
    env[k++] = v->previous;
    env[k++] = v->version;
    env[k] = NULL;
    return env;
}

/* Keeps the last TAIL_MAX bytes read from fd into tail (of *len bytes). 0 at the end. */
static int read_tail(int fd, char *tail, size_t *len)
{
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0)
        return n < 0 && errno == EINTR ? 1 : 0;
    size_t keep = (size_t)n > TAIL_MAX ? TAIL_MAX : (size_t)n;
    if (*len + keep > TAIL_MAX) {
        size_t drop = *len + keep - TAIL_MAX;
        memmove(tail, tail + drop, *len - drop);
        *len -= drop;
    }
    memcpy(tail + *len, buf + n - keep, keep);
    *len += keep;
    return 1;
}

/* What the output says is wrong, for a refusal's reason: from the first "[emerg]", "[alert]" or
 * "[error]" (nginx's and HAProxy's marks), else the first line saying "error", else the last
 * line; controls as spaces. */
static const char *reason(char *tail, size_t len)
{
    static const char *const marks[] = {"[emerg]", "[alert]", "[error]"};
    tail[len] = '\0';
    for (char *p = tail; *p; p++)
        *p = (unsigned char)*p < 0x20 && *p != '\n' ? ' ' : *p;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        char *at = strcasestr(tail, marks[i]);
        if (at)
            return at[strcspn(at, "\n")] = '\0', at;
    }
    char *at = strcasestr(tail, "error"), *line;
    if (at) {
        while (at > tail && at[-1] != '\n')
            at--;
        return at[strcspn(at, "\n")] = '\0', at;
    }
    while (len && (tail[len - 1] == '\n' || tail[len - 1] == ' '))
        tail[--len] = '\0';
    line = strrchr(tail, '\n');
    line = line ? line + 1 : tail;
    return *line ? line : "(no output)";
}

/* Reads the child's output until it exits (what it left running in the background may hold the
 * pipe open: not waited for) or the deadline passes; 0 with its status, or -1 at the deadline. */
static int drain(int fd, pid_t pid, long long deadline, char *tail, size_t *len, int *status)
{
    int readable = 1;
    for (;;) {
        pid_t done = waitpid(pid, status, WNOHANG);
        long long left = deadline - now_ms();
        struct pollfd p = {fd, POLLIN, 0};
        int wait = done == pid || !readable ? 0 : (int)(left > 100 ? 100 : left > 0 ? left : 0);
        while (readable && poll(&p, 1, wait) > 0 && (readable = read_tail(fd, tail, len)))
            wait = 0; /* what is there already, then look at the child again */
        if (done == pid)
            return 0;
        if (left <= 0)
            return -1;
        if (!readable) /* closed: nothing to read, only the exit to wait for */
            usleep(20000);
    }
}

int rk_cli_agent_exec(const rk_cli_agent_state *a, const char *command, int64_t version,
                      char msg[RK_CLI_AGENT_MSG])
{
    int fds[2];
    command_vars vars;
    char **env = command_env(a, version, &vars);
    if (!env || pipe2(fds, O_CLOEXEC) != 0) {
        free(env);
        return snprintf(msg, RK_CLI_AGENT_MSG, "cannot run it: %s", strerror(errno)), -1;
    }
    pid_t pid = fork();
    if (pid == 0)
        child(command, env, fds[1]); /* dup2 clears O_CLOEXEC on its copies */
    free(env);
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return snprintf(msg, RK_CLI_AGENT_MSG, "cannot run it: %s", strerror(errno)), -1;
    }
    char tail[TAIL_MAX + 1];
    size_t len = 0;
    int status = 0;
    int late =
        drain(fds[0], pid, now_ms() + (long long)a->command_timeout * 1000, tail, &len, &status);
    close(fds[0]);
    if (late) { /* the child and what it started in its group */
        kill(-pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    if (late)
        return snprintf(msg, RK_CLI_AGENT_MSG, "killed after %llu s: %.400s", a->command_timeout,
                        reason(tail, len)),
               -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        snprintf(msg, RK_CLI_AGENT_MSG, "exit %d: %.400s", WEXITSTATUS(status), reason(tail, len));
    else
        snprintf(msg, RK_CLI_AGENT_MSG, "killed by signal %d: %.400s", WTERMSIG(status),
                 reason(tail, len));
    return -1;
}
