/* api_load.h — the load profile's routes (api_load.c): handlers of api.c's route table, each
 * answering c->resp, errors included. Included by api.c and api_load.c alone: a handler calls
 * only down.
 */
#ifndef RKD_API_LOAD_H
#define RKD_API_LOAD_H

#include "app.h"

void rkd_h_get_load(rkd_call *c);
void rkd_h_put_load(rkd_call *c);

#endif
