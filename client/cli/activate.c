/* activate.c — `ringkeeper activate V`: cut the cluster over to version V. */
#include <stdlib.h>

#include "cli.h"

static int run(int argc, char **argv)
{
    rk_cli_remote_args a = {0};
    int rc = rk_cli_remote_parse(&rk_cli_activate, argc, argv, 1, &a);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_version_arg("activate", "V", a.operand);
    if (rc != RK_EXIT_OK)
        return rc;
    rk_cli_body out = {0};
    rc = rk_cli_call("activate", &a.server, NULL, &out, "POST", "/versions/%s/activate", a.operand);
    if (rc == RK_EXIT_OK)
        rc = rk_cli_print_json("activate", &out);
    free(out.data);
    return rc;
}

const rk_cli_cmd rk_cli_activate = {
    "activate", run,
    "usage: ringkeeper activate V --server URL --cluster C [--token T]\n"
    "\n"
    "Cuts cluster C over to version V and prints its version document. V must be newer than the\n"
    "active version (the server answers 409 otherwise, exit 2): to roll back, publish the old\n"
    "version again.\n"
    "\n"
    "  --server URL   the server (default $RINGKEEPER_SERVER)\n"
    "  --cluster C    the cluster\n"
    "  --token T      bearer token for writes (default $RINGKEEPER_TOKEN)\n"
    "  --ca-file F    CA certificates for an https server (default $RINGKEEPER_CA_FILE)\n"};
