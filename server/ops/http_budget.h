/* http_budget.h — bytes the HTTP front holds for its clients (request bodies being buffered, or a
 * response's room in the kernel's send queue), bounded in total and per client address, so that no
 * flood, from one address or from many, takes the server's memory past a figure set at start. The
 * API counts its plan slots with one too (one unit a slot, server/app/rings.c). */
#ifndef RKD_HTTP_BUDGET_H
#define RKD_HTTP_BUDGET_H

#include <stddef.h>

typedef struct rkd_budget rkd_budget;

/* `total` bytes at most, `share` of them for one address at most; `addresses` is how many
 * addresses may hold bytes at once (one per open connection is enough). NULL when out of memory.
 * Free with rkd_budget_free. */
rkd_budget *rkd_budget_new(size_t total, size_t share, size_t addresses);
void rkd_budget_free(rkd_budget *b);

/* Takes `n` bytes for `addr` (a numeric address): 1, or 0 (nothing taken) when that would pass the
 * total or the address's share. */
int rkd_budget_take(rkd_budget *b, const char *addr, size_t n);
/* Gives back `n` bytes that `addr` took. */
void rkd_budget_give(rkd_budget *b, const char *addr, size_t n);
/* Bytes taken now, all addresses together. */
size_t rkd_budget_used(rkd_budget *b);

#endif
