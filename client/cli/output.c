/* output.c — the one place that chooses how a command prints its result: -o json (indented), -o
 * table (the command's own table, or a generic one built from the document), or --quiet (only the
 * essential field, one value a line, for scripts). Everything from a server or a file is escaped.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_COLUMNS 16 /* the generic table's columns: the first keys of a list's objects */

rk_cli_output rk_cli_out;

/* The command's view; a command without an RK_CLI_OUTPUT_OPT row prints JSON, nothing when quiet.
 */
static const rk_cli_view *view(void)
{
    static const rk_cli_view none = {"json", NULL, NULL};
    return rk_cli_out.view ? rk_cli_out.view : &none;
}

const char *rk_cli_format(void)
{
    return rk_cli_out.format ? rk_cli_out.format : view()->dflt;
}

char *rk_cli_cell(const json_t *v)
{
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (!v || json_is_null(v))
        return strdup("-");
    return rk_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* One value on its own line, escaped. */
static int print_value(const json_t *v)
{
    char *s = rk_cli_cell(v);
    int bad =
        !s || rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "%s", s) < 0 || putchar('\n') == EOF;
    free(s);
    return bad ? -1 : 0;
}

/* The member at `path` of doc: "f", or "a.f" for f of the object a; NULL when there is none. */
static const json_t *member(const json_t *doc, const char *path)
{
    for (const char *dot; doc && (dot = strchr(path, '.')); path = dot + 1) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(dot - path), path);
        doc = json_object_get(doc, name);
    }
    return json_object_get(doc, path);
}

/* --quiet: the field `path` ("f", "a.f" or "list[].f") of doc; nothing when the path is NULL. */
static int print_quiet(const json_t *doc, const char *path)
{
    const char *each = path ? strstr(path, "[].") : NULL;
    if (!each)
        return path ? print_value(member(doc, path)) : 0;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(each - path), path);
    const json_t *list = json_object_get(doc, name);
    for (size_t i = 0; i < json_array_size(list); i++)
        if (print_value(json_object_get(json_array_get(list, i), each + 3)))
            return -1;
    return 0;
}

static int print_indented(const json_t *doc)
{
    char *text = rk_json_dumps(doc, JSON_INDENT(2));
    /* jansson escapes C0 controls in strings, not DEL or C1 */
    int bad = !text || rk_cli_write_safe(stdout, text, strlen(text), RK_CLI_SAFE_JSON) ||
              putchar('\n') == EOF;
    free(text);
    return bad ? -1 : 0;
}

/* The columns of a list of objects: the keys of its objects in order of appearance, and each one's
 * width (its key's or its widest cell's); returns their number. */
static size_t columns(const json_t *list, const char *key[MAX_COLUMNS], size_t width[MAX_COLUMNS])
{
    size_t cols = 0;
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *row = json_array_get(list, i);
        for (void *it = json_object_iter((json_t *)row); it;
             it = json_object_iter_next((json_t *)row, it)) {
            const char *name = json_object_iter_key(it);
            size_t k = 0;
            while (k < cols && strcmp(key[k], name) != 0)
                k++;
            if (k == cols && cols == MAX_COLUMNS)
                continue;
            if (k == cols)
                key[cols] = name, width[cols++] = strlen(name);
            char *s = rk_cli_cell(json_object_iter_value(it));
            if (s && strlen(s) > width[k])
                width[k] = strlen(s);
            free(s);
        }
    }
    return cols;
}

/* One row of cells, padded to their column's width but the last. */
static void print_row(char *const cell[], const size_t width[], size_t cols)
{
    for (size_t k = 0; k < cols; k++)
        rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "%-*s%s", k + 1 < cols ? (int)width[k] : 0,
                          cell[k] ? cell[k] : "?", k + 1 < cols ? "  " : "");
    putchar('\n');
}

void rk_cli_print_columns(const json_t *list)
{
    const char *key[MAX_COLUMNS];
    char *cell[MAX_COLUMNS];
    size_t width[MAX_COLUMNS];
    size_t cols = columns(list, key, width);
    print_row((char *const *)key, width, cols);
    for (size_t i = 0; i < json_array_size(list); i++) {
        for (size_t k = 0; k < cols; k++)
            cell[k] = rk_cli_cell(json_object_get(json_array_get(list, i), key[k]));
        print_row(cell, width, cols);
        for (size_t k = 0; k < cols; k++)
            free(cell[k]);
    }
}

