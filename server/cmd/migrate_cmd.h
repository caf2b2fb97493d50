/* migrate_cmd.h — `ringkeeperd migrate-store`, the subcommand main.c hands argv to. */
#ifndef RKD_MIGRATE_CMD_H
#define RKD_MIGRATE_CMD_H

/* Runs `ringkeeperd migrate-store` with argv[0] == "migrate-store"; `migrations` is the default
 * of --migrations (main.c finds it). Returns the exit code: 0 copied and verified, 1 failure, 2
 * bad flags, 3 a store refused (the destination holds clusters, or a file is not a ringkeeper
 * database). */
int rkd_migrate_main(int argc, char **argv, const char *migrations);

#endif /* RKD_MIGRATE_CMD_H */
