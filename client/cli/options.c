/* options.c — the one command-line parser of the CLI: a command lists its options in a table (name,
 * kind, where the value goes), getopt_long reads the syntax, and this file checks the values and
 * prints the usage or "--name: must be ..., got ..." when they are wrong. Also the server options
 * every server command shares, with their environment defaults. */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_OPTIONS 32  /* a command's options, the five server options and the two of output */
#define FIRST_VAL   256 /* getopt_long values of the options: above any option character */

/* What a bad value must be, for its message: the option's words, its choices or its range. */
static const char *must_be(const rk_cli_option *o, char *buf, size_t size)
{
    if (o->must)
        return o->must;
    if (o->kind == RK_CLI_VERSION)
        return "a version number (1, 2, ...)";
    if (o->kind == RK_CLI_FRACTION)
        return "a fraction in (0, 1]";
    if (o->kind == RK_CLI_NUMBER) {
        snprintf(buf, size, "%llu..%llu", o->lo, o->hi);
        return buf;
    }
    size_t n = 0, len = 0; /* RK_CLI_CHOICE: "a, b or c" */
    while (o->choices[n])
        n++;
    buf[0] = '\0';
    for (size_t i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s",
                                i == 0      ? ""
                                : i + 1 < n ? ", "
                                            : " or ",
                                o->choices[i]);
    return buf;
}

static int is_choice(const char *const *choices, const char *s)
{
    while (*choices && strcmp(*choices, s) != 0)
        choices++;
    return *choices != NULL;
}

static int is_fraction(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return end != s && !*end && *out > 0 && *out <= 1;
}

static int is_version(const char *s)
{
    unsigned long long n;
    return rk_cli_number(s, 1, INT64_MAX, &n) == 0;
}

/* "<dashes><name>: must be ..., got "<got>"": every bad value's message. */
static int bad_value(const char *cmd, const char *dashes, const rk_cli_option *o, const char *got)
{
    char buf[128];
    return rk_cli_fail(cmd, RK_EXIT_USAGE, "%s%s: must be %s, got \"%s\"", dashes, o->name,
                       must_be(o, buf, sizeof buf), got);
}

/* Stores the value of option o, or prints why it is not one; returns an exit code. */
static int take(const char *cmd, const rk_cli_option *o, const char *arg)
{
    int ok = 1;
    switch (o->kind) {
    case RK_CLI_FLAG:
        *(int *)o->value = 1;
        break;
    case RK_CLI_NUMBER:
        ok = rk_cli_number(arg, o->lo, o->hi, o->value) == 0;
        break;
    case RK_CLI_FRACTION:
        ok = is_fraction(arg, o->value);
        break;
    default: /* the text as given, once it is a version or one of the choices */
        ok = o->kind == RK_CLI_VERSION  ? is_version(arg)
             : o->kind == RK_CLI_CHOICE ? is_choice(o->choices, arg)
                                        : 1;
        if (ok)
            *(const char **)o->value = arg;
    }
    return ok ? RK_EXIT_OK : bad_value(cmd, "--", o, arg);
}

int rk_cli_version_arg(const char *cmd, const char *v)
{
    static const rk_cli_option operand = RK_CLI_OPT("V", RK_CLI_VERSION, NULL);
    return is_version(v) ? RK_EXIT_OK : bad_value(cmd, "", &operand, v);
}

/* -o and --quiet in place of an RK_CLI_OUTPUT row: into rk_cli_out. */
static size_t output_options(const rk_cli_option *row, rk_cli_option *all)
{
    static const char *const formats[] = {"json", "table", NULL};
    rk_cli_out.view = row->value;
    all[0] = (rk_cli_option)RK_CLI_OPT("output", RK_CLI_CHOICE, &rk_cli_out.format,
                                       .choices = formats, .letter = 'o');
    all[1] = (rk_cli_option)RK_CLI_OPT("quiet", RK_CLI_FLAG, &rk_cli_out.quiet, .letter = 'q');
    return 2;
}

/* The command's options (an RK_CLI_OUTPUT row as -o and --quiet) followed, when it talks to a
 * server, by the five server options, into all[MAX_OPTIONS]; SIZE_MAX when they would not fit (a
 * command given more options than MAX_OPTIONS: a bug, which its tests show at once). */