static int is_table(const json_t *v)
{
    return json_is_array(v) && json_array_size(v) > 0 && json_is_object(json_array_get(v, 0));
}

/* The generic table: an object's members as "key  value" lines, then each of its lists of objects
 * as columns under "key:"; a list of objects as columns. */
static int print_generic(const json_t *doc)
{
    if (is_table(doc))
        rk_cli_print_columns(doc);
    if (!json_is_object(doc))
        return is_table(doc) ? 0 : print_value(doc);
    size_t width = 0;
    json_t *o = (json_t *)doc; /* jansson's iterators take no const */
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it))
        if (!is_table(json_object_iter_value(it)) && strlen(json_object_iter_key(it)) > width)
            width = strlen(json_object_iter_key(it));
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        if (is_table(json_object_iter_value(it)))
            continue;
        char *s = rk_cli_cell(json_object_iter_value(it));
        rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "%-*s  %s", (int)width,
                          json_object_iter_key(it), s ? s : "?");
        putchar('\n');
        free(s);
    }
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        if (!is_table(json_object_iter_value(it)))
            continue;
        putchar('\n');
        rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "%s:", json_object_iter_key(it));
        putchar('\n');
        rk_cli_print_columns(json_object_iter_value(it));
    }
    return 0;
}

int rk_cli_print_result(const char *cmd, const json_t *doc)
{
    int rc = RK_EXIT_OK;
    if (rk_cli_out.quiet)
        rc = print_quiet(doc, view()->quiet) ? RK_EXIT_FAIL : RK_EXIT_OK;
    else if (strcmp(rk_cli_format(), "json") == 0)
        rc = print_indented(doc) ? RK_EXIT_FAIL : RK_EXIT_OK;
    else if (view()->table)
        rc = view()->table(doc);
    else
        rc = print_generic(doc) ? RK_EXIT_FAIL : RK_EXIT_OK;
    if (fflush(stdout) || ferror(stdout))
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "writing the answer failed");
    return rc;
}

int rk_cli_print_body(const char *cmd, const rk_cli_body *body)
{
    json_t *doc = json_loadb(body->data, body->len, 0, NULL);
    if (!doc)
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "the answer is not JSON");
    int rc = rk_cli_print_result(cmd, doc);
    json_decref(doc);
    return rc;
}

int rk_cli_print_answer(const char *cmd, int rc, rk_cli_body *answer)
{
    if (rc == RK_EXIT_OK)
        rc = rk_cli_print_body(cmd, answer);
    free(answer->data);
    answer->data = NULL;
    return rc;
}

/* A record as one line of key=value pairs (logfmt): a value with a space, '"' or '=' quoted. */
static int print_pairs(const json_t *doc)
{
    json_t *o = (json_t *)doc; /* jansson's iterators take no const */
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        const json_t *v = json_object_iter_value(it);
        char *s = rk_cli_cell(v);
        int quote = s && json_is_string(v) && strpbrk(s, " \"=");
        char *q = quote ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
        const char *text = q ? q : s ? s : "?";
        rk_cli_print_safe(stdout, RK_CLI_SAFE_LINE, "%s%s=%s", it == json_object_iter(o) ? "" : " ",
                          json_object_iter_key(it), text);
        free(q);
        free(s);
    }
    return putchar('\n') == EOF ? -1 : 0;
}

int rk_cli_print_record(const char *cmd, const json_t *doc)
{
    int bad;
    if (rk_cli_out.quiet) {
        bad = print_quiet(doc, view()->quiet);
    } else if (strcmp(rk_cli_format(), "json") == 0) {
        char *text = rk_json_dumps(doc, JSON_COMPACT);
        bad = !text || rk_cli_print_safe(stdout, RK_CLI_SAFE_JSON, "%s\n", text) < 0;
        free(text);
    } else {
        bad = print_pairs(doc);
    }
    if (bad || fflush(stdout))
        return rk_cli_fail(cmd, RK_EXIT_FAIL, "writing the answer failed");
    return RK_EXIT_OK;
}
