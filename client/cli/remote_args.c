/* remote_args.c — the command line of the server commands: --server/--cluster/--token/--ca-file
 * with their environment defaults, the command's one extra option and its operand. */
#include <getopt.h>
#include <stdlib.h>

#include "cli.h"

int rk_cli_server_option(rk_cli_server *s, int c, const char *arg)
{
    const char **slot = c == 'S'   ? &s->url
                        : c == 'C' ? &s->cluster
                        : c == 'T' ? &s->token
                        : c == 'A' ? &s->ca_file
                                   : NULL;
    if (slot)
        *slot = arg;
    return slot != NULL;
}

int rk_cli_server_check(const char *cmd, rk_cli_server *s)
{
    if (!s->url)
        s->url = getenv("RINGKEEPER_SERVER");
    if (!s->token)
        s->token = getenv("RINGKEEPER_TOKEN");
    if (!s->ca_file)
        s->ca_file = getenv("RINGKEEPER_CA_FILE");
    if (s->ca_file && !*s->ca_file)
        s->ca_file = NULL;
    if (!s->url || !*s->url)
        return rk_cli_fail(cmd, RK_EXIT_USAGE,
                           "no server: give --server URL or set RINGKEEPER_SERVER "
                           "(e.g. http://127.0.0.1:7070)");
    if (!s->cluster)
        return rk_cli_fail(cmd, RK_EXIT_USAGE, "--cluster C is required with a server");
    if (!rk_cluster_name_valid(s->cluster))
        return rk_cli_fail(cmd, RK_EXIT_USAGE,
                           "--cluster: \"%s\" is not a cluster name (a-z, 0-9, '.', '_', '-'; "
                           "1..63 bytes, starting with a letter or digit)",
                           s->cluster);
    return RK_EXIT_OK;
}

int rk_cli_remote_parse(const rk_cli_cmd *cmd, int argc, char **argv, int operands,
                        rk_cli_remote_args *a)
{
    struct option opts[] = {RK_CLI_SERVER_OPTIONS,
                            {a->flag ? a->flag : "", a->flag_has_arg, NULL, 'x'},
                            {NULL, 0, NULL, 0}};
    if (!a->flag)
        opts[4] = opts[5];
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'x')
            a->flag_value = optarg ? optarg : "";
        else if (!rk_cli_server_option(&a->server, c, optarg))
            return rk_cli_usage(cmd);
    }
    if (argc - optind != operands)
        return rk_cli_usage(cmd);
    a->operand = operands ? argv[optind] : NULL;
    return rk_cli_server_check(cmd->name, &a->server);
}
