/* etcd_opts.c — the etcd flags' checks and the password file, for ringkeeperd and migrate-store. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "etcd_opts.h"
#include "log.h"

enum { EXIT_USAGE = 2 };

/* The first of the flags given, for an error; NULL when none is. */
static const char *first_given(const rkd_etcd_flags *f)
{
    return f->cacert          ? "--etcd-cacert"
           : f->cert          ? "--etcd-cert"
           : f->key           ? "--etcd-key"
           : f->user          ? "--etcd-user"
           : f->password_file ? "--etcd-password-file"
                              : NULL;
}

/* The reason `f` does not fit `location`, or NULL. */
static const char *misfit(const rkd_etcd_flags *f, const char *location)
{
    if (first_given(f) && !rkd_store_is_etcd(location))
        return "is for an etcd store (--store etcd://... or etcds://...), not an SQLite file";
    if (!f->cert != !f->key)
        return "needs its pair: a client certificate takes --etcd-cert and --etcd-key";
    if (!f->user != !f->password_file)
        return "needs its pair: etcd authentication takes --etcd-user and --etcd-password-file";
    return NULL;
}

/* The first of the PEM files given that cannot be read (as flag and file), or 0. */
static int unreadable(const rkd_etcd_flags *f, const char **flag, const char **path)
{
    const char *names[] = {"--etcd-cacert", "--etcd-cert", "--etcd-key"};
    const char *files[] = {f->cacert, f->cert, f->key};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (files[i] && access(files[i], R_OK) != 0) {
            *flag = names[i];
            *path = files[i];
            return 1;
        }
    return 0;
}

int rkd_etcd_flags_apply(const rkd_etcd_flags *f, const char *location, rkd_store_options *opt,
                         char **password)
{
    const char *why = misfit(f, location);
    *password = NULL;
    if (why) {
        const char *flag = !rkd_store_is_etcd(location) ? first_given(f)
                           : !f->cert != !f->key        ? (f->cert ? "--etcd-cert" : "--etcd-key")
                           : f->user                    ? "--etcd-user"
                                                        : "--etcd-password-file";
        return rkd_log_fail(EXIT_USAGE, "%s %s", flag, why);
    }
    const char *flag, *path;
    if (unreadable(f, &flag, &path)) {
        return rkd_log_fail(EXIT_USAGE, "%s %s: cannot be read: %s", flag, path, strerror(errno));
    }
    rk_error err = {0};
    if (f->password_file &&
        rkd_read_secret("--etcd-password-file", f->password_file, password, &err) != RK_OK) {
        return rkd_log_fail(EXIT_USAGE, "%s", err.message);
    }
    opt->etcd_cacert = f->cacert;
    opt->etcd_cert = f->cert;
    opt->etcd_key = f->key;
    opt->etcd_user = f->user;
    opt->etcd_password = *password;
    return 0;
}

void rkd_etcd_password_free(char *password)
{
    if (password)
        memset(password, 0, strlen(password));
    free(password);
}
