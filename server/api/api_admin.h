/* api_admin.h — the operational routes: liveness, readiness, metrics and the cluster list
 * (api_admin.c): handlers of api.c's route table, each answering c->resp, errors included. Included
 * by api.c and api_admin.c alone: a handler calls only down.
 */
#ifndef RKD_API_ADMIN_H
#define RKD_API_ADMIN_H

#include "app.h"

void rkd_h_healthz(rkd_call *c);
void rkd_h_readyz(rkd_call *c);
void rkd_h_metrics(rkd_call *c);
void rkd_h_clusters(rkd_call *c);

#endif
