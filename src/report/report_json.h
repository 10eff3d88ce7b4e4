/* report_json.h: the report as a jansson tree, for the server to embed. */
#ifndef CM_REPORT_JSON_H
#define CM_REPORT_JSON_H

#include "cmodes.h"
#include <jansson.h>

/* New reference (caller decrefs), or NULL when out of memory. */
json_t *cm__report_json(const cm_report_t *r, int flags);

#endif
