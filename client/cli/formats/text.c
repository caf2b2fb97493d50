/* text.c — a text written into memory, and a splice of an input (text.h). */
#include <stdlib.h>

#include "text.h"

FILE *rk_cli_text_open(char **text, size_t *size, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    *text = NULL;
    FILE *f = open_memstream(text, size);
    if (!f)
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
    return f;
}

char *rk_cli_text_close(FILE *f, char **text, int rc, char msg[RK_CLI_FORMAT_MSG_MAX])
{
    if (fclose(f) == 0 && rc == 0)
        return *text;
    if (rc == 0)
        snprintf(msg, RK_CLI_FORMAT_MSG_MAX, "out of memory");
    free(*text);
    return NULL;
}

void rk_cli_splice_copy(rk_cli_splice *s, const char *to)
{
    fwrite(s->at, 1, (size_t)(to - s->at), s->f);
    s->at = to;
}
