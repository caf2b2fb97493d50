/* import_export.c — `ringkeeper import` and `ringkeeper export`: a balancer's configuration (a
 * twemproxy pool, an nginx upstream, a HAProxy backend: the formats of formats/format.h) to a
 * topology of its scheme and back (docs/KETAMA.md, docs/LOADBALANCERS.md), so a fleet routed by the
 * balancer adopts ringkeeper with no key moved, and every change reviewed in ringkeeper goes back
 * to the balancer's own file (`--into`: its servers rewritten, the rest of the file kept). The
 * commands' options, checks and help come from the formats' table; no format is named here. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "formats/format.h"

#define HELP_WIDTH 93 /* a help paragraph's lines at the most */

/* The options the formats add (their parts and settings), each once, and the values given. */
typedef struct format_opts {
    const char *name[2 * RK_CLI_FORMATS_MAX], *value[2 * RK_CLI_FORMATS_MAX];
    size_t n;
} format_opts;

/* The place of option `name` in o, added when it is new. */
static size_t slot(format_opts *o, const char *name)
{
    size_t i = 0;
    while (i < o->n && strcmp(o->name[i], name) != 0)
        i++;
    if (i == o->n)
        o->name[o->n++] = name;
    return i;
}

/* The n items of `item` into buf: "A, B or C", each after `pre`. Returns buf. */
static const char *list(char *buf, size_t size, const char *const *item, size_t n, const char *pre)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s%s", pre, item[i],
                               i + 2 < n    ? ", "
                               : i + 2 == n ? " or "
                                            : "");
    return buf;
}

/* The options of o that a format does not take (`own`: its two, or one), listed in buf ("--a,
 * --b or --c"); returns whether one of them is given. */
static int others_given(const format_opts *o, const size_t own[2], char *buf, size_t size)
{
    const char *given[2 * RK_CLI_FORMATS_MAX];
    size_t n = 0, any = 0;
    for (size_t i = 0; i < o->n; i++) {
        if (i == own[0] || i == own[1])
            continue;
        given[n++] = o->name[i];
        any |= o->value[i] != NULL;
    }
    list(buf, size, given, n, "--");
    return (int)any;
}

/* The document in `text` checked by the library (so what is printed or exported is a topology the
 * server accepts); returns an exit code. */
static int check_topology(const char *cmd, const char *label, const json_t *doc)
{
    rk_error err = {0};
    rk_topology *t = rk_topology_from_json(doc, &err);
    if (!t)
        return rk_cli_fail(cmd, RK_EXIT_USAGE, "%s: %s", label, err.message);
    rk_topology_free(t);
    return RK_EXIT_OK;
}

/* The topology of part `part` of `file` in format f, its notes printed. */
static json_t *import_text(const char *cmd, const rk_cli_conf_format *f, const char *file,
                           const char *part)
{
    size_t len;
    char *text = rk_cli_read_file(cmd, file, &len), msg[RK_CLI_FORMAT_MSG_MAX] = "",
         note[RK_CLI_FORMAT_MSG_MAX] = "";
    if (!text)
        return NULL;
    json_t *t = f->import(text, len, part, msg, note);
    free(text);
    if (!t)
        rk_cli_fail(cmd, RK_EXIT_USAGE, "%s: %s", file, msg);
    /* the notes name servers and settings as the file writes them: printed safe */
    for (char *line = note, *next; t && *line; line = next) {
        next = line + strcspn(line, "\n");
        int last = *next == '\0';
        *next = '\0';
        rk_cli_print_safe(stderr, RK_CLI_SAFE_LINE, "%s: note: %s", cmd, line);
        fputc('\n', stderr);
        next += !last;
    }
    return t;
}

/* import's usage error: "give --A FILE [--P NAME], --B FILE --Q NAME or ...". */
static int import_usage_error(const rk_cli_cmd *cmd)
{
    char forms[RK_CLI_FORMATS_MAX][128], all[RK_CLI_FORMATS_MAX * 128];
    const char *form[RK_CLI_FORMATS_MAX];
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++) {
        const rk_cli_conf_format *f = rk_cli_conf_formats[i];
        snprintf(forms[i], sizeof forms[i], "%s FILE %s--%s NAME%s", f->name,
                 f->part_optional ? "[" : "", f->part, f->part_optional ? "]" : "");
        form[i] = forms[i];
    }
    return rk_cli_usage_error(cmd, "give %s",
                              list(all, sizeof all, form, rk_cli_n_conf_formats, "--"));
}

