/* backup_cmd.c — `ringkeeperd backup --db FILE --to FILE [--force]`: flags, then one call to
 * rkd_sqlite_backup(), which copies a live database safely; this file only maps outcomes to exit
 * codes and explains restoring in --help. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "backup_cmd.h"
#include "store_sqlite.h"
#include "log.h"

enum { EXIT_USAGE = 2, EXIT_REFUSED = 3 };

typedef struct backup_options {
    const char *db; /* --db, the database to copy */
    const char *to; /* --to, the copy's name */
    int force;      /* --force: replace an existing --to */
} backup_options;

static const char usage[] =
    "usage: ringkeeperd backup --db FILE --to FILE [--force]\n"
    "\n"
    "Copies the ringkeeper database --db to --to with SQLite's online backup API: safe while a\n"
    "ringkeeperd serves that database and takes writes (the server is not blocked; the copy is\n"
    "the database as of one moment). The copy is checked with PRAGMA integrity_check and synced\n"
    "under a temporary name next to --to, then renamed: --to never holds half a copy.\n"
    "\n"
    "  --db FILE    the database to copy; nothing in it changes\n"
    "  --to FILE    where the copy goes; refused if it exists\n"
    "  --force      replace an existing --to\n"
    "\n"
    "The copy gets a new store id: restored, it is another history than the database's, and\n"
    "clients follow it instead of taking its reused version numbers for the old rings.\n"
    "\n"
    "Restore: stop ringkeeperd, delete the database's -wal and -shm files if there are any, run\n"
    "  ringkeeperd backup --db BACKUP --to DATABASE --force\n"
    "(a new store id at every restore, even of the same backup), start ringkeeperd.\n"
    "\n"
    "Exit codes: 0 copied, 1 failure (--to untouched), 2 bad flags, 3 --db is not a ringkeeper\n"
    "database.\n";

static int parse_backup_options(int argc, char **argv, backup_options *o)
{
    static const struct option opts[] = {{"db", required_argument, NULL, 'd'},
                                         {"to", required_argument, NULL, 't'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            o->db = optarg;
            break;
        case 't':
            o->to = optarg;
            break;
        case 'f':
            o->force = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            exit(0);
        default:
            fputs(usage, stderr);
            return EXIT_USAGE;
        }
    }
    if (optind != argc || !o->db || !o->to) {
        fputs(optind != argc ? usage : "ringkeeperd backup: --db and --to are required\n", stderr);
        return EXIT_USAGE;
    }
    return 0;
}

int rkd_backup_main(int argc, char **argv)
{
    rkd_log_set_name("ringkeeperd backup");
    backup_options o = {NULL, NULL, 0};
    int rc = parse_backup_options(argc, argv, &o);
    if (rc)
        return rc;
    rk_error err = {0};
    rc = rkd_sqlite_backup(o.db, o.to, o.force, &err);
    if (rc != RK_OK) {
        rkd_log("%s", err.message);
        return rc == RKD_STORE_ENOTRK ? EXIT_REFUSED : EXIT_FAILURE;
    }
    rkd_log("%s copied to %s (integrity_check ok)", o.db, o.to);
    return 0;
}
