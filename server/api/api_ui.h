/* api_ui.h — the operator console's files (api_ui.c): handlers of api.c's route table, each
 * answering c->resp, errors included. Included by api.c and api_ui.c alone: a handler calls only
 * down.
 */
#ifndef RKD_API_UI_H
#define RKD_API_UI_H

#include "app.h"

void rkd_h_ui_redirect(rkd_call *c);
void rkd_h_ui_file(rkd_call *c);

#endif
