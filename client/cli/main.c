/* main.c — `ringkeeper`: the operators' and scripts' tool; dispatches to one command per file. */
#include <string.h>

#include "cli.h"

#ifdef RK_CLI_MIGRATE /* built with the data mover (client/mover: libmemcached, hiredis) */
extern const rk_cli_cmd rk_cli_migrate, rk_cli_measure;
#define MIGRATE_CMD &rk_cli_migrate, &rk_cli_measure,
#define MIGRATE_HELP                                                                               \
    "  migrate   move the data of the migration job between the data servers, and steer it\n"      \
    "  measure   a load profile of the data servers (keys and bytes over the ring), which\n"       \
    "            plan --load weighs a plan by\n"
#else
#define MIGRATE_CMD
#define MIGRATE_HELP ""
#endif

static const rk_cli_cmd *const commands[] = {
    &rk_cli_lookup,  &rk_cli_plan,     &rk_cli_simulate, &rk_cli_publish,   &rk_cli_activate,
    &rk_cli_revert,  &rk_cli_versions, &rk_cli_show,     &rk_cli_import,    &rk_cli_export,
    &rk_cli_approve, &rk_cli_policy,   &rk_cli_events,   &rk_cli_migration, &rk_cli_clients,
    &rk_cli_watch,   &rk_cli_rollout,  &rk_cli_rollouts, &rk_cli_agent,     &rk_cli_suggest,
    MIGRATE_CMD};

static int usage(FILE *to, int code)
{
    fprintf(
        to,
        "usage: ringkeeper COMMAND [OPTIONS]   (ringkeeper help COMMAND, or COMMAND --help,\n"
        "                                       for its options)\n"
        "       ringkeeper version             (or --version)\n"
        "\n"
        "commands, offline or with a server:\n"
        "  lookup    print the node of each key read from stdin (--topology FILE or --server)\n"
        "  plan      the migration plan between two topologies or two versions\n"
        "  simulate  count how real keys move and spread between two topologies or versions\n"
        "  rollout   a change broken into steps that ramp weights, for review\n"
        "  suggest   weights that balance a load profile's bytes or reads, within a budget\n"
        "  import    a twemproxy pool, nginx upstream or HAProxy backend as a topology\n"
        "  export    a topology as a twemproxy pool, nginx upstream or HAProxy backend (--into:\n"
        "            its servers rewritten in the balancer's file)\n"
        "commands on the server (--server URL --cluster C):\n"
        "  publish   publish a topology file as the next version (--activate: and cut over)\n"
        "  activate  cut the cluster over to a version\n"
        "  revert    publish a copy of an older version (then activate it to roll back)\n"
        "  versions  list the versions, newest first\n"
        "  show      print one version document\n"
        "  watch     a line for the active version, then one for each activation (long poll)\n"
        "  approve   approve the plan from the active version to a version (cutover policy)\n"
        "  policy    show or set the cluster's cutover policy\n"
        "  events    the cluster's audit: publishes, approvals, activations, policy changes\n"
        "  clients   how many clients hold each version, and whether they converged\n"
        "  migration  finish: close the migration window (dual reads) once the data has "
        "moved\n"
        "  rollouts  make, approve, start and steer the server's rollouts (changes in "
        "steps)\n"
        "  agent     beside a proxy (nginx, HAProxy, nutcracker): cut it over to each version\n"
        "            activated (write, validate, reload, confirm), or refuse it with the "
        "reason\n" MIGRATE_HELP "\n"
        "output: commands that print a result take -o json|table (each has its default) and\n"
        "-q/--quiet, which prints only the essential: the version number for publish, revert and\n"
        "show, nothing for activate, approve and policy, the version numbers for versions, the\n"
        "event numbers for events, the keys that move for simulate, the moved fraction for plan,\n"
        "the digest for rollout, the node ids for lookup, the version for watch. Errors still go\n"
        "to stderr, exit codes are the same. import and export print file formats, not results:\n"
        "they have no -o.\n"
        "\n"
        "environment: RINGKEEPER_SERVER is the default --server (http:// or https://),\n"
        "RINGKEEPER_CLUSTER the default --cluster (-c C) of a command on the server (a command\n"
        "given a file, such as lookup --topology, stays offline),\n"
        "RINGKEEPER_TOKEN the default --token (a bearer token for writes; never printed),\n"
        "RINGKEEPER_CA_FILE the default "
        "--ca-file (CA certificates to verify an https server with; else the system's).\n"
        "\n"
        "exit codes:\n"
        "  0  ok\n"
        "  1  failure: out of memory, a write error, the server failed (HTTP 5xx) or answered\n"
        "     something unexpected\n"
        "  2  bad input: flags, files, an invalid topology, or a request the server refused\n"
        "     (HTTP 4xx: invalid topology, unknown cluster or version, conflict, no or wrong\n"
        "     token); the server's message is printed\n"
        "  3  ring refused: its cluster, hash, vnode_factor, fingerprint or version is not what\n"
        "     was expected (lookup)\n"
        "  4  server unreachable or no answer within --timeout (for lookup: and no usable --cache\n"
        "     file)\n");
    return code;
}

static const rk_cli_cmd *find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i]->name) == 0)
            return commands[i];
    return NULL;
}

static int unknown(const char *name)
{
    fprintf(stderr,
            "ringkeeper: unknown command \"%s\"\nTry 'ringkeeper --help' for the commands.\n",
            name);
    return RK_EXIT_USAGE;
}

/* `ringkeeper help [COMMAND]`, as kubectl and git users type it: the same texts as --help. */
static int help(int argc, char **argv)
{
    if (argc > 3)
        return rk_cli_fail("help", RK_EXIT_USAGE, "one command at most, got %d", argc - 2);
    if (argc < 3)
        return usage(stdout, RK_EXIT_OK);
    const rk_cli_cmd *c = find(argv[2]);
    if (!c)
        return unknown(argv[2]);
    fputs(c->usage, stdout);
    return RK_EXIT_OK;
}

static int version(void)
{
    return printf("ringkeeper %s\n", rk_version()) < 0 ? RK_EXIT_FAIL : RK_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr, RK_EXIT_USAGE);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
        return usage(stdout, RK_EXIT_OK);
    if (strcmp(argv[1], "help") == 0)
        return help(argc, argv);
    if (strcmp(argv[1], "--version") == 0 || (strcmp(argv[1], "version") == 0 && argc == 2))
        return version();
    const rk_cli_cmd *c = find(argv[1]);
    if (!c)
        return unknown(argv[1]);
    if (rk_cli_wants_help(argc - 1, argv + 1)) {
        fputs(c->usage, stdout);
        return RK_EXIT_OK;
    }
    return c->run(c, argc - 1, argv + 1);
}
