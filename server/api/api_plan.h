/* api_plan.h — GET /plan: the plan between two versions (api_plan.c): handlers of api.c's route
 * table, each answering c->resp, errors included. Included by api.c and api_plan.c alone: a handler
 * calls only down.
 */
#ifndef RKD_API_PLAN_H
#define RKD_API_PLAN_H

#include "app.h"

void rkd_h_plan(rkd_call *c);

#endif