static size_t all_options(const rk_cli_option *opts, rk_cli_server *s, rk_cli_option *all)
{
    size_t n = 0;
    for (; opts->name; opts++)
        if (n + 2 + 5 > MAX_OPTIONS)
            return SIZE_MAX;
        else if (opts->kind == RK_CLI_OUTPUT)
            n += output_options(opts, all + n);
        else
            all[n++] = *opts;
    if (!s)
        return n;
    const rk_cli_option server[] = {
        RK_CLI_OPT("server", RK_CLI_TEXT, &s->url),
        RK_CLI_OPT("cluster", RK_CLI_TEXT, &s->cluster, .letter = 'c'),
        RK_CLI_OPT("token", RK_CLI_TEXT, &s->token),
        RK_CLI_OPT("ca-file", RK_CLI_TEXT, &s->ca_file),
        RK_CLI_OPT("timeout", RK_CLI_NUMBER, &s->timeout, .lo = 1, .hi = RK_CLI_MAX_TIMEOUT)};
    memcpy(all + n, server, sizeof server);
    return n + sizeof server / sizeof server[0];
}

/* The index in `all` of getopt_long's value c: an option's FIRST_VAL + i, or its letter; n when
 * it is neither. */
static size_t option_index(int c, const rk_cli_option *all, size_t n)
{
    if (c >= FIRST_VAL)
        return (size_t)(c - FIRST_VAL);
    size_t i = 0;
    while (i < n && (!all[i].letter || all[i].letter != c))
        i++;
    return i;
}

/* getopt_long's option string: ":" (missing values reported as ':'), then each letter, with ':'
 * when it takes a value. */
static void short_options(const rk_cli_option *all, size_t n, char *out)
{
    *out++ = ':';
    for (size_t i = 0; i < n; i++) {
        if (!all[i].letter)
            continue;
        *out++ = all[i].letter;
        if (all[i].kind != RK_CLI_FLAG)
            *out++ = ':';
    }
    *out = '\0';
}

/* getopt_long's complaint, in our words: the option it stopped at (argv[optind - 1]). */
static int getopt_error(const rk_cli_cmd *cmd, int c, char **argv, const rk_cli_option *all,
                        size_t n)
{
    size_t i = option_index(optopt, all, n);
    if (c == ':' && i < n)
        return rk_cli_usage_error(cmd, "--%s needs a value", all[i].name);
    if (optopt > 0 && optopt < FIRST_VAL) /* a letter no option has */
        return rk_cli_usage_error(cmd, "unknown option -%c", optopt);
    return rk_cli_usage_error(cmd, "unknown option %s", argv[optind - 1]);
}

/* The required options given and the operand count right; else why not. */
static int check_given(const rk_cli_cmd *cmd, const rk_cli_option *all, size_t n, const int *given,
                       int operands, char **operand)
{
    for (size_t i = 0; i < n; i++)
        if (all[i].required && !given[i])
            return rk_cli_usage_error(cmd, "--%s is required", all[i].name);
    if (operands == 0 && cmd->operand)
        return rk_cli_usage_error(cmd, "the %s operand is missing", cmd->operand);
    if (operands > (cmd->operand != NULL))
        return rk_cli_usage_error(cmd, "unexpected operand \"%s\"", operand[cmd->operand != NULL]);
    return RK_EXIT_OK;
}

int rk_cli_parse(const rk_cli_cmd *cmd, int argc, char **argv, const rk_cli_option *opts,
                 rk_cli_server *server, const char **operand)
{
    rk_cli_option all[MAX_OPTIONS];
    struct option longopts[MAX_OPTIONS + 1] = {{NULL, 0, NULL, 0}};
    char letters[2 * MAX_OPTIONS + 2];
    size_t n = all_options(opts, server, all);
    if (n == SIZE_MAX)
        return rk_cli_fail(cmd->name, RK_EXIT_FAIL, "over %d options: raise MAX_OPTIONS",
                           MAX_OPTIONS);
    short_options(all, n, letters);
    int given[MAX_OPTIONS] = {0};
    for (size_t i = 0; i < n; i++)
        longopts[i] = (struct option){all[i].name,
                                      all[i].kind == RK_CLI_FLAG ? no_argument : required_argument,
                                      NULL, FIRST_VAL + (int)i};
    int c, rc;
    opterr = 0; /* its messages start with argv[0], the command's bare name: ours say why */
    while ((c = getopt_long(argc, argv, letters, longopts, NULL)) != -1) {
        size_t i = option_index(c, all, n);
        if (i == n)
            return getopt_error(cmd, c, argv, all, n);
        if ((rc = take(cmd->name, &all[i], optarg)) != RK_EXIT_OK)
            return rc;
        given[i] = 1;
    }
    if ((rc = check_given(cmd, all, n, given, argc - optind, argv + optind)) != RK_EXIT_OK)
        return rc;
    if (operand)
        *operand = argv[optind];
    return RK_EXIT_OK;
}

