/* api_picture.h — a version's ring as the console draws it: its picture and the arc at a hash value
 * (api_picture.c): handlers of api.c's route table, each answering c->resp, errors included.
 * Included by api.c and api_picture.c alone: a handler calls only down.
 */
#ifndef RKD_API_PICTURE_H
#define RKD_API_PICTURE_H

#include "app.h"

void rkd_h_picture(rkd_call *c);
void rkd_h_arc(rkd_call *c);

#endif
