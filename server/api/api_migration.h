/* api_migration.h — the migration job's routes (api_migration.c): handlers of api.c's route table,
 * each answering c->resp, errors included. Included by api.c and api_migration.c alone: a handler
 * calls only down.
 */
#ifndef RKD_API_MIGRATION_H
#define RKD_API_MIGRATION_H

#include "app.h"

void rkd_h_migration(rkd_call *c);
void rkd_h_migration_start(rkd_call *c);
void rkd_h_migration_claim(rkd_call *c);
void rkd_h_migration_progress(rkd_call *c);
void rkd_h_migration_throttle(rkd_call *c);
void rkd_h_migration_pause(rkd_call *c);
void rkd_h_migration_resume(rkd_call *c);
void rkd_h_migration_cancel(rkd_call *c);

#endif
