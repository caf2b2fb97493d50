/* tmpdir.h — one temporary folder per test program: made before its tests, removed after them. */
#ifndef RK_TEST_TMPDIR_H
#define RK_TEST_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The folder; valid after tmpdir_setup. */
static char tmpdir[] = "/tmp/rk_test.XXXXXX";

/* Removes `dir` and everything below it, following no links; 0 on success. */
static int remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int rc = 0;
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[1024];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            rc |= remove_tree(path);
        else
            rc |= unlink(path);
    }
    closedir(d);
    return rmdir(dir) | rc;
}

/* cmocka group setup and teardown. */
static int tmpdir_setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int tmpdir_teardown(void **state)
{
    (void)state;
    return remove_tree(tmpdir);
}

#endif