static int run_import(const rk_cli_cmd *cmd, int argc, char **argv)
{
    const char *file[RK_CLI_FORMATS_MAX] = {0};
    format_opts parts = {0};
    size_t part_at[RK_CLI_FORMATS_MAX], n = 0;
    rk_cli_option opts[3 * RK_CLI_FORMATS_MAX + 1] = {{0}};
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++) {
        opts[n++] = (rk_cli_option)RK_CLI_OPT(rk_cli_conf_formats[i]->name, RK_CLI_TEXT, &file[i]);
        size_t at = part_at[i] = slot(&parts, rk_cli_conf_formats[i]->part);
        if (at + 1 == parts.n)
            opts[n++] = (rk_cli_option)RK_CLI_OPT(parts.name[at], RK_CLI_TEXT, &parts.value[at]);
    }
    int rc = rk_cli_parse(cmd, argc, argv, opts, NULL, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    size_t given = 0, at = 0;
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++)
        if (file[i])
            given++, at = i;
    const rk_cli_conf_format *f = rk_cli_conf_formats[at];
    const char *part = parts.value[part_at[at]];
    size_t own[2] = {part_at[at], part_at[at]};
    char others[256];
    if (given != 1 || (!part && !f->part_optional) ||
        others_given(&parts, own, others, sizeof others))
        return import_usage_error(cmd);
    json_t *t = import_text(cmd->name, f, file[at], part);
    if (!t)
        return RK_EXIT_USAGE;
    rc = check_topology(cmd->name, file[at], t);
    char *out = rc == RK_EXIT_OK ? json_dumps(t, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(t);
    if (rc == RK_EXIT_OK && (!out || printf("%s\n", out) < 0 || fflush(stdout)))
        rc = rk_cli_fail(cmd->name, RK_EXIT_FAIL, "writing the topology failed");
    free(out);
    return rc;
}

/* The topology to export: a file, or version V (default: the active one) of a server's cluster. */
static json_t *load_doc(const char *cmd, const char *file, const rk_cli_server *s,
                        const char *version, int *rc)
{
    rk_cli_body body = {0};
    if (file && !(body.data = rk_cli_read_file(cmd, file, &body.len)))
        *rc = RK_EXIT_USAGE;
    else if (!file && version)
        *rc = rk_cli_call(cmd, s, NULL, &body, "GET", "/versions/%s", version);
    else if (!file)
        *rc = rk_cli_call(cmd, s, NULL, &body, "GET", "/ring");
    if (*rc != RK_EXIT_OK)
        return NULL;
    json_error_t jerr;
    json_t *doc = json_loadb(body.data, body.len, JSON_REJECT_DUPLICATES, &jerr);
    free(body.data);
    if (!doc)
        *rc = rk_cli_fail(cmd, RK_EXIT_USAGE, "%s: not JSON: %s",
                          file ? file : "the server's answer", jerr.text);
    else
        *rc = check_topology(cmd, file ? file : "the server's version", doc);
    return doc;
}

/* `export --into FILE`: FILE's part `part` (or its only one) in format f gets the topology's
 * servers, the rest of the file kept as it is. Returns an exit code. */
static int export_into(const char *cmd, const rk_cli_conf_format *f, const char *into,
                       const char *part, const json_t *doc)
{
    size_t len;
    char msg[RK_CLI_FORMAT_MSG_MAX] = "", chosen[RK_CLI_FORMAT_MSG_MAX] = "";
    char *text = rk_cli_read_file(cmd, into, &len);
    if (!text)
        return RK_EXIT_USAGE;
    char *out = f->into(text, len, part, doc, chosen, msg);
    free(text);
    int rc = !out ? rk_cli_fail(cmd, RK_EXIT_USAGE, "%s: %s", into, msg)
             : rk_cli_replace_file(into, into, out, strlen(out))
                 ? rk_cli_fail(cmd, RK_EXIT_FAIL, "--into %s: writing it failed: %s", into,
                               strerror(errno))
                 : RK_EXIT_OK;
    free(out);
    if (rc == RK_EXIT_OK)
        printf("%s: the servers of %s %s rewritten; every other line kept\n", into, f->part,
               chosen[0] ? chosen : part);
    return rc;
}

/* Prints an export's `text` (freed here), or says why there is none (msg) after a step that went
 * well (rc); returns the exit code. */
static int print_export(const char *cmd, int rc, char *text, const char *msg, const char *what)
{
    if (rc == RK_EXIT_OK && !text)
        rc = rk_cli_fail(cmd, RK_EXIT_USAGE, "%s", msg);
    if (text && (fputs(text, stdout) == EOF || fflush(stdout)))
        rc = rk_cli_fail(cmd, RK_EXIT_FAIL, "writing %s failed", what);
    free(text);
    return rc;
}

/* The key an export writes: the topology's request_key, else `given` (--key, --balance), else
 * `fallback`; NULL (and *rc set) when the option names another than the topology's. */
