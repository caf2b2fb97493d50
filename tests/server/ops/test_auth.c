/* test_auth.c — ringkeeperd's bearer tokens (server/ops/auth.h): token files accepted and refused
 * with line numbers but never token text, 401/403 outcomes, reloads, and checks racing reloads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tmpdir.h"
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"

#define TOK_OPS    "ops-0123456789abcdef"
#define TOK_CI     "ci:with:colons:0123456789"
#define TOK_DEPLOY "deploy-secret-XYZ-0001"
#define THREADS    4
#define CHECKS     3000
#define RELOADS    200

/* Writes `text` to <tmpdir>/<name> atomically (temp file + rename: a reload never reads half). */
static void write_file(char *path, size_t cap, const char *name, const char *text)
{
    char tmp[256];
    snprintf(path, cap, "%s/%s", tmpdir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(tmp, 0600), 0); /* others may not read a token file */
    assert_int_equal(rename(tmp, path), 0);
}

static rkd_auth *auth_ok(const char *path)
{
    rk_error err = {0};
    rkd_auth *a = rkd_auth_new(path, &err);
    if (!a)
        fail_msg("rkd_auth_new(%s): %s", path ? path : "NULL", err.message);
    return a;
}

/* Checks `header` and expects `outcome`, and the name when that is RKD_AUTH_OK. */
static void expect(rkd_auth *a, const char *header, int outcome, const char *name)
{
    char got[80] = "untouched";
    int rc = rkd_auth_check(a, header, got, sizeof got, NULL);
    if (rc != outcome)
        fail_msg("check(%s): %d, expected %d", header ? header : "NULL", rc, outcome);
    if (name && strcmp(got, name) != 0)
        fail_msg("check(%s): name %s, expected %s", header ? header : "NULL", got, name);
}

static void test_valid_file(void **state)
{
    (void)state;
    char path[256];
    write_file(path, sizeof path, "valid.txt",
               "# ringkeeper tokens\n\n   \nops:" TOK_OPS "\r\n"
               "ci:" TOK_CI "\n#deploy:" TOK_DEPLOY "\n"
               "a.b_c-D9:" TOK_DEPLOY); /* no final newline */
    rkd_auth *a = auth_ok(path);
    assert_true(rkd_auth_enabled(a));
    expect(a, "Bearer " TOK_OPS, RKD_AUTH_OK, "ops");
    expect(a, "Bearer " TOK_CI, RKD_AUTH_OK, "ci");
    expect(a, "Bearer " TOK_DEPLOY, RKD_AUTH_OK, "a.b_c-D9");
    rkd_auth_free(a);
}

static void test_outcomes(void **state)
{
    (void)state;
    char path[256];
    write_file(path, sizeof path, "outcomes.txt", "ops:" TOK_OPS "\nci:" TOK_CI "\n");
    rkd_auth *a = auth_ok(path);
    expect(a, NULL, RKD_AUTH_MISSING, NULL);
    expect(a, "", RKD_AUTH_MISSING, NULL);
    expect(a, "Basic b3BzOnNlY3JldA==", RKD_AUTH_MISSING, NULL);
    expect(a, TOK_OPS, RKD_AUTH_MISSING, NULL);
    expect(a, "Bearer", RKD_AUTH_MISSING, NULL);
    expect(a, "Bearer ", RKD_AUTH_MISSING, NULL);
    expect(a, "Bearer    ", RKD_AUTH_MISSING, NULL);
    expect(a, "Bearer" TOK_OPS, RKD_AUTH_MISSING, NULL);
    expect(a, "Bearer x", RKD_AUTH_WRONG, NULL);
    expect(a, "Bearer " TOK_OPS "x", RKD_AUTH_WRONG, NULL);
    expect(a, "Bearer ops-0123456789abcdeF", RKD_AUTH_WRONG, NULL);
    expect(a, "Bearer " TOK_OPS, RKD_AUTH_OK, "ops");
    expect(a, "bEARER   " TOK_OPS "  ", RKD_AUTH_OK, "ops");
    expect(a, "Bearer " TOK_CI, RKD_AUTH_OK, "ci");
    /* A short buffer gets a truncated, terminated name; NULL is allowed. */
    char two[2];
    assert_int_equal(rkd_auth_check(a, "Bearer " TOK_OPS, two, sizeof two, NULL), RKD_AUTH_OK);
    assert_string_equal(two, "o");
    assert_int_equal(rkd_auth_check(a, "Bearer " TOK_OPS, NULL, 0, NULL), RKD_AUTH_OK);
    rkd_auth_free(a);
}

static void test_no_tokens(void **state)
{
    (void)state;
    rkd_auth *a = auth_ok(NULL);
    assert_false(rkd_auth_enabled(a));
    expect(a, NULL, RKD_AUTH_OK, "anonymous");
    expect(a, "Bearer whatever-at-all-here", RKD_AUTH_OK, "anonymous");
    rk_error err = {0};
    assert_int_equal(rkd_auth_reload(a, &err), RK_OK);
    expect(a, NULL, RKD_AUTH_OK, "anonymous");
    rkd_auth_free(a);
}

