/* api_ring.h — GET /ring with its long poll (api_ring.c): handlers of api.c's route table, each
 * answering c->resp, errors included. Included by api.c and api_ring.c alone: a handler calls only
 * down.
 */
#ifndef RKD_API_RING_H
#define RKD_API_RING_H

#include "app.h"

void rkd_h_ring(rkd_call *c);

#endif