int rk_cli_two_sides(const rk_cli_cmd *cmd, const char *const file[2], const char *const version[2],
                     const rk_cli_server *s)
{
    static const char *const file_flag[2] = {"--from-file", "--to-file"};
    static const char *const version_flag[2] = {"--from", "--to"};
    int online = version[0] || version[1] || s->url || s->cluster;
    if (file[0] && file[1] && online)
        return rk_cli_usage_error(cmd, "--from-file/--to-file (two files) and --server, "
                                       "--cluster, --from, --to (the server) do not mix");
    for (int i = 0; i < 2; i++) {
        if (file[i] && version[i])
            return rk_cli_usage_error(cmd, "%s and %s do not mix: that side is a file or a version",
                                      file_flag[i], version_flag[i]);
        if (file[i] && !file[1 - i] && !s->cluster && !rk_cli_env_cluster())
            return rk_cli_usage_error(cmd,
                                      "%s needs %s as well, or a version of a cluster: give "
                                      "--cluster C or set RINGKEEPER_CLUSTER",
                                      file_flag[i], file_flag[1 - i]);
    }
    return RK_EXIT_OK;
}

/* The client library takes http:// and https:// URLs only; the CLI refuses the same, in the same
 * words, rather than guess a scheme the library would not. */
static int has_scheme(const char *url)
{
    return strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0;
}

const char *rk_cli_env_cluster(void)
{
    const char *c = getenv("RINGKEEPER_CLUSTER");
    return c && *c ? c : NULL;
}

/* The environment's defaults for what the options left out. */
static void server_defaults(rk_cli_server *s)
{
    if (!s->url)
        s->url = getenv("RINGKEEPER_SERVER");
    if (!s->cluster)
        s->cluster = rk_cli_env_cluster();
    if (!s->timeout)
        s->timeout = RK_CLI_TIMEOUT;
    if (!s->token)
        s->token = getenv("RINGKEEPER_TOKEN");
    if (!s->ca_file)
        s->ca_file = getenv("RINGKEEPER_CA_FILE");
    if (s->ca_file && !*s->ca_file)
        s->ca_file = NULL;
}

int rk_cli_server_check(const char *cmd, rk_cli_server *s)
{
    const char *url_from = s->url ? "--server" : "RINGKEEPER_SERVER";
    const char *cluster_from = s->cluster ? "--cluster" : "RINGKEEPER_CLUSTER";
    server_defaults(s);
    if (!s->url || !*s->url)
        return rk_cli_fail(cmd, RK_EXIT_USAGE,
                           "no server: give --server URL or set RINGKEEPER_SERVER "
                           "(e.g. http://127.0.0.1:7070)");
    if (!has_scheme(s->url))
        return rk_cli_fail(cmd, RK_EXIT_USAGE,
                           "%s: must start with http:// or https://, got \"%s\"", url_from, s->url);
    if (!s->cluster)
        return rk_cli_fail(cmd, RK_EXIT_USAGE,
                           "no cluster: give --cluster C (-c C) or set RINGKEEPER_CLUSTER");
    if (!rk_cluster_name_valid(s->cluster))
        return rk_cli_fail(cmd, RK_EXIT_USAGE,
                           "%s: \"%s\" is not a cluster name (a-z, 0-9, '.', '_', '-'; "
                           "1..63 bytes, starting with a letter or digit)",
                           cluster_from, s->cluster);
    return RK_EXIT_OK;
}
