/* keylist.c — a list of keys that stops growing at RKM_LIST_MAX entries (keylist.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keylist.h"

void rkm_keylist_init(rkm_keylist *l)
{
    l->items = NULL;
    l->n = 0;
}

void rkm_keylist_deinit(rkm_keylist *l)
{
    free(l->items);
    rkm_keylist_init(l);
}

int rkm_keylist_add(rkm_keylist *l, const char *key, size_t len, int64_t number, const char *note,
                    rk_error *err)
{
    if (l->n == RKM_LIST_MAX)
        return RK_OK;
    if (!l->items)
        l->items = malloc(RKM_LIST_MAX * sizeof *l->items);
    if (!l->items)
        return rk_error_set(err, RK_ENOMEM, NULL, "out of memory for a list of keys");
    rkm_listed *e = &l->items[l->n++];
    e->full_len = len;
    e->len = len < RKM_LIST_KEY_MAX ? len : RKM_LIST_KEY_MAX;
    memcpy(e->key, key, e->len);
    e->number = number;
    snprintf(e->note, sizeof e->note, "%s", note ? note : "");
    return RK_OK;
}

void rkm_keylist_truncate(rkm_keylist *l, size_t n)
{
    l->n = n < l->n ? n : l->n;
}
