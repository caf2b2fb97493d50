/* main.c — `ringkeeper`: the operators' and scripts' tool; dispatches to one command per file. */
#include <string.h>

#include "cli.h"

static const rk_cli_cmd *const commands[] = {&rk_cli_lookup, &rk_cli_plan, &rk_cli_simulate};

static int usage(FILE *to, int code)
{
    fprintf(to,
            "usage: ringkeeper COMMAND [OPTIONS]   (ringkeeper COMMAND --help for its options)\n"
            "\n"
            "commands:\n"
            "  lookup    print the node of each key read from stdin\n"
            "  plan      the migration plan between two topologies\n"
            "  simulate  count how real keys move and spread between two topologies\n"
            "\n"
            "exit codes: 0 ok, 1 failure, 2 bad input (flags, files, invalid topology),\n"
            "            3 ring refused (hash or vnode_factor differs from what was expected)\n");
    return code;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr, RK_EXIT_USAGE);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
        return usage(stdout, RK_EXIT_OK);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i]->name) != 0)
            continue;
        if (rk_cli_wants_help(argc - 1, argv + 1)) {
            fputs(commands[i]->usage, stdout);
            return RK_EXIT_OK;
        }
        return commands[i]->run(argc - 1, argv + 1);
    }
    fprintf(stderr, "ringkeeper: unknown command \"%s\"\n", argv[1]);
    return usage(stderr, RK_EXIT_USAGE);
}
