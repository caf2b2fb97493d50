/* text.h — what the formats share to write a configuration: a text written with stdio into memory,
 * and a splice, the input copied up to each edit as a part's servers are rewritten in place. */
#ifndef RK_CLI_FORMAT_TEXT_H
#define RK_CLI_FORMAT_TEXT_H

#include <stdio.h>

#include "format.h"

/* A stream writing into *text (size bytes), or NULL with "out of memory" in msg. */
FILE *rk_cli_text_open(char **text, size_t *size, char msg[RK_CLI_FORMAT_MSG_MAX]);

/* The text written to f, which is closed here, at *text: NULL (freed) when rc says a step failed
 * (msg set) or writing it failed ("out of memory" in msg). */
char *rk_cli_text_close(FILE *f, char **text, int rc, char msg[RK_CLI_FORMAT_MSG_MAX]);

/* The rewritten text as it is written: f has the input [text, at), then the edits. */
typedef struct rk_cli_splice {
    FILE *f;
    const char *text, *at, *end; /* the input, how far it is copied, its end */
    char *msg;
} rk_cli_splice;

/* Copies the input from s->at up to `to` into s->f. */
void rk_cli_splice_copy(rk_cli_splice *s, const char *to);

#endif