static const char *export_key(const char *cmd, const json_t *doc, const char *option,
                              const char *given, const char *fallback, int *rc)
{
    const char *own = json_string_value(json_object_get(doc, "request_key"));
    if (own && given && strcmp(own, given) != 0) {
        *rc = rk_cli_fail(cmd, RK_EXIT_USAGE,
                          "%s %s: the topology takes its keys as \"%s\" (request_key); leave "
                          "%s out, or publish a version with the new request_key (every key "
                          "moves)",
                          option, given, own, option);
        return NULL;
    }
    return own ? own : given ? given : fallback;
}

/* The usage errors of `export --format F` (its part `part`, its setting, `others` the other
 * formats' options given, listed), in the order they are checked; RK_EXIT_OK when none. */
static int export_usage_error(const rk_cli_cmd *cmd, const rk_cli_conf_format *f, const char *part,
                              const char *setting, const char *into, int others,
                              const char *not_own, int mixed)
{
    const char *other[RK_CLI_FORMATS_MAX];
    char names[256];
    size_t n = 0;
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++)
        if (rk_cli_conf_formats[i] != f)
            other[n++] = rk_cli_conf_formats[i]->name;
    int missing = !part && !(into && f->part_optional);
    if (f->part_optional && others)
        return rk_cli_usage_error(cmd, "%s are for --format %s", not_own,
                                  list(names, sizeof names, other, n, ""));
    if (!f->part_optional && (others || missing))
        return rk_cli_usage_error(cmd,
                                  "--format %s takes --%s NAME [--%s %s] or --%s NAME --into FILE "
                                  "(not %s)",
                                  f->name, f->part, f->setting, f->setting_value, f->part, not_own);
    if (missing)
        return rk_cli_usage_error(cmd,
                                  "--%s is required (with --into, when FILE has one %s, it may "
                                  "be left out)",
                                  f->part, f->part);
    if (into && setting)
        return rk_cli_usage_error(cmd, "--into keeps the %s's own %s: drop --%s", f->part,
                                  f->setting_kept, f->setting);
    if (mixed)
        return rk_cli_usage_error(cmd, "--file and the server options (--server, --cluster, "
                                       "--version) do not mix");
    return RK_EXIT_OK;
}

static int run_export(const rk_cli_cmd *cmd, int argc, char **argv)
{
    const char *names[RK_CLI_FORMATS_MAX + 1] = {0};
    const char *name = NULL, *file = NULL, *version = NULL, *into = NULL;
    format_opts fo = {0};
    size_t own[RK_CLI_FORMATS_MAX][2], i = 0;
    rk_cli_server server = {0};
    rk_cli_option opts[2 * RK_CLI_FORMATS_MAX + 5] = {
        RK_CLI_OPT("format", RK_CLI_CHOICE, &name, .required = 1, .choices = names),
        RK_CLI_OPT("file", RK_CLI_TEXT, &file),
        RK_CLI_OPT("version", RK_CLI_VERSION, &version),
        RK_CLI_OPT("into", RK_CLI_TEXT, &into),
    };
    for (size_t k = 0; k < rk_cli_n_conf_formats; k++) {
        names[k] = rk_cli_conf_formats[k]->name;
        own[k][0] = slot(&fo, rk_cli_conf_formats[k]->part);
        own[k][1] = slot(&fo, rk_cli_conf_formats[k]->setting);
    }
    for (size_t k = 0; k < fo.n; k++)
        opts[4 + k] = (rk_cli_option)RK_CLI_OPT(fo.name[k], RK_CLI_TEXT, &fo.value[k]);
    int rc = rk_cli_parse(cmd, argc, argv, opts, &server, NULL);
    if (rc != RK_EXIT_OK)
        return rc;
    while (strcmp(rk_cli_conf_formats[i]->name, name) != 0)
        i++;
    const rk_cli_conf_format *f = rk_cli_conf_formats[i];
    const char *part = fo.value[own[i][0]], *setting = fo.value[own[i][1]];
    char not_own[256], option[64], what[64], msg[RK_CLI_FORMAT_MSG_MAX] = "", *text = NULL;
    int others = others_given(&fo, own[i], not_own, sizeof not_own);
    rc = export_usage_error(cmd, f, part, setting, into, others, not_own,
                            file && (server.url || server.cluster || version));
    if (rc == RK_EXIT_OK && !file)
        rc = rk_cli_server_check(cmd->name, &server);
    if (rc != RK_EXIT_OK)
        return rc;
    json_t *doc = load_doc(cmd->name, file, &server, version, &rc);
    snprintf(option, sizeof option, "--%s", f->setting);
    if (rc == RK_EXIT_OK && into)
        rc = export_into(cmd->name, f, into, part, doc);
    else if (rc == RK_EXIT_OK && f->setting_is_request_key)
        setting = export_key(cmd->name, doc, option, setting, f->setting_default, &rc);
    else if (!setting)
        setting = f->setting_default;
    if (rc == RK_EXIT_OK && !into)
        text = f->export(doc, part, setting, msg);
    json_decref(doc);
    snprintf(what, sizeof what, "the %s", f->part);
    return into ? rc : print_export(cmd->name, rc, text, msg, what);
}

