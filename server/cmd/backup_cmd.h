/* backup_cmd.h — `ringkeeperd backup`, the subcommand main.c hands argv to. */
#ifndef RKD_BACKUP_CMD_H
#define RKD_BACKUP_CMD_H

/* Runs `ringkeeperd backup` with argv[0] == "backup"; returns the process exit code: 0 copied,
 * 1 failure, 2 bad flags, 3 the source is not a ringkeeper database. */
int rkd_backup_main(int argc, char **argv);

#endif /* RKD_BACKUP_CMD_H */
