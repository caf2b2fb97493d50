/* api_versions.h — the version routes: publish, list, get, activate, revert (api_versions.c):
 * handlers of api.c's route table, each answering c->resp, errors included. Included by api.c and
 * api_versions.c alone: a handler calls only down.
 */
#ifndef RKD_API_VERSIONS_H
#define RKD_API_VERSIONS_H

#include "app.h"

void rkd_h_publish(rkd_call *c);
void rkd_h_list_versions(rkd_call *c);
void rkd_h_get_version(rkd_call *c);
void rkd_h_activate(rkd_call *c);
void rkd_h_revert(rkd_call *c);

#endif
