/* common.c — helpers every ringkeeper command uses: errors, usage, reading topologies and keys,
 * replacing a file atomically. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Length of the UTF-8 character at p (left > 0 bytes) when it is shown as it is: 0 when invalid or
 * hidden (rk_text_hidden: a control, or a mark a terminal would apply instead of showing). */
static size_t utf8_len(const unsigned char *p, size_t left)
{
    uint32_t cp;
    size_t len = rk_utf8_next((const char *)p, left, &cp);
    return len && !rk_text_hidden(cp) ? len : 0;
}

/* The visible form of the control, mark or invalid byte at p (a character takes all its bytes:
 * *used). JSON has \u escapes only: a code point past U+FFFF goes as its surrogate pair. */
static int write_escape(FILE *f, const unsigned char *p, size_t left, rk_cli_safe_mode mode,
                        size_t *used)
{
    static const char named[] = {['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
    uint32_t cp = p[0];
    *used = p[0] < 0x80 ? 1 : rk_utf8_next((const char *)p, left, &cp);
    if (*used == 0) { /* not UTF-8: the byte */
        *used = 1;
        return fprintf(f, "\\x%02x", p[0]);
    }
    if (cp > 0xFFFF && mode == RK_CLI_SAFE_JSON)
        return fprintf(f, "\\u%04X\\u%04X", 0xD800 + ((cp - 0x10000) >> 10),
                       0xDC00 + ((cp - 0x10000) & 0x3FF));
    if (cp > 0xFFFF)
        return fprintf(f, "\\U%08X", cp);
    if (cp >= 0x80 || (mode == RK_CLI_SAFE_JSON && (cp < 0x20 || cp == 0x7F)))
        return fprintf(f, "\\u%04X", cp);
    if (cp < sizeof named && named[cp])
        return fprintf(f, "\\%c", named[cp]);
    return fprintf(f, "\\x%02x", cp);
}

int rk_cli_write_safe(FILE *f, const char *s, size_t len, rk_cli_safe_mode mode)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t at = 0;
    while (at < len) {
        size_t run = at; /* printable ASCII, kept newlines and valid UTF-8 go out as they are */
        for (size_t k; run < len; run += k) {
            unsigned c = p[run];
            int kept = (c >= 0x20 && c < 0x7F) || (c == '\n' && mode != RK_CLI_SAFE_LINE);
            k = kept ? 1 : c >= 0x80 ? utf8_len(p + run, len - run) : 0;
            if (!k)
                break;
        }
        if (fwrite(p + at, 1, run - at, f) != run - at)
            return EOF;
        at = run;
        size_t used = 0;
        if (at < len && write_escape(f, p + at, len - at, mode, &used) < 0)
            return EOF;
        at += used;
    }
    return 0;
}

/* The formatted text through rk_cli_write_safe; out of memory, what can be said safely. */
static int vprint_safe(FILE *f, rk_cli_safe_mode mode, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text)
        vsnprintf(text, (size_t)n + 1, fmt, again);
    va_end(again);
    int rc = text ? rk_cli_write_safe(f, text, (size_t)n, mode) : fputs("(out of memory)", f);
    free(text);
    return rc < 0 ? EOF : 0;
}

int rk_cli_print_safe(FILE *f, rk_cli_safe_mode mode, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vprint_safe(f, mode, fmt, ap);
    va_end(ap);
    return rc;
}

/* "ringkeeper <cmd>: <message>\n" on stderr, the message escaped. */
static void vfail(const char *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, "ringkeeper %s: ", cmd);
    vprint_safe(stderr, RK_CLI_SAFE_LINE, fmt, ap);
    fputc('\n', stderr);
}

int rk_cli_fail(const char *cmd, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(cmd, fmt, ap);
    va_end(ap);
    return code;
}

int rk_cli_usage_error(const rk_cli_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(cmd->name, fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try 'ringkeeper %s --help' for the options.\n", cmd->name);
    return RK_EXIT_USAGE;
}

int rk_cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    return 0;
}

char *rk_cli_slurp(const char *path, size_t *len)
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
    char *text = rk_cli_slurp(path, len);
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

int rk_cli_replace_file(const char *path, const char *mode_of, const char *data, size_t len)
{
    struct stat st;
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.ringkeeper-XXXXXX", path);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return errno = ENAMETOOLONG, -1;
    int fd = stat(mode_of, &st) == 0 ? mkstemp(tmp) : -1;
    if (fd < 0)
        return -1;
    errno = 0;
    int ok = fchmod(fd, st.st_mode & 07777) == 0 && write(fd, data, len) == (ssize_t)len &&
             fsync(fd) == 0;
    int err = ok ? 0 : errno;
    if (close(fd) != 0 && ok)
        ok = 0, err = errno;
    if (ok && rename(tmp, path) != 0)
        ok = 0, err = errno;
    if (!ok) {
        unlink(tmp);
        errno = err ? err : EIO; /* a short write sets none */
        return -1;
    }
    return 0;
}
