/* etcd_params.c — the etcd backend's parameters: their pairs, their files, the password file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "etcd_params.h"

const char *const rke_param_names[] = {"etcd-cacert", "etcd-cert",          "etcd-key",
                                       "etcd-user",   "etcd-password-file", NULL};

/* RK_EINVAL when a pair is given half, naming the flag given. */
static int check_pairs(const rke_security *sec, const char *password_file, rk_error *err)
{
    if (!sec->cert != !sec->key)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "%s needs its pair: a client certificate takes --etcd-cert and "
                            "--etcd-key",
                            sec->cert ? "--etcd-cert" : "--etcd-key");
    if (!sec->user != !password_file)
        return rk_error_set(err, RK_EINVAL, NULL,
                            "%s needs its pair: etcd authentication takes --etcd-user and "
                            "--etcd-password-file",
                            sec->user ? "--etcd-user" : "--etcd-password-file");
    return RK_OK;
}

/* RK_EINVAL naming the first PEM file given that cannot be read, and its flag. */
static int check_files(const rke_security *sec, rk_error *err)
{
    const char *names[] = {"--etcd-cacert", "--etcd-cert", "--etcd-key"};
    const char *files[] = {sec->cacert, sec->cert, sec->key};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (files[i] && access(files[i], R_OK) != 0)
            return rk_error_set(err, RK_EINVAL, NULL, "%s %s: cannot be read: %s", names[i],
                                files[i], strerror(errno));
    return RK_OK;
}

int rke_params_read(const rkd_store_param *p, size_t n, rke_security *sec, char **password,
                    rk_error *err)
{
    const char *password_file = rkd_store_param_value(p, n, "etcd-password-file");
    *password = NULL;
    *sec = (rke_security){.cacert = rkd_store_param_value(p, n, "etcd-cacert"),
                          .cert = rkd_store_param_value(p, n, "etcd-cert"),
                          .key = rkd_store_param_value(p, n, "etcd-key"),
                          .user = rkd_store_param_value(p, n, "etcd-user")};
    int rc = check_pairs(sec, password_file, err);
    rc = rc ? rc : check_files(sec, err);
    if (rc == RK_OK && password_file)
        rc = rkd_read_secret("--etcd-password-file", password_file, password, err);
    sec->password = *password;
    return rc;
}

int rke_params_check(const rkd_store_param *p, size_t n, rk_error *err)
{
    rke_security sec;
    char *password;
    int rc = rke_params_read(p, n, &sec, &password, err);
    rke_password_free(password);
    return rc;
}

void rke_password_free(char *password)
{
    if (password)
        memset(password, 0, strlen(password));
    free(password);
}
