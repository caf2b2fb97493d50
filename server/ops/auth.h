/* auth.h — bearer tokens of ringkeeperd: a token file of "name:token [roles]" lines, reloadable;
 * and the same care for other secret files (the etcd password). */
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

/* What a token may do (docs/API.md, "Tokens and roles"). A token given no roles has them all, as
 * every token had before roles existed, and so has every request when there is no token file. */
enum {
    RKD_ROLE_PUBLISH = 1u << 0, /* publish, activate, revert, finish a migration window */
    RKD_ROLE_APPROVE = 1u << 1, /* approve a version's plan */
    RKD_ROLE_ADMIN = 1u << 2,   /* loosen a policy's guard, force an activation past its budget */
    RKD_ROLE_CLIENT = 1u << 3,  /* be counted as an authenticated client (GET .../clients) */
    RKD_ROLES_ALL = (1u << 4) - 1,
};

/* Loads the token file at `path` (NULL: no tokens, every write allowed as "anonymous"). Format:
 * one "name:token" a line, optionally followed by blanks and a comma-separated list of roles
 * (publish, approve, admin, client); blank lines and lines starting with '#' are ignored; names
 * are 1..64 bytes of [A-Za-z0-9._-], tokens 16..256 printable ASCII bytes without spaces; names and
 * tokens unique. A bad file is refused with the line number in `err`, and so is a file others can
 * read or its group can write (mode & 0027). Free with rkd_auth_free. */
rkd_auth *rkd_auth_new(const char *path, rk_error *err) RK_MUST_CHECK;
void rkd_auth_free(rkd_auth *a);

/* Reads the file again (SIGHUP); on any error keeps the tokens it had and returns the error. */
int rkd_auth_reload(rkd_auth *a, rk_error *err);

/* Non-zero when tokens are configured. */
int rkd_auth_enabled(rkd_auth *a);

/* Checks an Authorization header value (may be NULL). On RKD_AUTH_OK copies the token's name (or
 * "anonymous" when no tokens are configured) to name_out and its roles (RKD_ROLE_*) to *roles
 * (may be NULL). Tokens are compared in constant time. Thread-safe, also against rkd_auth_reload.
 */
int rkd_auth_check(rkd_auth *a, const char *authorization, char *name_out, size_t name_size,
                   unsigned *roles);

/* "publish,approve" for RKD_ROLE_PUBLISH | RKD_ROLE_APPROVE, "none" for 0; into out. */
void rkd_roles_text(unsigned roles, char *out, size_t size);

#define RKD_SECRET_MAX 1024 /* the longest secret rkd_read_secret reads */

/* The first line of the secret file `path` (`what` names it in errors: "--etcd-password-file")
 * into *out (new; overwrite it before freeing). Refused like the token file when others may read
 * it or its group may change it (RK_EINVAL); RK_EINVAL too when it is missing or empty. */
int rkd_read_secret(const char *what, const char *path, char **out, rk_error *err);

#endif
