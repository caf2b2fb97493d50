/* fuzz_formats.c — libFuzzer harness: every configuration format of `ringkeeper import` and
 * `export --into` (client/cli/formats/: nutcracker, nginx, HAProxy, Envoy) on any bytes, which an
 * operator's file or a hostile one can hold. The first byte picks the format; the rest is the
 * file, read by the format's import and rewritten by its into with the topology import read, for
 * the part named "cache" (the seeds' pool, upstream and backend), or the file's only one where
 * the format lets the part be left out. Each either answers or refuses with a sentence; an answer
 * must be a topology the library takes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "format.h"
#include "ringkeeper.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The file rewritten with `doc`'s servers: an answer, or a refusal that says why. */
static void into(const rk_cli_conf_format *f, const char *text, size_t len, const char *part,
                 const json_t *doc)
{
    char chosen[RK_CLI_FORMAT_MSG_MAX] = "", msg[RK_CLI_FORMAT_MSG_MAX] = "";
    char *out = f->into(text, len, part, doc, chosen, msg);
    if (!out && !msg[0])
        abort(); /* a refusal says why */
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || rk_cli_n_conf_formats == 0)
        return 0;
    const rk_cli_conf_format *f = rk_cli_conf_formats[data[0] % rk_cli_n_conf_formats];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    const char *part = f->part_optional ? NULL : "cache"; /* import_export.c's contract */
    char msg[RK_CLI_FORMAT_MSG_MAX] = "", note[RK_CLI_FORMAT_MSG_MAX] = "";
    json_t *doc = f->import(text, len, part, msg, note);
    if (!doc && !msg[0])
        abort(); /* a refusal says why */
    if (doc) {
        rk_error err = {0};
        rk_topology *t = rk_topology_from_json(doc, &err);
        rk_topology_free(t); /* a topology the library refuses is the library's to say why */
        into(f, text, len, part, doc);
    }
    json_decref(doc);
    return 0;
}
