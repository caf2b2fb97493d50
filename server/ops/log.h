/* log.h — how ringkeeperd writes to its log (stderr, which systemd's journal keeps): each line is
 * formatted whole and written with one write(2), so the lines of its threads never interleave,
 * under the name of the program or subcommand running ("ringkeeperd", "ringkeeperd backup").
 * Every message of the server and its subcommands goes through here; what a line quotes from a
 * client is escaped by the caller (rkh_log_escape), since only it knows which text is foreign. */
#ifndef RKD_LOG_H
#define RKD_LOG_H

#define RKD_LOG_LINE_MAX 4096 /* bytes of one line, its newline included; longer ones are cut */

/* The name lines start with; `name` is a static string. "ringkeeperd" until set. */
void rkd_log_set_name(const char *name);

/* "<name>: <message>\n". */
void rkd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* rkd_log, then returns `code`: for the refusals that end a command (`return rkd_log_fail(2,
 * ...)`). */
int rkd_log_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A line as given and "\n": the access log, whose lines start with their time, not the name. */
void rkd_log_raw(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
