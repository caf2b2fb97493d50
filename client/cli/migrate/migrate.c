/* migrate.c — `ringkeeper migrate run|status|throttle|pause|resume|cancel|verify`: the data
 * mover's command (docs/MIGRATE.md, "ringkeeper migrate"). Each subcommand has its own options;
 * this file parses them and hands the work to run.c (the worker), verify.c (the local verify) or
 * one request to the job's routes. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migrate.h"

#define MIGRATE_USAGE                                                                              \
    "usage: ringkeeper migrate run --server URL --cluster C [--token T] [--worker ID]\n"           \
    "              [--before-cutover --to V] [--delete-source] [--max-step F] [--keys-per-s N]\n"  \
    "              [--bytes-per-s N] [--batch N] [--relay] [--finish] [--no-wait] [-o json]\n"     \
    "       ringkeeper migrate run --follow --server URL --cluster C [run's flags]\n"              \
    "       ringkeeper migrate status [--watch] --server URL --cluster C [-o json|table]\n"        \
    "       ringkeeper migrate throttle [--keys-per-s N] [--bytes-per-s N] --server URL ...\n"     \
    "       ringkeeper migrate pause|resume|cancel [--comment TEXT] --server URL ...\n"            \
    "       ringkeeper migrate verify [--batch N] --server URL --cluster C\n"                      \
    "\n"                                                                                           \
    "Moves the keys of the cluster's migration job (docs/MIGRATE.md) between the data servers\n"   \
    "the nodes' addr name. run takes the job (starting one, in window mode unless\n"               \
    "--before-cutover, when there is none or the last one ended), claims it, copies every step\n"  \
    "from where the job is, verifies, and with --finish closes the window once verified. A run\n"  \
    "killed or stopped resumes where its last report left the job. status prints the job;\n"       \
    "throttle, pause, resume and cancel change it (a running worker sees it within a second);\n"   \
    "verify compares every moved key here, read-only, and reports to nobody.\n"                    \
    "\n"                                                                                           \
    "  --worker ID        this worker's name in the lease (default host:pid)\n"                    \
    "  --before-cutover   start the job from the active version to --to V (staged), not the\n"     \
    "                     open window's\n"                                                         \
    "  --to V             the version of a before_cutover job\n"                                   \
    "  --delete-source    start the job with delete_source: its verify deletes each key it\n"      \
    "                     found matched on its new owner from its old one (window jobs only)\n"    \
    "  --max-step F       start the job in steps of at most F of the hash space, (0, 1]\n"         \
    "  --keys-per-s N     the throttle: keys per second, 0 unlimited (run: for the job)\n"         \
    "  --bytes-per-s N    the throttle: bytes per second, 0 unlimited\n"                           \
    "  --batch N          the most keys a batch scans, 1..10000 (default 2000; never\n"            \
    "                     more than a second of --keys-per-s)\n"                                   \
    "  --relay            copy Redis values through this worker (DUMP, RESTORE), not server to\n"  \
    "                     server (MIGRATE): for sources that cannot reach the new owners\n"        \
    "  --finish           run: close the migration window once the job is verified\n"              \
    "  --follow           run: a worker as a service: each migration window's job run to its\n"    \
    "                     finish as it opens (a rollout's steps too), until SIGINT or SIGTERM\n"   \
    "  --no-wait          run: fail at once when another worker holds the lease (by default a\n"   \
    "                     run waits up to 12 s for a killed worker's lease to run out)\n"          \
    "  --watch            status: show the job every 2 s until it ends (verified, finished,\n"     \
    "                     failed, cancelled) or SIGINT: a bar on a terminal, else a JSON line\n"   \
    "                     at each change; exit 0 only when it ended verified or finished\n"        \
    "  --comment TEXT     pause, resume, cancel: recorded with the event\n" RK_CLI_OUTPUT_HELP(    \
        "table") "                 run -o json: one JSON line per report on stdout, then the "     \
                 "job's state\n"                                                                   \
                 "                 (else a progress bar on a terminal's stderr); status -o json: " \
                 "the job\n"                                                                       \
                 "\n"                                                                              \
                 "exit codes: 0 the job is verified (or finished), or the run stopped for a "      \
                 "pause or a\n"                                                                    \
                 "cancel (said on stderr); 1 a data server unreachable (the job is paused with "   \
                 "the error),\n"                                                                   \
                 "the job failed or its lease was lost, the run was interrupted (SIGINT, "         \
                 "SIGTERM: run\n"                                                                  \
                 "again to go on), verify found mismatches; 2 bad flags or "                       \
                 "a request\n"                                                                     \
                 "the server refused (another worker holds the lease, the job is paused, no "      \
                 "window); 4 the\n"                                                                \
                 "server unreachable.\n" SERVER_OPTIONS_HELP

/* ---- run ---- */