/* ---- The commands' help, from the formats' ---- */

static char import_help[16384], export_help[32768];

/* `text`'s words into h, in lines of HELP_WIDTH at the most. */
static void wrap(FILE *h, const char *text)
{
    size_t col = 0;
    for (const char *w = text; *w; w += strspn(w, " ")) {
        size_t len = strcspn(w, " ");
        if (col)
            fputc(col + 1 + len > HELP_WIDTH ? '\n' : ' ', h);
        col = col && col + 1 + len <= HELP_WIDTH ? col + 1 + len : len;
        fwrite(w, 1, len, h);
        w += len;
    }
    fputc('\n', h);
}

/* What of each format `listed` lists. */
typedef enum { IMPORT_ABOUT, EXPORT_ABOUT, PART, NAME } format_word;

/* The formats' `word`s listed: "a, b or c". */
static const char *listed(char *buf, size_t size, format_word word)
{
    const char *item[RK_CLI_FORMATS_MAX];
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++) {
        const rk_cli_conf_format *f = rk_cli_conf_formats[i];
        item[i] = word == IMPORT_ABOUT   ? f->import_about
                  : word == EXPORT_ABOUT ? f->export_about
                  : word == PART         ? f->part
                                         : f->name;
    }
    return list(buf, size, item, rk_cli_n_conf_formats, "");
}

static void compose_import(FILE *h)
{
    char about[2048], para[4096];
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++) {
        const rk_cli_conf_format *f = rk_cli_conf_formats[i];
        fprintf(h, "%s ringkeeper import --%s FILE %s--%s NAME%s\n",
                i ? "      " : "usage:", f->name, f->part_optional ? "[" : "", f->part,
                f->part_optional ? "]" : "");
    }
    snprintf(para, sizeof para,
             "Prints the topology (JSON) that routes as a balancer's configuration does: %s.",
             listed(about, sizeof about, IMPORT_ABOUT));
    fputc('\n', h);
    wrap(h, para);
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++)
        fprintf(h, "\n%s", rk_cli_conf_formats[i]->import_help);
    fputc('\n', h);
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++)
        fputs(rk_cli_conf_formats[i]->import_options, h);
}

static void compose_export(FILE *h)
{
    const char *gutter = "usage: ";
    char about[2048], parts[512], names[512], para[4096];
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++) {
        for (const char *l = rk_cli_conf_formats[i]->export_usage; *l; gutter = "       ") {
            size_t len = strcspn(l, "\n");
            fprintf(h, "%s%.*s\n", gutter, (int)len, l);
            l += len + (l[len] == '\n');
        }
    }
    listed(parts, sizeof parts, PART);
    snprintf(para, sizeof para,
             "Writes a topology, or version V of cluster C (default: the active version), in a "
             "balancer's format: %s. With --into, only the servers of that %s are rewritten in the "
             "balancer's file, in place (atomically, its mode kept), every other line kept, and "
             "the result read back before it is written; refused, the file unchanged, when its "
             "hash settings are not the topology's.",
             listed(about, sizeof about, EXPORT_ABOUT), parts);
    fputc('\n', h);
    wrap(h, para);
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++)
        fprintf(h, "\n%s", rk_cli_conf_formats[i]->export_help);
    fprintf(h, "\n  --format NAME   the output format: %s\n", listed(names, sizeof names, NAME));
    for (size_t i = 0; i < rk_cli_n_conf_formats; i++)
        fputs(rk_cli_conf_formats[i]->export_options, h);
    fprintf(h,
            "  --into FILE     rewrite the servers of the %s in this file\n"
            "  --file FILE     the topology to export (JSON)\n"
            "  --server URL    or the server's (default $RINGKEEPER_SERVER) ...\n"
            "  -c, --cluster C ... cluster (default $RINGKEEPER_CLUSTER) ...\n"
            "  --version V     ... version (default: the active one)\n",
            parts);
}

/* The two commands' help, written before main runs (their rk_cli_cmd is a constant). */
__attribute__((constructor)) static void compose_help(void)
{
    FILE *h = fmemopen(import_help, sizeof import_help - 1, "w");
    if (h)
        compose_import(h), fclose(h);
    h = fmemopen(export_help, sizeof export_help - 1, "w");
    if (h)
        compose_export(h), fclose(h);
}

const rk_cli_cmd rk_cli_import = {"import", run_import, import_help, NULL, NULL};
const rk_cli_cmd rk_cli_export = {"export", run_export, export_help, NULL, NULL};