typedef struct bad_case {
    const char *text;     /* file contents */
    int line;             /* line blamed, 0 for none */
    const char *fragment; /* part of the message */
    const char *secret;   /* must not appear in the message */
} bad_case;

static const bad_case bad_cases[] = {
    {"ops:" TOK_OPS "\n" TOK_DEPLOY "\n", 2, "found no ':'", TOK_DEPLOY},
    {"# c\n:" TOK_OPS "\n", 2, "name before ':' is empty", TOK_OPS},
    {"ops:" TOK_OPS "\n\nsecret+0123456789abc:ops\n", 3, "byte 7 of the name", "secret+"},
    {"nameeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee:" TOK_OPS "\n", 1,
     "longer than 64 bytes", TOK_OPS},
    {"# x\n\n\nops:short-secret\n", 4, "the token of \"ops\" is shorter than 16 bytes",
     "short-secret"},
    {"ops:\n", 1, "shorter than 16 bytes", NULL},
    /* a blank ends the token (roles follow it): what is left before it is too short */
    {"ops:has space secret 1234\n", 1, "the token of \"ops\" is shorter than 16", "has space"},
    {"ops:tab\tsecret-1234567890\n", 1, "is shorter than 16 bytes", "secret-1234567890"},
    {"ops:" TOK_OPS " publish,root\n", 1, "not publish, approve, admin or client", TOK_OPS},
    {"ops:" TOK_OPS " secret-0123456789\n", 1, "roles of \"ops\" name one", "secret-0123"},
    {"ops:ctl\001secret-1234567890\n", 1, "is a space or not printable", "secret-1234567890"},
    {"ops:utf8\xc3\xa9secret-1234567890\n", 1, "not printable ASCII", "secret-1234567890"},
    {"ops:" TOK_OPS "\nops:" TOK_DEPLOY "\n", 2, "name \"ops\" is already used on line 1",
     TOK_DEPLOY},
    {"ops:" TOK_OPS "\nci:" TOK_OPS "\n", 2, "same as that of \"ops\"", TOK_OPS},
    {"# only comments\n\n", 0, "has no tokens", NULL},
};

static void check_bad(const char *path, const bad_case *c)
{
    rk_error err = {0};
    rkd_auth *a = rkd_auth_new(path, &err);
    if (a)
        fail_msg("accepted: %s", c->text);
    assert_int_equal(err.code, RK_EINVAL);
    char where[300];
    snprintf(where, sizeof where, "%s:%d: ", path, c->line);
    if (c->line && strncmp(err.message, where, strlen(where)) != 0)
        fail_msg("message %s does not start with %s", err.message, where);
    if (!strstr(err.message, c->fragment))
        fail_msg("message %s lacks %s", err.message, c->fragment);
    if (c->secret && strstr(err.message, c->secret))
        fail_msg("message %s shows the token", err.message);
}

static void test_bad_files(void **state)
{
    (void)state;
    char path[256];
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        write_file(path, sizeof path, "tokens.txt", bad_cases[i].text);
        check_bad(path, &bad_cases[i]);
    }
    /* A token over 256 bytes. */
    char text[400] = "ops:";
    memset(text + 4, 'k', 257);
    strcpy(text + 4 + 257, "\n");
    write_file(path, sizeof path, "tokens.txt", text);
    check_bad(path, &(bad_case){text, 1, "longer than 256 bytes", "kkkkkkkkkkkkkkkk"});
    rk_error err = {0};
    snprintf(path, sizeof path, "%s/missing.txt", tmpdir);
    assert_null(rkd_auth_new(path, &err));
    assert_int_equal(err.code, RK_EIO);
    assert_non_null(strstr(err.message, "missing.txt"));
}

/* Roles after the token; none written: all of them (files from before roles keep working). */
static void test_roles(void **state)
{
    (void)state;
    char path[256], name[80], text[64];
    unsigned roles = 0;
    write_file(path, sizeof path, "roles.txt",
               "ops:" TOK_OPS "\nci:" TOK_CI " publish\ndeploy:" TOK_DEPLOY
               "\t approve , admin,client\n");
    rkd_auth *a = auth_ok(path);
    assert_int_equal(rkd_auth_check(a, "Bearer " TOK_OPS, name, sizeof name, &roles), RKD_AUTH_OK);
    assert_int_equal(roles, RKD_ROLES_ALL);
    assert_int_equal(rkd_auth_check(a, "Bearer " TOK_CI, name, sizeof name, &roles), RKD_AUTH_OK);
    assert_int_equal(roles, RKD_ROLE_PUBLISH);
    assert_string_equal(name, "ci");
    assert_int_equal(rkd_auth_check(a, "Bearer " TOK_DEPLOY, name, sizeof name, &roles),
                     RKD_AUTH_OK);
    assert_int_equal(roles, RKD_ROLE_APPROVE | RKD_ROLE_ADMIN | RKD_ROLE_CLIENT);
    assert_int_equal(rkd_auth_check(a, "Bearer nope-0123456789abcdef", name, sizeof name, &roles),
                     RKD_AUTH_WRONG);
    assert_int_equal(roles, 0);
    rkd_roles_text(RKD_ROLE_APPROVE | RKD_ROLE_CLIENT, text, sizeof text);
    assert_string_equal(text, "approve,client");
    rkd_roles_text(0, text, sizeof text);
    assert_string_equal(text, "none");
    rkd_auth_free(a);
    a = auth_ok(NULL); /* no token file: anyone may do anything */
    assert_int_equal(rkd_auth_check(a, NULL, name, sizeof name, &roles), RKD_AUTH_OK);
    assert_int_equal(roles, RKD_ROLES_ALL);
    rkd_auth_free(a);
}

