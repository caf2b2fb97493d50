/* publish.c — `ringkeeper publish FILE`: a topology file becomes the cluster's next version. */
#include <getopt.h>
#include <stdlib.h>

#include "cli.h"

static int run(int argc, char **argv)
{
    rk_cli_remote_args a = {.flag = "activate", .flag_has_arg = no_argument};
    int rc = rk_cli_remote_parse(&rk_cli_publish, argc, argv, 1, &a);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_body in = {0}, out = {0};
    in.data = rk_cli_read_file("publish", a.operand, &in.len);
    if (!in.data)
        return RK_EXIT_USAGE;
    rc = rk_cli_call("publish", &a.server, &in, &out, "POST", "/versions%s",
                     a.flag_value ? "?activate=true" : "");
    free(in.data);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_print_json("publish", &out);
    free(out.data);
    return rc;
}

const rk_cli_cmd rk_cli_publish = {
    "publish", run,
    "usage: ringkeeper publish FILE --server URL --cluster C [--activate] [--token T]\n"
    "\n"
    "Publishes the topology in FILE (JSON; a fetched version document may be edited and published\n"
    "again) as the next version of cluster C, created on its first publish, and prints the new\n"
    "version document. The version is staged: nothing moves until it is activated.\n"
    "\n"
    "  --activate     stage and activate in one step\n"
    "  --server URL   the server (default $RINGKEEPER_SERVER)\n"
    "  --cluster C    the cluster\n"
    "  --token T      bearer token for writes (default $RINGKEEPER_TOKEN)\n"
    "  --ca-file F    CA certificates for an https server (default $RINGKEEPER_CA_FILE)\n"
    "\n"
    "A topology the server refuses exits 2 with its message and the field to blame.\n"};
