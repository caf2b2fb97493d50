/* api_changes.h — GET /changes: the cluster's change counter, long-polled (api_changes.c): handlers
 * of api.c's route table, each answering c->resp, errors included. Included by api.c and
 * api_changes.c alone: a handler calls only down.
 */
#ifndef RKD_API_CHANGES_H
#define RKD_API_CHANGES_H

#include "app.h"

void rkd_h_changes(rkd_call *c);

#endif