static void test_reload(void **state)
{
    (void)state;
    char path[256];
    rk_error err = {0};
    write_file(path, sizeof path, "reload.txt", "ops:" TOK_OPS "\n");
    rkd_auth *a = auth_ok(path);
    expect(a, "Bearer " TOK_OPS, RKD_AUTH_OK, "ops");
    expect(a, "Bearer " TOK_CI, RKD_AUTH_WRONG, NULL);

    write_file(path, sizeof path, "reload.txt", "ci:" TOK_CI "\n");
    assert_int_equal(rkd_auth_reload(a, &err), RK_OK);
    expect(a, "Bearer " TOK_OPS, RKD_AUTH_WRONG, NULL);
    expect(a, "Bearer " TOK_CI, RKD_AUTH_OK, "ci");

    write_file(path, sizeof path, "reload.txt", "ci:" TOK_CI "\nops:short\n");
    assert_int_equal(rkd_auth_reload(a, &err), RK_EINVAL);
    assert_non_null(strstr(err.message, "reload.txt:2:"));
    expect(a, "Bearer " TOK_CI, RKD_AUTH_OK, "ci");
    expect(a, "Bearer " TOK_OPS, RKD_AUTH_WRONG, NULL);

    assert_int_equal(unlink(path), 0);
    assert_int_equal(rkd_auth_reload(a, &err), RK_EIO);
    expect(a, "Bearer " TOK_CI, RKD_AUTH_OK, "ci");
    assert_true(rkd_auth_enabled(a));
    rkd_auth_free(a);
}

/* ---- Checks racing reloads ---- */

typedef struct race {
    rkd_auth *auth;       /* under test */
    char path[256];       /* the file reloaded */
    int bad;              /* checks that saw an impossible outcome */
    pthread_mutex_t lock; /* guards bad */
} race;

/* "ops" is in both files, so it must always pass; "ci" and "deploy" come and go, but a pass must
 * always carry their own name. */
static void *checker(void *arg)
{
    race *r = arg;
    int bad = 0;
    char name[80];
    for (int i = 0; i < CHECKS; i++) {
        bad += rkd_auth_check(r->auth, "Bearer " TOK_OPS, name, sizeof name, NULL) != RKD_AUTH_OK ||
               strcmp(name, "ops") != 0;
        int rc = rkd_auth_check(r->auth, "Bearer " TOK_CI, name, sizeof name, NULL);
        bad += rc == RKD_AUTH_MISSING || (rc == RKD_AUTH_OK && strcmp(name, "ci") != 0);
        rc = rkd_auth_check(r->auth, "Bearer " TOK_DEPLOY, name, sizeof name, NULL);
        bad += rc == RKD_AUTH_MISSING || (rc == RKD_AUTH_OK && strcmp(name, "deploy") != 0);
    }
    pthread_mutex_lock(&r->lock);
    r->bad += bad;
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static void test_checks_during_reloads(void **state)
{
    (void)state;
    static const char *const files[] = {
        "ops:" TOK_OPS "\nci:" TOK_CI "\n", "deploy:" TOK_DEPLOY "\nops:" TOK_OPS "\n",
        "ops:" TOK_OPS "\nbroken\n", /* refused: the previous table stays */
    };
    race r = {.lock = PTHREAD_MUTEX_INITIALIZER};
    write_file(r.path, sizeof r.path, "race.txt", files[0]);
    r.auth = auth_ok(r.path);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, checker, &r), 0);
    for (int i = 0; i < RELOADS; i++) {
        rk_error err = {0};
        write_file(r.path, sizeof r.path, "race.txt", files[i % 3]);
        assert_int_equal(rkd_auth_reload(r.auth, &err), i % 3 == 2 ? RK_EINVAL : RK_OK);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(r.bad, 0);
    rkd_auth_free(r.auth);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),
        cmocka_unit_test(test_outcomes),
        cmocka_unit_test(test_no_tokens),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_reload),
        cmocka_unit_test(test_checks_during_reloads),
    };
    return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
