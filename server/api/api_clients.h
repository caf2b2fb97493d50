/* api_clients.h — GET /clients: the fleet of a cluster (api_clients.c): handlers of api.c's route
 * table, each answering c->resp, errors included. Included by api.c and api_clients.c alone: a
 * handler calls only down.
 */
#ifndef RKD_API_CLIENTS_H
#define RKD_API_CLIENTS_H

#include "app.h"

void rkd_h_clients(rkd_call *c);

#endif
