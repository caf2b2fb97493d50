/* toy_format.c — a test-only configuration format (issue 55): a build with -DRK_TOY_FORMAT=ON
 * registers it by one line of client/CMakeLists.txt, and with no other file changed `ringkeeper
 * import --toy`, `export --format toy` and `export --format toy --into` take it (the test
 * format_toy). A toy file is lines "SET ID ADDR WEIGHT": the servers of each set; '#' starts a
 * comment line. Its topologies are of the ringkeeper scheme. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "text.h"

/* One line's server of set `set` into nodes: 1 when it is one, 0 when not, -1 when unreadable. */
static int toy_line(const char *line, size_t len, const char *set, json_t *nodes)
{
    char s[128], id[128], addr[128], rest[2];
    int weight;
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)len, line);
    int n = sscanf(buf, "%127s %127s %127s %d %1s", s, id, addr, &weight, rest);
    if (n <= 0 || s[0] == '#')
        return 0;
    if (n != 4)
        return -1;
    if (strcmp(s, set) != 0)
        return 0;
    return json_array_append_new(
               nodes, json_pack("{s:s, s:s, s:i}", "id", id, "addr", addr, "weight", weight)) == 0
               ? 1
               : -1;
}

static json_t *toy_import(const char *text, size_t len, const char *set,
                          char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX])
{
    json_t *nodes = json_array();
    size_t number = 1;
    for (const char *at = text, *end = text + len; nodes && at < end; number++) {
        const char *nl = memchr(at, '\n', (size_t)(end - at));
        size_t n = nl ? (size_t)(nl - at) : (size_t)(end - at);
        if (toy_line(at, n, set, nodes) < 0) {
            snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "line %zu: not SET ID ADDR WEIGHT", number);
            json_decref(nodes);
            return NULL;
        }
        at += n + 1;
    }
    if (json_array_size(nodes) == 0) {
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "no server in set %s", set);
        json_decref(nodes);
        return NULL;
    }
    snprintf(note, RK_CLI_FORMAT_MSG_MAX, "set %s: %zu servers", set, json_array_size(nodes));
    return json_pack("{s:s, s:i, s:o}", "hash", "xxh3_64", "vnode_factor", 160, "nodes", nodes);
}

/* The servers of doc as lines of set `set` into f. */
static void put_servers(FILE *f, const char *set, const json_t *doc)
{
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(doc, "nodes"), i, node)
    {
        fprintf(f, "%s %s %s %lld\n", set, json_string_value(json_object_get(node, "id")),
                json_string_value(json_object_get(node, "addr")),
                (long long)json_integer_value(json_object_get(node, "weight")));
    }
}

static char *toy_export(const json_t *doc, const char *set, const char *title,
                        char msg[RK_CLI_FORMAT_MSG_MAX])
{
    char *text;
    size_t size;
    FILE *f = rk_cli_text_open(&text, &size, msg);
    if (!f)
        return NULL;
    fprintf(f, "# %s\n", title);
    put_servers(f, set, doc);
    return rk_cli_text_close(f, &text, 0, msg);
}

/* The file with set `set`'s lines gone and the topology's where its first one was. */
static char *toy_into(const char *text, size_t len, const char *set, const json_t *doc,
                      char chosen[RK_CLI_FORMAT_MSG_MAX], char msg[RK_CLI_FORMAT_MSG_MAX])
{
    (void)chosen;
    char *out;
    size_t size;
    int put = 0;
    json_t *probe = json_array();
    FILE *f = probe ? rk_cli_text_open(&out, &size, msg) : NULL;
    rk_cli_splice s = {f, text, text, text + len, msg};
    for (const char *at = text, *end = text + len; f && at < end;) {
        const char *nl = memchr(at, '\n', (size_t)(end - at));
        const char *next = nl ? nl + 1 : end;
        if (toy_line(at, (size_t)(next - at), set, probe) == 1) {
            rk_cli_splice_copy(&s, at);
            if (!put++)
                put_servers(f, set, doc);
            s.at = next;
        }
        at = next;
    }
    json_decref(probe);
    if (!f)
        return NULL;
    rk_cli_splice_copy(&s, s.end);
    if (!put)
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "no server in set %s", set);
    return rk_cli_text_close(f, &out, put ? 0 : -1, msg);
}

const rk_cli_conf_format rk_cli_conf_format_toy = {
    .name = "toy",
    .part = "set",
    .setting = "title",
    .setting_value = "TEXT",
    .setting_default = "a toy set",
    .setting_kept = "comments",
    .import_about = "a toy set (toy)",
    .import_help = "With --toy, prints the topology of set NAME of the toy file FILE.\n",
    .import_options = "  --toy FILE         a toy file ...\n"
                      "  --set NAME         ... and its set\n",
    .export_about = "a toy set (toy)",
    .export_usage = "ringkeeper export --format toy --set NAME [--title TEXT]\n"
                    "                  (--file FILE | --server URL --cluster C [--version V])\n",
    .export_help = "With --format toy, prints the lines of set NAME.\n",
    .export_options = "  --set NAME      the toy set\n"
                      "  --title TEXT    its comment (not with --into)\n",
    .import = toy_import,
    .export = toy_export,
    .into = toy_into,
};
