/* agent.c — `ringkeeper agent` (docs/AGENT.md): its options (flags, and a config file of the same
 * names), the checks before it starts (exit 2, one line naming what), and its loop: the client
 * library long-polls the cluster's ring on its refresher thread and hands each new ring to
 * apply.c; this thread waits for a signal to stop, and logs what the library says. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define MAX_ARGS     128 /* arguments from the config file and the command line, at most */
#define DEFAULT_WAIT 30  /* seconds of a long poll */
#define DEFAULT_CMD  30  /* seconds a command may run */
#define DEFAULT_CONF 15  /* seconds the proxy has to show the new version */

/* The proxies of this build: a proxy is its file (agent.h's table) and its line here. */
static const rk_cli_proxy *const proxies[] = {&rk_cli_proxy_nginx, &rk_cli_proxy_haproxy,
                                              &rk_cli_proxy_nutcracker};
#define N_PROXIES (sizeof proxies / sizeof proxies[0])

/* The options the proxies add: each one's part (its format's: "upstream", "backend", "pool") and
 * where its built-in steps ask ("pid-file", "socket", "stats"), each name once, and the values. */
typedef struct proxy_opts {
    const char *name[2 * N_PROXIES], *value[2 * N_PROXIES];
    size_t n, part[N_PROXIES], where[N_PROXIES]; /* proxy i's two, as places in name[] */
} proxy_opts;

/* What the options give besides the agent's own fields. */
typedef struct agent_opts {
    const char *config, *proxy, *metrics;
    const char *proxy_names[N_PROXIES + 1];
    proxy_opts po;
    unsigned long long wait;
    int catch_up;
    rk_cli_server server;
} agent_opts;

/* One line of the config file, "name = value" (spaces around '=' optional) as "--name=value",
 * or a flag's name alone as "--name" (a new string); NULL with the reason printed. */
static char *config_arg(const char *path, int line_no, const char *line)
{
    size_t nl = strspn(line, "abcdefghijklmnopqrstuvwxyz-");
    const char *value = line + nl + strspn(line + nl, " \t");
    if (nl == 0 || (*value != '=' && *value)) {
        rk_cli_fail("agent", RK_EXIT_USAGE,
                    "%s:%d: must be \"name = value\" or a flag's name (an option's name)", path,
                    line_no);
        return NULL;
    }
    int flag = !*value;
    value += flag ? 0 : 1 + strspn(value + 1, " \t");
    size_t size = nl + strlen(value) + 4;
    char *arg = malloc(size);
    if (arg)
        snprintf(arg, size, flag ? "--%.*s" : "--%.*s=%s", (int)nl, line, value);
    else
        rk_cli_fail("agent", RK_EXIT_FAIL, "out of memory");
    return arg;
}

/* The config file's settings as arguments into args (new strings, free them); their count, or
 * -1 with the reason printed. Blank lines and lines starting with '#' say nothing. */
static int config_args(const char *path, char **args, int room)
{
    size_t len;
    char *text = rk_cli_read_file("agent", path, &len);
    int n = 0, line_no = 0;
    for (char *line = text, *next; line && *line && n >= 0; line = next) {
        next = line + strcspn(line, "\n");
        next += *next ? (*next = '\0', 1) : 0;
        line_no++;
        line += strspn(line, " \t");
        for (size_t end = strlen(line); end && strchr(" \t\r", line[end - 1]);)
            line[--end] = '\0';
        if (!*line || *line == '#')
            continue;
        if (n == room || !(args[n] = config_arg(path, line_no, line))) {
            if (n == room)
                rk_cli_fail("agent", RK_EXIT_USAGE, "%s: over %d settings", path, room);
            while (n > 0)
                free(args[--n]);
            n = -1;
        } else
            n++;
    }
    free(text);
    return text ? n : -1;
}

/* The value of --config in argv, or NULL. */
static const char *config_path(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            return argv[i + 1];
        if (strncmp(argv[i], "--config=", 9) == 0)
            return argv[i] + 9;
    }
    return NULL;
}

/* The place of option `name` in o, added when it is new. */
static size_t slot(proxy_opts *o, const char *name)
{
    size_t i = 0;
    while (i < o->n && strcmp(o->name[i], name) != 0)
        i++;
    if (i == o->n)
        o->name[o->n++] = name;
    return i;
}

/* The format (formats/format.h) a proxy writes, or NULL when this build has none of its name. */
static const rk_cli_conf_format *format_of(const rk_cli_proxy *p)
{
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++)
        if (strcmp(rk_cli_conf_formats[i]->name, p->format) == 0)
            return rk_cli_conf_formats[i];
    return NULL;
}

