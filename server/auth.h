/* auth.h — bearer tokens of ringkeeperd: a token file of "name:token" lines, reloadable; and the
 * same care for other secret files (the etcd password). */
#ifndef RKD_AUTH_H
#define RKD_AUTH_H

#include <stddef.h>

#include "ringkeeper.h"

typedef struct rkd_auth rkd_auth;

enum {
    RKD_AUTH_OK = 0,
    RKD_AUTH_MISSING = 1, /* no usable "Authorization: Bearer ..." header: 401 */
    RKD_AUTH_WRONG = 2,   /* a token that is not configured: 403 */
};

/* Loads the token file at `path` (NULL: no tokens, every write allowed as "anonymous"). Format:
 * one "name:token" a line; blank lines and lines starting with '#' are ignored; names are
 * 1..64 bytes of [A-Za-z0-9._-], tokens 16..256 printable ASCII bytes without spaces; names and
 * tokens unique. A bad file is refused with the line number in `err`, and so is a file others can
 * read or its group can write (mode & 0027). Free with rkd_auth_free. */
rkd_auth *rkd_auth_new(const char *path, rk_error *err) RK_MUST_CHECK;
void rkd_auth_free(rkd_auth *a);

/* Reads the file again (SIGHUP); on any error keeps the tokens it had and returns the error. */
int rkd_auth_reload(rkd_auth *a, rk_error *err);

/* Non-zero when tokens are configured. */
int rkd_auth_enabled(rkd_auth *a);

/* Checks an Authorization header value (may be NULL). On RKD_AUTH_OK copies the token's name (or
 * "anonymous" when no tokens are configured) to name_out. Tokens are compared in constant time.
 * Thread-safe, also against rkd_auth_reload. */
int rkd_auth_check(rkd_auth *a, const char *authorization, char *name_out, size_t name_size);

#define RKD_SECRET_MAX 1024 /* the longest secret rkd_read_secret reads */

/* The first line of the secret file `path` (`what` names it in errors: "--etcd-password-file")
 * into *out (new; overwrite it before freeing). Refused like the token file when others may read
 * it or its group may change it (RK_EINVAL); RK_EINVAL too when it is missing or empty. */
int rkd_read_secret(const char *what, const char *path, char **out, rk_error *err);

#endif
