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
    /* rki_slot_position(k, ...) = k x q + (k x r) / slots, q and r those of 2^bits / slots: a sum
     * and a remainder carried from slot to slot, exact, where a 128-bit division per slot was a
     * tenth of a Maglev build. */
    unsigned __int128 span = (unsigned __int128)1 << bits;
    uint64_t q = (uint64_t)(span / slots), r = (uint64_t)(span % slots), p = 0, carried = 0;
    for (uint64_t k = 0; rc == RK_OK && k < slots; k++) {
        pos[k] = p;
        p += q, carried += r;
        if (carried >= slots)
            p++, carried -= slots;
    }
    return rc;
}
