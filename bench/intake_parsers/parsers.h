/* parsers.h: the other JSON parsers of bench_intake's table (issue #17):
 * yajl's streaming callbacks (C) and simdjson's On-Demand API (C++ behind
 * this C interface). Built only when pkg-config finds both (bench/
 * CMakeLists.txt); the library and the tests never use them.
 *
 * Two modes each:
 *   CM_BENCH_WALK  parse, visit every value, convert every number to a
 *                  double (summed into *sum so the work is kept): the least
 *                  any reader of a scene does;
 *   CM_BENCH_SCENE the same and the conversion into a cm_scene_t through
 *                  the public API (cm_scene_add_body / add_contact, then
 *                  cm_scene_validate), for the keys the generated piles use
 *                  (top-level dim; bodies: fixed, mass, position, inertia,
 *                  orientation; contacts: a, b, point, normal, stiffness).
 *                  Other keys are skipped. No messages with line and column,
 *                  no duplicate-key or type checks: a lower bound on what a
 *                  full reader of docs/scene-format.md would cost.
 * text must have len + 64 readable bytes (simdjson's padding). 0 on
 * success. */
#ifndef CM_BENCH_PARSERS_H
#define CM_BENCH_PARSERS_H

#include "cmodes.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { CM_BENCH_WALK = 0, CM_BENCH_SCENE = 1 };
#define CM_BENCH_PADDING 64

int cm_bench_yajl(const char *text, size_t len, int mode, double *sum,
                  cm_scene_t **out);
int cm_bench_simdjson(const char *text, size_t len, int mode, double *sum,
                      cm_scene_t **out);

#ifdef __cplusplus
}
#endif

#endif
