/* http_budget.c — a byte budget with a share per address: one mutex over an open-addressing table
 * of the addresses holding bytes now (an address holding none is removed, so the table never
 * holds more than the open connections). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http_budget.h"

typedef struct slot {
    char addr[64]; /* "" when the slot is free */
    size_t bytes;
} slot;

struct rkd_budget {
    pthread_mutex_t mu;
    size_t total, share, used;
    size_t mask; /* slots - 1: the table's size is a power of two, twice the addresses or more */
    slot *slots;
};

rkd_budget *rkd_budget_new(size_t total, size_t share, size_t addresses)
{
    rkd_budget *b = calloc(1, sizeof *b);
    size_t n = 16;
    while (n < 2 * addresses)
        n *= 2;
    if (b)
        b->slots = calloc(n, sizeof *b->slots);
    if (!b || !b->slots) {
        free(b);
        return NULL;
    }
    pthread_mutex_init(&b->mu, NULL);
    b->total = total, b->share = share, b->mask = n - 1;
    return b;
}

void rkd_budget_free(rkd_budget *b)
{
    if (!b)
        return;
    pthread_mutex_destroy(&b->mu);
    free(b->slots);
    free(b);
}

static size_t hash(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return (size_t)h;
}

/* The slot of `addr`, or the free slot where it would go; NULL when the table is full. */
static slot *find(rkd_budget *b, const char *addr)
{
    for (size_t i = hash(addr), tries = 0; tries <= b->mask; i++, tries++) {
        slot *s = &b->slots[i & b->mask];
        if (!s->addr[0] || strcmp(s->addr, addr) == 0)
            return s;
    }
    return NULL;
}

/* Frees `s` and moves back any later slot of its run that now sits past its home (linear probing's
 * deletion), so that find still reaches every address. */
static void remove_slot(rkd_budget *b, slot *s)
{
    size_t hole = (size_t)(s - b->slots);
    for (size_t i = (hole + 1) & b->mask; b->slots[i].addr[0]; i = (i + 1) & b->mask) {
        size_t home = hash(b->slots[i].addr) & b->mask;
        if (((i - home) & b->mask) >= ((i - hole) & b->mask)) {
            b->slots[hole] = b->slots[i];
            hole = i;
        }
    }
    b->slots[hole].addr[0] = '\0';
    b->slots[hole].bytes = 0;
}

int rkd_budget_take(rkd_budget *b, const char *addr, size_t n)
{
    if (n == 0)
        return 1; /* and no slot for an address that holds nothing */
    pthread_mutex_lock(&b->mu);
    slot *s = b->used + n <= b->total ? find(b, addr) : NULL;
    int ok = s && s->bytes + n <= b->share;
    if (ok) {
        if (!s->addr[0])
            strncpy(s->addr, addr, sizeof s->addr - 1);
        s->bytes += n;
        b->used += n;
    }
    pthread_mutex_unlock(&b->mu);
    return ok;
}

void rkd_budget_give(rkd_budget *b, const char *addr, size_t n)
{
    if (n == 0)
        return;
    pthread_mutex_lock(&b->mu);
    slot *s = find(b, addr);
    if (s && s->addr[0]) {
        size_t back = n < s->bytes ? n : s->bytes;
        s->bytes -= back;
        b->used -= back;
        if (s->bytes == 0)
            remove_slot(b, s);
    }
    pthread_mutex_unlock(&b->mu);
}

size_t rkd_budget_used(rkd_budget *b)
{
    pthread_mutex_lock(&b->mu);
    size_t used = b->used;
    pthread_mutex_unlock(&b->mu);
    return used;
}
