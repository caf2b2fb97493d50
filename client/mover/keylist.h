/* keylist.h — a bounded list of keys with a number and a note each: the keys a copy skipped
 * (with their sizes), the keys that failed (with the error), the keys verify found different (with
 * the reason). The first RKM_LIST_MAX are kept; counters elsewhere count them all.
 * Nothing here is shared between threads. */
#ifndef RKM_KEYLIST_H
#define RKM_KEYLIST_H

#include <stddef.h>
#include <stdint.h>

#include "ringkeeper.h"

#define RKM_LIST_MAX     100 /* entries a list keeps */
#define RKM_LIST_KEY_MAX 250 /* bytes of a key kept (memcached's longest); a longer one is cut */
#define RKM_NOTE_MAX     RK_ERROR_MESSAGE_MAX

typedef struct rkm_listed {
    char key[RKM_LIST_KEY_MAX]; /* its first bytes: any byte, NUL included */
    size_t len;                 /* bytes of key kept */
    size_t full_len;            /* bytes of the whole key */
    int64_t number;             /* skipped: the value's size; failed: the rk_status; verify: the
                                   reason, an rkm_mismatch */
    char note[RKM_NOTE_MAX];    /* failed: the error message; else "" */
} rkm_listed;

/* Storage the caller owns: rkm_keylist_init before the first use, rkm_keylist_deinit after. */
typedef struct rkm_keylist {
    rkm_listed *items; /* private: malloc'd at the first add, RKM_LIST_MAX entries */
    size_t n;          /* entries kept, at most RKM_LIST_MAX */
} rkm_keylist;

void rkm_keylist_init(rkm_keylist *l);
void rkm_keylist_deinit(rkm_keylist *l);

/* Keeps a copy of `key` with `number` and `note` (NULL: "") while there is room; RK_OK also when
 * the list is full (the key is counted, not kept), RK_ENOMEM when the first entry finds none. */
int rkm_keylist_add(rkm_keylist *l, const char *key, size_t len, int64_t number, const char *note,
                    rk_error *err);

/* Forgets the entries after the first `n` (a batch is done again). */
void rkm_keylist_truncate(rkm_keylist *l, size_t n);

#endif