static int parse(const rk_cli_cmd *cmd, int argc, char **argv, rk_cli_agent_state *a, agent_opts *o)
{
    rk_cli_option opts[15 + 2 * N_PROXIES] = {
        /* the 14 below, the proxies', the end */
        RK_CLI_OPT("config", RK_CLI_TEXT, &o->config),
        RK_CLI_OPT("proxy", RK_CLI_CHOICE, &o->proxy, .required = 1, .choices = o->proxy_names),
        RK_CLI_OPT("file", RK_CLI_TEXT, &a->file, .required = 1),
        RK_CLI_OPT("validate", RK_CLI_TEXT, &a->validate),
        RK_CLI_OPT("reload", RK_CLI_TEXT, &a->reload),
        RK_CLI_OPT("confirm", RK_CLI_TEXT, &a->confirm),
        RK_CLI_OPT("client-id", RK_CLI_TEXT, &a->client_id),
        RK_CLI_OPT("wait", RK_CLI_NUMBER, &o->wait, .lo = 1, .hi = 60),
        RK_CLI_OPT("command-timeout", RK_CLI_NUMBER, &a->command_timeout, .lo = 1, .hi = 3600),
        RK_CLI_OPT("confirm-timeout", RK_CLI_NUMBER, &a->confirm_timeout, .lo = 1, .hi = 3600),
        RK_CLI_OPT("metrics", RK_CLI_TEXT, &o->metrics),
        RK_CLI_OPT("catch-up", RK_CLI_FLAG, &o->catch_up),
        RK_CLI_OPT("stop", RK_CLI_TEXT, &a->stop),
        RK_CLI_OPT("start", RK_CLI_TEXT, &a->start),
    };
    size_t n = 14;
    for (size_t i = 0; i < N_PROXIES; i++) {
        const rk_cli_conf_format *f = format_of(proxies[i]);
        o->proxy_names[i] = proxies[i]->name;
        o->po.part[i] = slot(&o->po, f ? f->part : proxies[i]->format);
        o->po.where[i] = slot(&o->po, proxies[i]->where_option);
    }
    for (size_t i = 0; i < o->po.n; i++)
        opts[n++] = (rk_cli_option)RK_CLI_OPT(o->po.name[i], RK_CLI_TEXT, &o->po.value[i]);
    return rk_cli_parse(cmd, argc, argv, opts, &o->server, NULL);
}

/* The proxy's part and `where` chosen from the options; a usage error when an option of another
 * proxy only is given. */
static int choose(const rk_cli_cmd *cmd, rk_cli_agent_state *a, agent_opts *o)
{
    size_t p = 0;
    while (strcmp(proxies[p]->name, o->proxy) != 0)
        p++;
    a->proxy = proxies[p];
    a->format = format_of(a->proxy);
    if (!a->format)
        return rk_cli_fail(cmd->name, RK_EXIT_FAIL, "this build has no %s format",
                           a->proxy->format);
    size_t part = o->po.part[p], where = o->po.where[p];
    for (size_t i = 0; i < o->po.n; i++)
        if (o->po.value[i] && i != part && i != where)
            return rk_cli_usage_error(cmd, "--proxy %s takes --%s and --%s, not --%s", o->proxy,
                                      o->po.name[part], o->po.name[where], o->po.name[i]);
    a->part = o->po.value[part];
    a->where = o->po.value[where] ? o->po.value[where] : a->proxy->where_default;
    if (!a->part && !a->format->part_optional)
        return rk_cli_usage_error(cmd, "--%s NAME is required", a->format->part);
    return RK_EXIT_OK;
}

/* --catch-up (docs/AGENT.md): for a proxy that restarts, in a build with the data mover. */
static int check_catch_up(const rk_cli_cmd *cmd, rk_cli_agent_state *a, const agent_opts *o)
{
    if (!o->catch_up)
        return a->stop || a->start
                   ? rk_cli_usage_error(cmd, "--stop and --start go with --catch-up")
                   : RK_EXIT_OK;
    if (!a->proxy->stop)
        return rk_cli_usage_error(cmd,
                                  "--catch-up needs a proxy that stops: %s reloads, its old "
                                  "workers serving while the new ones start; only nutcracker "
                                  "restarts",
                                  a->proxy->name);
#ifdef RK_CLI_MIGRATE
    a->catch_up = rk_cli_agent_catch_up;
    return RK_EXIT_OK;
#else
    return rk_cli_fail(cmd->name, RK_EXIT_USAGE, "--catch-up: this build has no data mover");
#endif
}

/* The defaults, the server options and the file's part: a refusal to start (exit 2, one line)
 * when the file cannot be read or lacks the part. */
