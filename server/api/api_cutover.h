/* api_cutover.h — the cutover routes: the policy, approvals, events, the finish of a migration
 * window (api_cutover.c): handlers of api.c's route table, each answering c->resp, errors included.
 * Included by api.c and api_cutover.c alone: a handler calls only down.
 */
#ifndef RKD_API_CUTOVER_H
#define RKD_API_CUTOVER_H

#include "app.h"

void rkd_h_get_policy(rkd_call *c);
void rkd_h_put_policy(rkd_call *c);
void rkd_h_approve(rkd_call *c);
void rkd_h_events(rkd_call *c);
void rkd_h_finish(rkd_call *c);

#endif
