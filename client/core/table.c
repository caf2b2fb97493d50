/* table.c — table schemes as rings: a scheme that fills a table of slots for every node at once
 * (Maglev) gives one point a slot, owned by the slot's node, at rki_slot_position, so lookups,
 * arcs, shares, fingerprints, plans, pictures and steps follow as they do for ring schemes
 * (scheme.h, rki_scheme.fill). Slots are equal shares of the hash space, up to rounding. */
#include <stdlib.h>

#include "internal.h"

uint64_t rki_slot_position(uint64_t slot, uint64_t slots, unsigned bits)
{
    return (uint64_t)(((unsigned __int128)slot << bits) / slots);
}

int rki_table_points(const rk_topology *t, uint64_t *pos, uint32_t *node)
{
    const rki_scheme *s = rki_topology_scheme(t);
    uint64_t slots = rk_topology_points(t);
    unsigned bits = s->bits(t);
    int rc = s->fill(t, node);
    for (uint64_t k = 0; rc == RK_OK && k < slots; k++)
        pos[k] = rki_slot_position(k, slots, bits);
    return rc;
}