static int check(const rk_cli_cmd *cmd, rk_cli_agent_state *a, agent_opts *o, char *id, size_t size)
{
    int rc = choose(cmd, a, o);
    if (rc == RK_EXIT_OK)
        rc = check_catch_up(cmd, a, o);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_server_check(cmd->name, &o->server);
    if (rc != RK_EXIT_OK)
        return rc;
    a->cluster = o->server.cluster;
    a->command_timeout = a->command_timeout ? a->command_timeout : DEFAULT_CMD;
    a->confirm_timeout = a->confirm_timeout ? a->confirm_timeout : DEFAULT_CONF;
    o->wait = o->wait ? o->wait : DEFAULT_WAIT;
    char host[64] = "localhost";
    gethostname(host, sizeof host - 1);
    snprintf(id, size, "%s@%s", a->proxy->name, host);
    a->client_id = a->client_id ? a->client_id : id;
    if (!rk_client_id_valid(a->client_id))
        return rk_cli_fail(cmd->name, RK_EXIT_USAGE,
                           "--client-id: must be 1..%d bytes of printable ASCII without spaces, "
                           "got \"%s\"",
                           RK_CLIENT_ID_MAX, a->client_id);
    if (snprintf(a->previous, sizeof a->previous, "%s.rk-previous", a->file) >=
        (int)sizeof a->previous)
        return rk_cli_fail(cmd->name, RK_EXIT_USAGE, "--file: the path is too long");
    char msg[RK_CLI_AGENT_MSG];
    rk_topology *own = rk_cli_agent_file_topology(a, msg);
    rk_topology_free(own);
    return own ? RK_EXIT_OK : rk_cli_fail(cmd->name, RK_EXIT_USAGE, "%s", msg);
}

/* Logs what the library last said when it is news: a ring it refused itself, the server out of
 * reach, and that it is reached again. */
static void log_client(rk_cli_agent_state *a, rk_client *c, char *said, size_t size)
{
    rk_client_status st;
    rk_client_status_get(c, &st);
    if (strcmp(said, st.last_message) == 0)
        return;
    snprintf(said, size, "%s", st.last_message);
    rk_cli_print_safe(stderr, RK_CLI_SAFE_LINE, "ringkeeper agent: %s: %s", a->cluster, said);
    fputc('\n', stderr);
}

/* Runs until SIGTERM or SIGINT (exit 0), or until the first ring cannot go into the file (exit
 * 2). Signals are blocked in every thread, and taken here. */
static int loop(rk_cli_agent_state *a, rk_client *c, const sigset_t *stop)
{
    char said[256] = "";
    struct timespec second = {1, 0};
    for (;;) {
        int sig = sigtimedwait(stop, NULL, &second);
        log_client(a, c, said, sizeof said);
        if (atomic_load(&a->fatal)) {
            rk_cli_fail("agent", RK_EXIT_USAGE, "%s", a->fatal_why);
            return RK_EXIT_USAGE;
        }
        if (sig > 0) {
            fprintf(stderr, "ringkeeper agent: %s: stopping on signal %d\n", a->cluster, sig);
            return RK_EXIT_OK;
        }
    }
}

static int serve(rk_cli_agent_state *a, agent_opts *o)
{
    char product[RK_PRODUCT_MAX + 1]; /* the fleet report shows each proxy with its kind */
    snprintf(product, sizeof product, "ringkeeper-agent/%s (%s)", rk_version(), a->proxy->name);
    rk_client_config cfg = {.server = o->server.url,
                            .cluster = o->server.cluster,
                            .token = o->server.token,
                            .ca_file = o->server.ca_file,
                            .timeout_ms = (long)o->server.timeout * 1000,
                            .client_id = a->client_id,
                            .product = product};
    rk_error err = {0};
    char msg[RK_CLI_AGENT_MSG];
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* before any thread starts: they inherit it */
    rk_client *c = rk_client_new(&cfg, &err);
    if (!c)
        return rk_cli_client_failed("agent", NULL, &err);
    rk_client_set_admit(c, rk_cli_agent_admit, a);
    rk_cli_agent_metrics *m = o->metrics ? rk_cli_agent_metrics_new(a, o->metrics, msg) : NULL;
    int rc = o->metrics && !m ? rk_cli_fail("agent", RK_EXIT_USAGE, "%s", msg) : RK_EXIT_OK;
    if (rc == RK_EXIT_OK && rk_client_start_refresher(c, (unsigned)o->wait, 1000, &err) != RK_OK)
        rc = rk_cli_fail("agent", RK_EXIT_FAIL, "%s", err.message);
    else if (rc == RK_EXIT_OK) {
        fprintf(stderr, "ringkeeper agent: %s: %s %s as %s, polling %s\n", a->cluster,
                a->proxy->name, a->file, a->client_id, o->server.url);
        rc = loop(a, c, &stop);
    }
    rk_client_free(c); /* stops the refresher: a cutover in flight finishes first */
    rk_cli_agent_metrics_free(m);
    return rc;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    char *args[MAX_ARGS], id[RK_CLIENT_ID_MAX + 1];
    const char *path = config_path(argc, argv);
    int n = path ? config_args(path, args + 1, MAX_ARGS / 2) : 0;
    if (n < 0)
        return RK_EXIT_USAGE;
    if (argc + n > MAX_ARGS) {
        while (n > 0)
            free(args[n--]);
        return rk_cli_usage_error(cmd, "over %d arguments", MAX_ARGS);
    }
    args[0] = argv[0]; /* the config file's settings first: the command line's win */
    memcpy(args + 1 + n, argv + 1, (size_t)(argc - 1) * sizeof *argv);
    rk_cli_agent_state a = {0};
    agent_opts o = {0};
    int rc = parse(cmd, argc + n, args, &a, &o);
    if (rc == RK_EXIT_OK)
        rc = check(cmd, &a, &o, id, sizeof id);
    if (rc == RK_EXIT_OK)
        rc = serve(&a, &o);
    for (int i = 1; i <= n; i++)
        free(args[i]);
    return rc;
}

