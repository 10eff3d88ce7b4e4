/* jcheck.h: JSON output that is never silently short. Included after
 * <jansson.h> by files that build a JSON document member by member: a
 * json_object_set_new or json_array_append_new that fails (its value is
 * NULL because an allocation failed, or its own allocation fails) sets
 * the thread's cm__jbad, so the builder can refuse the whole document
 * (out of memory) instead of emitting one with a member missing. Reset
 * cm__jbad before building, test it after. */
#ifndef CM_JCHECK_H
#define CM_JCHECK_H

#include <jansson.h>

extern _Thread_local int cm__jbad;

static inline int cm__jset(json_t *o, const char *key, json_t *v) {
  int r = (json_object_set_new)(o, key, v);
  if (r)
    cm__jbad = 1;
  return r;
}

static inline int cm__japp(json_t *a, json_t *v) {
  int r = (json_array_append_new)(a, v);
  if (r)
    cm__jbad = 1;
  return r;
}

/* json_dumps through json_dump_callback into a buffer of our own: NULL
 * when any allocation fails (jansson 2.14's json_dumps can return a text
 * with a key missing when one of its buffer allocations fails). */
char *cm__json_dumps(const json_t *j, size_t flags);

#define json_object_set_new(o, key, v) cm__jset((o), (key), (v))
#define json_dumps(j, flags) cm__json_dumps((j), (flags))
#define json_array_append_new(a, v) cm__japp((a), (v))

#endif
