/* api_ui.c — the operator console: GET / and /ui redirect to /ui/, and /ui/<file> serves the files
 * of server/ui/ that the build embedded (ui_files.c, made by server/ui/embed.cmake). The console
 * only reads the public JSON API and writes with the token the operator pastes, so it adds no
 * privileged path; it loads nothing from elsewhere, so it works with no internet. */
#include <stdlib.h>
#include <string.h>

#include "api_ui.h"
#include "reply.h"

/* One embedded file; the table is generated. */
typedef struct rkd_ui_file {
    const char *name;          /* file name under server/ui/ */
    const unsigned char *data; /* its bytes */
    size_t len;                /* their count */
} rkd_ui_file;

extern const rkd_ui_file rkd_ui_files[];
extern const size_t rkd_ui_file_count;

static const struct {
    const char *ext;
    const char *type;
} content_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
};

static const char *type_of(const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < sizeof content_types / sizeof content_types[0]; i++) {
        size_t n = strlen(content_types[i].ext);
        if (len > n && strcmp(name + len - n, content_types[i].ext) == 0)
            return content_types[i].type;
    }
    return "application/octet-stream";
}

void rkd_h_ui_redirect(rkd_call *c)
{
    static const char text[] = "the console is at /ui/\n";
    char *body = malloc(sizeof text - 1);
    if (!body) {
        rkd_out_of_memory(c->resp);
        return;
    }
    memcpy(body, text, sizeof text - 1);
    rkd_set_body(c->resp, 302, RKD_CT_TEXT, body, sizeof text - 1);
    snprintf(c->resp->location, sizeof c->resp->location, "/ui/");
}

void rkd_h_ui_file(rkd_call *c)
{
    const char *name = c->req->path + strlen("/ui/");
    if (*name == '\0')
        name = "index.html";
    for (size_t i = 0; i < rkd_ui_file_count; i++) {
        if (strcmp(rkd_ui_files[i].name, name) != 0)
            continue;
        char *body = malloc(rkd_ui_files[i].len ? rkd_ui_files[i].len : 1);
        if (!body) {
            rkd_out_of_memory(c->resp);
            return;
        }
        memcpy(body, rkd_ui_files[i].data, rkd_ui_files[i].len);
        rkd_set_body(c->resp, 200, type_of(name), body, rkd_ui_files[i].len);
        return;
    }
    rkd_response_error(c->resp, RKD_E_NOT_FOUND, NULL,
                       "the console has no file %s; it starts at /ui/", name);
}
