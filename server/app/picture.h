/* picture.h — rings and plans as the console draws them (picture.c), computed by the library
 * (rk_ring_picture, rk_plan_picture, rk_ring_arc_at): the documents of GET .../picture, .../arc
 * and GET /plan?format=picture. Each returns a new reference the caller owns, or NULL when out of
 * memory.
 */
#ifndef RKD_PICTURE_H
#define RKD_PICTURE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ringkeeper.h"

#define RKD_PICTURE_BINS     2880 /* bins of a picture by default: an eighth of a degree */
#define RKD_PICTURE_MIN_BINS 360  /* ... at least (a degree) */
#define RKD_PICTURE_MAX_BINS 4096 /* ... at most, which bounds a picture's size and work */

/* The three circles of plan p (before, moving, after) in `bins` bins, run-length encoded, with the
 * nodes drawn; rings[0] and rings[1] are the rings p was made from. New reference, or NULL when
 * out of memory. */
json_t *rkd_plan_picture_json(const rk_plan *p, const rk_plan_meta *meta, const rk_ring *rings[2],
                              size_t bins);

/* The picture document of ring `r`, version `version` of `cluster`, in `bins` bins: the runs of
 * bins by node rank, and the nodes drawn with their share. */
json_t *rkd_ring_picture_json(const char *cluster, int64_t version, const rk_ring *r, size_t bins);

/* The arc document of hash value `h` on ring `r`: the value asked (at), first and last
 * (inclusive, 16 hex digits as plan arcs have them; first > last when it wraps past the top of the
 * space), owner and its rank (its colour), the arc's fraction and the owner's share of the ring. */
json_t *rkd_ring_arc_json(const char *cluster, int64_t version, const rk_ring *r, uint64_t h);

#endif
