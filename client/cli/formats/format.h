/* format.h — a balancer's configuration format, for `ringkeeper import --NAME FILE` and `ringkeeper
 * export --format NAME [--into FILE]` (docs/KETAMA.md, docs/LOADBALANCERS.md): its operations and
 * what its options and help say. import_export.c holds no format of its own; it runs the formats of
 * rk_cli_conf_formats (registry.c), which client/CMakeLists.txt fills: `rk_cli_conf_format(<name>
 * <file>...)` compiles the files, one of which defines `const rk_cli_conf_format
 * rk_cli_conf_format_<name>`. */
#ifndef RK_CLI_FORMAT_H
#define RK_CLI_FORMAT_H

#include <stddef.h>

#include <jansson.h>

#define RK_CLI_FORMAT_MSG_MAX 512 /* a refusal's sentence, a note, a chosen part's name */
#define RK_CLI_FORMATS_MAX    8   /* formats in one build (registry.c checks) */

typedef struct rk_cli_conf_format {
    const char *name; /* import's --NAME FILE, export's --format NAME */
    /* The part of the file whose servers make the ring, also the option naming it: "pool",
     * "upstream". part_optional: it may be left out when the file has one (import, --into). */
    const char *part;
    int part_optional;
    /* export's one other option, what the file sets besides its servers ("listen", "key"), its
     * value's word in the usage ("ADDR"), its default, and what --into keeps of the file's own
     * instead ("listen address"). setting_is_request_key: the topology's request_key is the
     * setting, and the option only for a topology without one. */
    const char *setting, *setting_value, *setting_default, *setting_kept;
    int setting_is_request_key;

    /* Help: a phrase for each command's first paragraph ("a twemproxy pool (the ketama scheme)"),
     * the paragraph on the format ("With --NAME, ...\n"), the option lines ("  --NAME FILE ...\n"),
     * and export's usage forms, one a line, as printed after "usage: " or its blank gutter. */
    const char *import_about, *import_help, *import_options;
    const char *export_about, *export_usage, *export_help, *export_options;

    /* The topology (a new JSON object; json_decref() it) of part `part` (NULL: the file's only one,
     * when part_optional) of the configuration `text` (len bytes), or NULL with a sentence in msg.
     * note gets lines ('\n' apart) worth knowing about what was read; it is "" when given. */
    json_t *(*import)(const char *text, size_t len, const char *part,
                      char msg[RK_CLI_FORMAT_MSG_MAX], char note[RK_CLI_FORMAT_MSG_MAX]);
    /* The part `part` for the topology (or version document) `doc`, `setting` its other option: a
     * malloc'd NUL-terminated text (free() it), or NULL with a sentence in msg. */
    char *(*export)(const json_t *doc, const char *part, const char *setting,
                    char msg[RK_CLI_FORMAT_MSG_MAX]);
    /* `text` (len bytes) with only the servers of part `part` (NULL: the only one, whose name goes
     * to `chosen`) replaced by the topology `doc`'s, every other byte kept, checked by reading it
     * back: a malloc'd NUL-terminated text (free() it), or NULL with a sentence in msg. */
    char *(*into)(const char *text, size_t len, const char *part, const json_t *doc,
                  char chosen[RK_CLI_FORMAT_MSG_MAX], char msg[RK_CLI_FORMAT_MSG_MAX]);
} rk_cli_conf_format;

/* The formats of this build, in their order in client/CMakeLists.txt, and how many. */
extern const rk_cli_conf_format *const rk_cli_conf_formats[];
extern const size_t rk_cli_n_conf_formats;

#endif