static int check_run(const rk_cli_cmd *cmd, const mig_opts *o)
{
    if (o->to && !o->before_cutover)
        return rk_cli_usage_error(cmd, "--to V is for --before-cutover (a window job copies "
                                       "the open window's versions)");
    if (o->before_cutover && !o->to)
        return rk_cli_usage_error(cmd, "--before-cutover needs --to V, the staged version");
    if (o->follow && (o->before_cutover || o->to))
        return rk_cli_usage_error(cmd, "--follow runs the jobs of migration windows, one after "
                                       "another: a pre-warm (--before-cutover) is run alone");
    if (o->before_cutover && o->finish)
        return rk_cli_usage_error(cmd, "--finish closes a migration window: a --before-cutover "
                                       "job has none (activate its version, then run again)");
    if (o->before_cutover && o->delete_source)
        return rk_cli_usage_error(cmd, "--delete-source is for a window job: before the cutover "
                                       "the sources still serve their keys");
    return RK_EXIT_OK;
}

static int run(const rk_cli_cmd *cmd, int argc, char **argv)
{
    static const rk_cli_view view = {"table", NULL, NULL};
    static char worker[128];
    rk_cli_server s = {0};
    mig_opts o = {.keys_per_s = -1, .bytes_per_s = -1};
    unsigned long long keys = ~0ull, bytes = ~0ull, batch = RKM_DEFAULT_BATCH;
    const rk_cli_option opts[] = {
        RK_CLI_OPT("worker", RK_CLI_TEXT, &o.worker),
        RK_CLI_OPT("before-cutover", RK_CLI_FLAG, &o.before_cutover),
        RK_CLI_OPT("to", RK_CLI_VERSION, &o.to),
        RK_CLI_OPT("delete-source", RK_CLI_FLAG, &o.delete_source),
        RK_CLI_OPT("max-step", RK_CLI_FRACTION, &o.max_step),
        RK_CLI_OPT("keys-per-s", RK_CLI_NUMBER, &keys, .lo = 0, .hi = 1000000000),
        RK_CLI_OPT("bytes-per-s", RK_CLI_NUMBER, &bytes, .lo = 0, .hi = 10ull << 30),
        RK_CLI_OPT("batch", RK_CLI_NUMBER, &batch, .lo = 1, .hi = RKM_SCAN_MAX),
        RK_CLI_OPT("relay", RK_CLI_FLAG, &o.relay),
        RK_CLI_OPT("finish", RK_CLI_FLAG, &o.finish),
        RK_CLI_OPT("no-wait", RK_CLI_FLAG, &o.no_wait),
        RK_CLI_OPT("follow", RK_CLI_FLAG, &o.follow),
        RK_CLI_OUTPUT_OPT(&view),
        {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &s, NULL);
    rc = rc ? rc : rk_cli_server_check(cmd->name, &s);
    rc = rc ? rc : check_run(cmd, &o);
    if (rc != RK_EXIT_OK)
        return rc;
    o.keys_per_s = keys == ~0ull ? -1 : (long long)keys;
    o.bytes_per_s = bytes == ~0ull ? -1 : (long long)bytes;
    o.batch = (size_t)batch;
    o.json = strcmp(rk_cli_format(), "json") == 0;
    if (!o.worker) {
        char host[64] = "worker";
        gethostname(host, sizeof host - 1);
        snprintf(worker, sizeof worker, "%s:%ld", host, (long)getpid());
        o.worker = worker;
    }
    o.finish |= o.follow;
    mig_run r = {.cmd = cmd->name, .s = &s, .o = &o};
    return o.follow ? mig_follow(&r) : mig_run_job(&r);
}

/* ---- status, throttle, pause, resume, cancel ---- */

static int job_table(const json_t *doc)
{
    return mig_show_job(doc);
}

static const rk_cli_view job_view = {"table", job_table, "state"};

/* METHOD route with `body` (stolen) and the job it answers printed. */
static int job_call(const rk_cli_cmd *cmd, const rk_cli_server *s, const char *method,
                    const char *route, json_t *body)
{
    json_t *job = NULL;
    int rc = route ? mig_call(cmd->name, s, method, route, body, &job, NULL, NULL)
                   : mig_get_job(cmd->name, s, &job);
    if (rc == RK_EXIT_OK && !job)
        return rk_cli_fail(cmd->name, RK_EXIT_USAGE,
                           "cluster %s has no migration job: ringkeeper migrate run starts one",
                           s->cluster);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_print_result(cmd->name, job);
    json_decref(job);
    return rc;
}

static int status(const rk_cli_cmd *cmd, int argc, char **argv)
{
    rk_cli_server s = {0};
    int watch = 0;
    const rk_cli_option opts[] = {
        RK_CLI_OPT("watch", RK_CLI_FLAG, &watch), RK_CLI_OUTPUT_OPT(&job_view), {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &s, NULL);
    rc = rc ? rc : rk_cli_server_check(cmd->name, &s);
    if (rc != RK_EXIT_OK)
        return rc;
    return watch ? mig_watch_job(cmd->name, &s, strcmp(rk_cli_format(), "json") == 0)
                 : job_call(cmd, &s, "GET", NULL, NULL);
}

static int throttle(const rk_cli_cmd *cmd, int argc, char **argv)
{
    rk_cli_server s = {0};
    unsigned long long keys = ~0ull, bytes = ~0ull;
    const rk_cli_option opts[] = {
        RK_CLI_OPT("keys-per-s", RK_CLI_NUMBER, &keys, .lo = 0, .hi = 1000000000),
        RK_CLI_OPT("bytes-per-s", RK_CLI_NUMBER, &bytes, .lo = 0, .hi = 10ull << 30),
        RK_CLI_OUTPUT_OPT(&job_view),
        {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &s, NULL);
    rc = rc ? rc : rk_cli_server_check(cmd->name, &s);
    if (rc == RK_EXIT_OK && keys == ~0ull && bytes == ~0ull)
        rc = rk_cli_usage_error(cmd, "give --keys-per-s N or --bytes-per-s N (0: unlimited)");
    if (rc != RK_EXIT_OK)
        return rc;
    json_t *body = json_object();
    if (body && keys != ~0ull)
        json_object_set_new(body, "keys_per_s", json_integer((json_int_t)keys));
    if (body && bytes != ~0ull)
        json_object_set_new(body, "bytes_per_s", json_integer((json_int_t)bytes));
    return job_call(cmd, &s, "PUT", "/migration/throttle", body);
}

/* pause, resume and cancel: the subcommand's name is the route's last part. */
static int control(const rk_cli_cmd *cmd, int argc, char **argv)
{
    rk_cli_server s = {0};
    const char *comment = NULL;
    const rk_cli_option opts[] = {
        RK_CLI_OPT("comment", RK_CLI_TEXT, &comment), RK_CLI_OUTPUT_OPT(&job_view), {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &s, NULL);
    rc = rc ? rc : rk_cli_server_check(cmd->name, &s);
    if (rc != RK_EXIT_OK)
        return rc;
    char route[64];
    snprintf(route, sizeof route, "/migration/%s", strchr(cmd->name, ' ') + 1);
    return job_call(cmd, &s, "POST", route, comment ? json_pack("{ss}", "comment", comment) : NULL);
}

static int verify(const rk_cli_cmd *cmd, int argc, char **argv)
{
    rk_cli_server s = {0};
    unsigned long long batch = RKM_DEFAULT_BATCH;
    const rk_cli_option opts[] = {
        RK_CLI_OPT("batch", RK_CLI_NUMBER, &batch, .lo = 1, .hi = RKM_SCAN_MAX), {0}};
    int rc = rk_cli_parse(cmd, argc, argv, opts, &s, NULL);
    rc = rc ? rc : rk_cli_server_check(cmd->name, &s);
    return rc ? rc : mig_verify_local(cmd->name, &s, (size_t)batch);
}

/* ---- the command ---- */

static const rk_cli_cmd subs[] = {
    {"migrate run", run, MIGRATE_USAGE, NULL, NULL},
    {"migrate status", status, MIGRATE_USAGE, NULL, NULL},
    {"migrate throttle", throttle, MIGRATE_USAGE, NULL, NULL},
    {"migrate pause", control, MIGRATE_USAGE, NULL, NULL},
    {"migrate resume", control, MIGRATE_USAGE, NULL, NULL},
    {"migrate cancel", control, MIGRATE_USAGE, NULL, NULL},
    {"migrate verify", verify, MIGRATE_USAGE, NULL, NULL},
};

static int migrate(const rk_cli_cmd *cmd, int argc, char **argv)
{
    if (argc < 2)
        return rk_cli_usage_error(cmd, "give a subcommand: run, status, throttle, pause, resume, "
                                       "cancel or verify");
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (strcmp(strchr(subs[i].name, ' ') + 1, argv[1]) == 0)
            return subs[i].run(&subs[i], argc - 1, argv + 1);
    return rk_cli_usage_error(cmd,
                              "unknown subcommand \"%s\": run, status, throttle, pause, "
                              "resume, cancel or verify",
                              argv[1]);
}

const rk_cli_cmd rk_cli_migrate = {"migrate", migrate, MIGRATE_USAGE, NULL, NULL};