#define AGENT_USAGE                                                                                \
    "usage: ringkeeper agent --proxy nginx|haproxy|nutcracker --file FILE\n"                       \
    "         [--upstream NAME | --backend NAME | --pool NAME] --server URL -c C [--token T]\n"    \
    "         [--config FILE] [--client-id ID] [--validate CMD] [--reload CMD] [--confirm CMD]\n"  \
    "         [--pid-file F | --socket F | --stats HOST:PORT] [--metrics 127.0.0.1:PORT]\n"        \
    "         [--catch-up [--stop CMD] [--start CMD]]\n"                                           \
    "\n"                                                                                           \
    "Runs beside a proxy and cuts it over to each version activated in cluster C: the version\n"   \
    "is written into the proxy's file (only the servers of the upstream, backend or pool; the\n"   \
    "file before is kept as FILE.rk-previous), validated by the proxy, reloaded (nutcracker:\n"    \
    "restarted) and confirmed running, and only then reported held in the next poll. On any\n"     \
    "failure the file (and the running configuration) is restored and the version refused with\n"  \
    "the reason, which `ringkeeper clients` shows. Exits 2 with one line when the file lacks\n"    \
    "the part or its hash settings are not the cluster's; 0 on SIGTERM. docs/AGENT.md.\n"          \
    "\n"                                                                                           \
    "  --proxy P        nginx, haproxy or nutcracker\n"                                            \
    "  --file FILE      the proxy's configuration file, rewritten in place\n"                      \
    "  --upstream NAME  nginx's upstream; --backend NAME HAProxy's backend; --pool NAME\n"         \
    "                   nutcracker's pool (which may be left out when the file has one)\n"         \
    "  --config FILE    settings as \"name = value\" lines, the options' names (flags win)\n"      \
    "  --client-id ID   RK-Client id (default PROXY@HOSTNAME)\n"                                   \
    "  --validate CMD   validate command, run by sh with $RK_AGENT_FILE set (default: the\n"       \
    "                   proxy's own test of the file: nginx -t, haproxy -c, nutcracker -t)\n"      \
    "  --reload CMD     reload command (default: nginx: SIGHUP to the master of --pid-file;\n"     \
    "                   haproxy: `reload` on the master CLI --socket; nutcracker: systemctl\n"     \
    "                   restart nutcracker)\n"                                                     \
    "  --confirm CMD    a command that exits 0 once the proxy runs the new file (default:\n"       \
    "                   nginx: a new worker generation; haproxy: show servers state of the\n"      \
    "                   backend; nutcracker: the pool's servers on its stats port)\n"              \
    "  --pid-file F     nginx's pid file (default /run/nginx.pid)\n"                               \
    "  --socket F       HAProxy's master CLI, of -W -S (default /run/haproxy-master.sock)\n"       \
    "  --stats H:P      nutcracker's stats address (default 127.0.0.1:22222)\n"                    \
    "  --wait S         long poll of S seconds, 1..60 (default 30)\n"                              \
    "  --command-timeout S  a command's time, 1..3600 (default 30)\n"                              \
    "  --confirm-timeout S  time to show the new version, 1..3600 (default 15)\n"                  \
    "  --metrics A      serve GET /metrics on 127.x.x.x:PORT\n"                                    \
    "  --catch-up       nutcracker: instead of the restart, stop it, write each moving key's\n"    \
    "                   value from its old owner to its new one where they differ, start it:\n"    \
    "                   no stale read after a pre-warm (this proxy must be the pool's only way\n"  \
    "                   in while it runs; docs/AGENT.md)\n"                                        \
    "  --stop CMD, --start CMD  --catch-up's (default: systemctl stop/start "                      \
    "nutcracker)\n" SERVER_OPTIONS_HELP_("bearer token (a client token)")

const rk_cli_cmd rk_cli_agent = {"agent", run, AGENT_USAGE, NULL, NULL};
