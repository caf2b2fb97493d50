/* api_rollouts.h — the rollout's routes (api_rollouts.c): handlers of api.c's route table, each
 * answering c->resp, errors included. Included by api.c and api_rollouts.c alone: a handler calls
 * only down.
 */
#ifndef RKD_API_ROLLOUTS_H
#define RKD_API_ROLLOUTS_H

#include "app.h"

void rkd_h_rollout_create(rkd_call *c);
void rkd_h_rollouts(rkd_call *c);
void rkd_h_rollout(rkd_call *c);
void rkd_h_rollout_approve(rkd_call *c);
void rkd_h_rollout_start(rkd_call *c);
void rkd_h_rollout_pause(rkd_call *c);
void rkd_h_rollout_resume(rkd_call *c);
void rkd_h_rollout_abort(rkd_call *c);

#endif
