/* common.c — helpers every ringkeeper command uses: errors, usage, reading topologies and keys. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int rk_cli_fail(const char *cmd, int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ringkeeper %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

int rk_cli_usage(const rk_cli_cmd *cmd)
{
    fprintf(stderr, "%s", cmd->usage);
    return RK_EXIT_USAGE;
}

int rk_cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    return 0;
}

/* The whole file, NUL-terminated, or NULL with errno set (EFBIG past RK_CLI_MAX_FILE). */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || cap >= RK_CLI_MAX_FILE)
            break;
        char *grown = realloc(buf, 2 * cap + 1);
        if (!grown)
            free(buf);
        buf = grown, cap *= 2;
    }
    int failed = !buf || ferror(f) || (n == cap && fgetc(f) != EOF);
    if (failed && buf)
        errno = ferror(f) ? EIO : EFBIG;
    fclose(f);
    if (failed) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

char *rk_cli_read_file(const char *cmd, const char *path, size_t *len)
{
    char *text = read_file(path, len);
    if (!text)
        rk_cli_fail(cmd, RK_EXIT_USAGE, "cannot read %s: %s", path, strerror(errno));
    return text;
}

rk_ring *rk_cli_ring_from_text(const char *cmd, const char *label, const char *text, size_t len)
{
    rk_error err = {0};
    rk_topology *t = rk_topology_parse(text, len, &err);
    rk_ring *r = t ? rk_ring_build(t, &err) : NULL;
    rk_topology_free(t);
    if (!r)
        rk_cli_fail(cmd, RK_EXIT_USAGE, "%s: %s", label, err.message);
    return r;
}

rk_ring *rk_cli_load_ring(const char *cmd, const char *path)
{
    size_t len;
    char *text = rk_cli_read_file(cmd, path, &len);
    rk_ring *r = text ? rk_cli_ring_from_text(cmd, path, text, len) : NULL;
    free(text);
    return r;
}

int rk_cli_number(const char *s, unsigned long long lo, unsigned long long hi,
                  unsigned long long *out)
{
    char *end;
    errno = 0;
    if (!s || *s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

long rk_cli_next_key(FILE *f, char **line, size_t *cap)
{
    ssize_t n = getline(line, cap, f);
    if (n < 0)
        return -1;
    if (n > 0 && (*line)[n - 1] == '\n')
        n--;
    return (long)n;
}
