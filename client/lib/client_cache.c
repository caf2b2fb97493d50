/* client_cache.c — the last-known-good file: replaced atomically and durably, read whole, and
 * checked against its own checksum.
 *
 * Format: one header line "RK-LKG/1 bytes=<N> xxh3_64=<16 hex digits>\n", then the N bytes of the
 * version document exactly as the server sent them. The fingerprint covers node ids and positions
 * only, so without the checksum a flipped byte in an address or in the version would go unseen. */
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_internal.h"

static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The folder of `path` ("." when it has none), into buf. */
static void folder_of(const char *path, char *buf, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, size, ".");
    else if (slash == path)
        snprintf(buf, size, "/");
    else
        snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

static int sync_folder(const char *path)
{
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* The mode of the file written over `path`: the one the file there has (its owner chose who may
 * read it) without write for group and others, who could otherwise plant the ring this client
 * starts from (*was gets the old mode when that took something away), or 0600 for a new file: it
 * tells which nodes hold which keys, and no one but its owner writes it. */
static mode_t mode_for(const char *path, unsigned *was)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0600;
    *was = st.st_mode & 022 ? (unsigned)(st.st_mode & 0777) : 0;
    return st.st_mode & 0755;
}

#define HEADER_FORMAT "RK-LKG/1 bytes=%zu xxh3_64=%016" PRIx64 "\n"
#define HEADER_MAX    96

int rki_cache_write(const char *path, const char *data, size_t len, unsigned *tightened,
                    rk_error *err)
{
    char header[HEADER_MAX];
    int hlen =
        snprintf(header, sizeof header, HEADER_FORMAT, len, rk_hash(RK_HASH_XXH3_64, data, len));
    size_t plen = strlen(path);
    char *tmp = malloc(plen + sizeof ".tmpXXXXXX");
    int fd = -1, rc = RK_EIO;
    const char *step = "create a temporary file next to";
    if (!tmp)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory saving %s", path);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmpXXXXXX", sizeof ".tmpXXXXXX");
    fd = mkstemp(tmp);
    if (fd < 0)
        goto out;
    step = "write";
    *tightened = 0;
    if (fchmod(fd, mode_for(path, tightened)) != 0 || write_all(fd, header, (size_t)hlen) != 0 ||
        write_all(fd, data, len) != 0)
        goto out;
    step = "fsync";
    if (fsync(fd) != 0)
        goto out;
    step = "close";
    int closed = close(fd);
    fd = -1;
    if (closed != 0)
        goto out;
    step = "rename the temporary file onto";
    if (rename(tmp, path) != 0)
        goto out;
    step = "fsync the folder of";
    rc = sync_folder(path) == 0 ? RK_OK : RK_EIO;
out:
    if (rc != RK_OK)
        rk_error_set(err, RK_EIO, NULL,
                     "could not %s the last-known-good file %.100s: %s; check the folder's "
                     "permissions and free space",
                     step, path, strerror(errno));
    if (fd >= 0)
        close(fd);
    if (rc != RK_OK)
        unlink(tmp); /* gone already when only the folder's fsync failed */
    free(tmp);
    return rc;
}

/* Reads all of `fd` (size `size` from fstat) into a new buffer. */
static int read_whole(int fd, size_t size, char **out, size_t *len)
{
    char *buf = malloc(size + 1);
    size_t got = 0;
    if (!buf)
        return RK_ENOMEM;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got < size) {
        free(buf);
        return RK_EIO;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return RK_OK;
}

/* Checks the header and the checksum of the file's text `buf` (len bytes), then moves the body to
 * the start of buf; *len becomes the body's length. */
static int check_header(const char *path, char *buf, size_t *len, rk_error *err)
{
    char expect[HEADER_MAX];
    const char *nl = memchr(buf, '\n', *len < HEADER_MAX ? *len : HEADER_MAX);
    size_t hlen = nl ? (size_t)(nl - buf) + 1 : 0;
    size_t body = *len - hlen;
    if (nl)
        snprintf(expect, sizeof expect, HEADER_FORMAT, body,
                 rk_hash(RK_HASH_XXH3_64, nl + 1, body));
    if (!nl || strlen(expect) != hlen || memcmp(expect, buf, hlen) != 0)
        return rk_error_set(err, RK_ECACHE, NULL,
                            "the last-known-good file %.100s is damaged (its length or checksum "
                            "does not match, or it was not written by libringkeeper)",
                            path);
    memmove(buf, buf + hlen, body);
    buf[body] = '\0';
    *len = body;
    return RK_OK;
}

int rki_cache_read(const char *path, size_t max, char **out, size_t *len, int *missing,
                   rk_error *err)
{
    struct stat st;
    int rc = RK_EIO;
    *missing = 0;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *missing = errno == ENOENT;
        return rk_error_set(err, RK_EIO, NULL, "cannot open the last-known-good file %.100s: %s",
                            path, strerror(errno));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rk_error_set(err, RK_EIO, NULL, "the last-known-good file %.100s is not a regular file",
                     path);
        goto out;
    }
    if ((unsigned long long)st.st_size > max + HEADER_MAX) {
        rc =
            rk_error_set(err, RK_ETOOLARGE, NULL,
                         "the last-known-good file %.100s is over the cap of %zu bytes", path, max);
        goto out;
    }
    rc = read_whole(fd, (size_t)st.st_size, out, len);
    if (rc != RK_OK)
        rk_error_set(err, rc, NULL, "cannot read the last-known-good file %.100s: %s", path,
                     rc == RK_ENOMEM ? "out of memory" : strerror(errno));
    if (rc == RK_OK)
        rc = check_header(path, *out, len, err);
    if (rc != RK_OK) {
        free(*out);
        *out = NULL;
    }
out:
    close(fd);
    return rc;
}
