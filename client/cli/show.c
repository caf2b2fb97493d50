/* show.c — `ringkeeper show V`: one version document of the cluster, indented. */
#include <stdlib.h>

#include "cli.h"

static int run(int argc, char **argv)
{
    rk_cli_remote_args a = {0};
    int rc = rk_cli_remote_parse(&rk_cli_show, argc, argv, 1, &a);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_version_arg("show", "V", a.operand);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_body out = {0};
    rc = rk_cli_call("show", &a.server, NULL, &out, "GET", "/versions/%s", a.operand);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_print_json("show", &out);
    free(out.data);
    return rc;
}

const rk_cli_cmd rk_cli_show = {
    "show", run,
    "usage: ringkeeper show V --server URL --cluster C\n"
    "\n"
    "Prints version V of cluster C (state, author, nodes, fingerprint ...) as indented JSON; it "
    "can\n"
    "be edited and published again.\n"
    "\n"
    "  --server URL   the server (default $RINGKEEPER_SERVER)\n"
    "  --cluster C    the cluster\n"
    "  --token T      bearer token for writes (default $RINGKEEPER_TOKEN)\n"
    "  --ca-file F    CA certificates for an https server (default $RINGKEEPER_CA_FILE)\n"};
