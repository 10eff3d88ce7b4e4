/* patch.c: the scene patch document of PATCH /v1/scenes/{id}
 * (docs/server.md, "Patch documents"): change stiffnesses, points and
 * normals of contacts, add and remove contacts, move bodies. Every index
 * and name refers to the scene as it was before the patch; kept contacts
 * keep their order, added ones are appended. A patch applies wholly or not
 * at all. Not a general JSON Patch (RFC 6902) implementation. */
#include "server.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  cm_context_t *ctx;
  const cm_scene_t *old; /* scene before the patch (refs resolve here) */
  cm_scene_t *s;         /* the copy being changed */
  int *cix;              /* contact names of old: hash slots (-1 free), or
                            NULL until a name is first looked up */
  size_t ccap;           /* slots, a power of two */
} cm__pt_t;

/* ---- small readers ----------------------------------------------------------
 */

/* Numbers and arrays of numbers as the scene reader reads them (one
 * reader: io/scene_json.c), with messages "patch: PATH: ...". */
static int cm__pvec(cm__pt_t *p, json_t *v, const char *path, int n,
                    double *out) {
  const char *what = n == 4   ? "a quaternion [w, x, y, z]"
                     : n == 2 ? "[x, y]"
                              : "[x, y, z]";
  return cm__scene_vec_from_json(p->ctx, v, "patch", path, n, out, what);
}

static int cm__pnum(cm__pt_t *p, json_t *v, const char *path, double *out) {
  return cm__scene_num_from_json(p->ctx, v, "patch", path, out);
}

static int cm__pkeys(cm__pt_t *p, json_t *obj, const char *path,
                     const char *const *allowed) {
  if (!json_is_object(obj))
    return CM__ERR(p->ctx, CM_USAGE, path, "%s: expected an object", path);
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    int ok = 0;
    for (int i = 0; allowed[i]; i++)
      ok |= !strcmp(key, allowed[i]);
    if (!ok) {
      char list[256] = "";
      for (int i = 0; allowed[i]; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                 allowed[i]);
      }
      char kp[320];
      snprintf(kp, sizeof kp, "%s.%.64s", path, key);
      return CM__ERR(p->ctx, CM_USAGE, kp, "%s: unknown key (allowed: %s)", kp,
                     list);
    }
  }
  return CM_OK;
}

static size_t cm__pname_hash(const char *s) { /* FNV-1a */
  size_t h = 1469598103934665603ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

/* The first contact of the old scene named name, or -1 (-2: out of
 * memory). The names are hashed once per patch: a patch naming k of n
 * contacts costs O(n + k), not O(n k). */
static int cm__pfind_contact(cm__pt_t *p, const char *name) {
  const cm_scene_t *s = p->old;
  if (!p->cix) {
    size_t cap = 16;
    while (cap < 2 * (size_t)s->ncontacts)
      cap *= 2;
    if (!(p->cix = malloc(cap * sizeof *p->cix)))
      return -2;
    memset(p->cix, 0xff, cap * sizeof *p->cix); /* -1 */
    p->ccap = cap;
    for (int i = 0; i < s->ncontacts; i++) {
      const char *n = cm_scene_contact_name(s, i);
      if (!n)
        continue;
      size_t h = cm__pname_hash(n) & (cap - 1);
      while (p->cix[h] >= 0 && strcmp(cm_scene_contact_name(s, p->cix[h]), n))
        h = (h + 1) & (cap - 1);
      if (p->cix[h] < 0) /* the first of equal names stays */
        p->cix[h] = i;
    }
  }
  size_t h = cm__pname_hash(name) & (p->ccap - 1);
  for (; p->cix[h] >= 0; h = (h + 1) & (p->ccap - 1))
    if (!strcmp(cm_scene_contact_name(s, p->cix[h]), name))
      return p->cix[h];
  return -1;
}

/* A contact (allow_world = -1) or body reference: index or name. */
static int cm__pref(cm__pt_t *p, json_t *v, const char *path, int contact,
                    int allow_world, int *out) {
  int n = contact ? p->old->ncontacts : p->old->nbodies;
  const char *what = contact ? "contact" : "body";
  if (allow_world && (!v || json_is_null(v))) {
    *out = CM_WORLD;
    return CM_OK;
  }
  if (json_is_integer(v)) {
    json_int_t i = json_integer_value(v);
    if (i < 0 || i >= n)
      return CM__ERR(p->ctx, CM_NOT_FOUND, path,
                     "%s: %s index %lld out of "
                     "range (0..%d)",
                     path, what, (long long)i, n - 1);
    *out = (int)i;
    return CM_OK;
  }
  if (json_is_string(v)) {
    int i = contact ? cm__pfind_contact(p, json_string_value(v))
                    : cm_scene_find_body(p->old, json_string_value(v));
    if (i == -2)
      return CM__ERR(p->ctx, CM_NOMEM, path, "out of memory");
    if (i < 0)
      return CM__ERR(p->ctx, CM_NOT_FOUND, path, "%s: no %s named \"%.100s\"",
                     path, what, json_string_value(v));
    *out = i;
    return CM_OK;
  }
  return CM__ERR(p->ctx, CM_USAGE, path, "%s: expected a %s index or name%s",
                 path, what, allow_world ? " (or null for the world)" : "");
}

static void cm__unit(double *v, int n) {
  double s = 0;
  for (int i = 0; i < n; i++)
    s += v[i] * v[i];
  s = sqrt(s);
  if (s > 0 && isfinite(s))
    for (int i = 0; i < n; i++)
      v[i] /= s;
}

/* ---- bodies.set -------------------------------------------------------------
 */

static int cm__set_body(cm__pt_t *p, json_t *e, const char *path) {
  static const char *const keys[] = {"body",        "position", "translate",
                                     "orientation", "mass",     NULL};
  int st = cm__pkeys(p, e, path, keys), i, d = p->s->dim;
  char q[160];
  if (st)
    return st;
  snprintf(q, sizeof q, "%s.body", path);
  if ((st = cm__pref(p, json_object_get(e, "body"), q, 0, 0, &i)))
    return st;
  cm_body_t *b = &p->s->bodies[i];
  json_t *v;
  if ((v = json_object_get(e, "position")) && json_object_get(e, "translate"))
    return CM__ERR(p->ctx, CM_USAGE, path,
                   "%s: give position or translate, "
                   "not both",
                   path);
  if (v) {
    snprintf(q, sizeof q, "%s.position", path);
    if ((st = cm__pvec(p, v, q, d, b->position)))
      return st;
  }
  if ((v = json_object_get(e, "translate"))) {
    double t[3];
    snprintf(q, sizeof q, "%s.translate", path);
    if ((st = cm__pvec(p, v, q, d, t)))
      return st;
    for (int k = 0; k < d; k++)
      b->position[k] += t[k]; /* x += t */
  }
  if ((v = json_object_get(e, "orientation"))) {
    snprintf(q, sizeof q, "%s.orientation", path);
    if (d == 2)
      return CM__ERR(p->ctx, CM_USAGE, q, "%s: not used in 2D", q);
    if ((st = cm__pvec(p, v, q, 4, b->orientation)))
      return st;
    cm__unit(b->orientation, 4);
  }
  if ((v = json_object_get(e, "mass"))) {
    snprintf(q, sizeof q, "%s.mass", path);
    if ((st = cm__pnum(p, v, q, &b->mass)))
      return st;
  }
  return CM_OK;
}

/* ---- contacts.set -----------------------------------------------------------
 */

static int cm__set_contact(cm__pt_t *p, json_t *e, const char *path) {
  static const char *const keys[] = {"contact", "stiffness", "scale",
                                     "point",   "normal",    NULL};
  int st = cm__pkeys(p, e, path, keys), i, d = p->s->dim;
  char q[160];
  if (st)
    return st;
  snprintf(q, sizeof q, "%s.contact", path);
  if ((st = cm__pref(p, json_object_get(e, "contact"), q, 1, 0, &i)))
    return st;
  cm_contact_t *c = &p->s->contacts[i];
  json_t *v;
  if ((v = json_object_get(e, "stiffness")) && json_object_get(e, "scale"))
    return CM__ERR(p->ctx, CM_USAGE, path,
                   "%s: give stiffness or scale, not "
                   "both",
                   path);
  if (v) {
    snprintf(q, sizeof q, "%s.stiffness", path);
    if ((st = cm__pnum(p, v, q, &c->stiffness)))
      return st;
    if (!(c->stiffness > 0))
      return CM__ERR(p->ctx, CM_INVALID_SCENE, q,
                     "%s: must be > 0 (a "
                     "penalty stiffness)",
                     q);
  }
  if ((v = json_object_get(e, "scale"))) {
    double f = 0;
    snprintf(q, sizeof q, "%s.scale", path);
    if ((st = cm__pnum(p, v, q, &f)))
      return st;
    if (!(f > 0))
      return CM__ERR(p->ctx, CM_INVALID_SCENE, q, "%s: must be > 0", q);
    c->stiffness *= f; /* k *= f */
  }
  if ((v = json_object_get(e, "point"))) {
    snprintf(q, sizeof q, "%s.point", path);
    if ((st = cm__pvec(p, v, q, d, c->point)))
      return st;
  }
  if ((v = json_object_get(e, "normal"))) {
    snprintf(q, sizeof q, "%s.normal", path);
    if ((st = cm__pvec(p, v, q, d, c->normal)))
      return st;
    cm__unit(c->normal, d);
  }
  return CM_OK;
}

/* ---- contacts.add: one new contact ------------------------------------------
 */

/* A contact as in the scene format, read by the scene reader; references
 * resolve in the scene before the patch (its bodies are the new scene's). */
static int cm__read_new(cm__pt_t *p, json_t *e, int a, cm_contact_t *c,
                        const char **name) {
  return cm__scene_contact_from_json(p->ctx, p->old, e, "patch", "contacts.add",
                                     a, c, name);
}

/* ---- rebuild with removals and additions -----------------------------------
 */

/* Returns the new scene (kept contacts in order, then added ones) and the
 * old index of each new contact in *from (-1 for added ones). */
static int cm__rebuild(cm__pt_t *p, const char *keep, json_t *add,
                       const cm__server_config_t *cfg, cm_scene_t **out,
                       int **from) {
  const cm_scene_t *s = p->s;
  int kept = 0, nadd = (int)json_array_size(add), st = CM_OK;
  for (int i = 0; i < s->ncontacts; i++)
    kept += keep[i];
  if ((long)kept + nadd > cfg->max_contacts)
    return CM__ERR(p->ctx, CM_LIMIT, "contacts.add",
                   "contacts.add: the "
                   "patched scene would have %d contacts, more than the "
                   "server's limit of %d (--max-contacts)",
                   kept + nadd, cfg->max_contacts);
  cm_scene_t *n = cm_scene_create(s->dim);
  int *map = malloc(((size_t)kept + (size_t)nadd + 1) * sizeof *map);
  if (!n || !map)
    st = CM__ERR(p->ctx, CM_NOMEM, NULL, "out of memory");
  for (int i = 0; !st && i < s->nbodies; i++)
    st = cm_scene_add_body(p->ctx, n, &s->bodies[i], cm_scene_body_name(s, i)) <
                 0
             ? p->ctx->status
             : 0;
  int j = 0;
  for (int i = 0; !st && i < s->ncontacts; i++)
    if (keep[i]) {
      st = cm_scene_add_contact(p->ctx, n, &s->contacts[i],
                                cm_scene_contact_name(s, i)) < 0
               ? p->ctx->status
               : 0;
      map[j++] = i;
    }
  for (int a = 0; !st && a < nadd; a++) {
    cm_contact_t c;
    const char *name = NULL;
    st = cm__read_new(p, json_array_get(add, (size_t)a), a, &c, &name);
    if (!st)
      st = cm_scene_add_contact(p->ctx, n, &c, name) < 0 ? p->ctx->status : 0;
    map[j++] = -1;
  }
  if (!st && s->meta_json && !(n->meta_json = cm__strdup(s->meta_json)))
    st = CM__ERR(p->ctx, CM_NOMEM, NULL, "out of memory");
  if (st) {
    cm_scene_destroy(&n);
    free(map);
    map = NULL;
  }
  *out = n;
  *from = map;
  return st;
}

/* ---- apply ------------------------------------------------------- */

static int cm__each(cm__pt_t *p, json_t *arr, const char *path,
                    int (*fn)(cm__pt_t *, json_t *, const char *)) {
  if (!arr)
    return CM_OK;
  if (!json_is_array(arr))
    return CM__ERR(p->ctx, CM_USAGE, path, "%s: expected an array", path);
  for (size_t i = 0; i < json_array_size(arr); i++) {
    char q[64];
    snprintf(q, sizeof q, "%s[%zu]", path, i);
    int st = fn(p, json_array_get(arr, i), q);
    if (st)
      return st;
  }
  return CM_OK;
}

static int cm__patch_run(cm__pt_t *pp, const json_t *patch,
                         const cm__server_config_t *cfg, cm_scene_t **scene,
                         double **start, json_t **added) {
  static const char *const top[] = {"version", "contacts", "bodies", NULL};
  static const char *const ck[] = {"set", "remove", "add", NULL};
  static const char *const bk[] = {"set", NULL};
  cm_context_t *ctx = pp->ctx;
  json_t *jp = (json_t *)patch;
  *added = NULL;
  int st = cm__pkeys(pp, jp, "(patch)", top);
  json_t *jc = json_object_get(jp, "contacts");
  json_t *jb = json_object_get(jp, "bodies");
  if (!st && jc)
    st = cm__pkeys(pp, jc, "contacts", ck);
  if (!st && jb)
    st = cm__pkeys(pp, jb, "bodies", bk);
  json_t *rm = json_object_get(jc, "remove"), *add = json_object_get(jc, "add");
  if (!st && rm && !json_is_array(rm))
    st = CM__ERR(ctx, CM_USAGE, "contacts.remove",
                 "contacts.remove: expected "
                 "an array of contact indices or names");
  if (!st && add && !json_is_array(add))
    st = CM__ERR(ctx, CM_USAGE, "contacts.add",
                 "contacts.add: expected an "
                 "array of contacts (as in the scene format)");
  if (st)
    return st;

  /* ---- in-place changes on a copy ---- */
  if (!(pp->s = cm_scene_copy(*scene)))
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  st = cm__each(pp, json_object_get(jb, "set"), "bodies.set", cm__set_body);
  if (!st)
    st = cm__each(pp, json_object_get(jc, "set"), "contacts.set",
                  cm__set_contact);

  /* ---- removals and additions ---- */
  cm_scene_t *next = pp->s;
  int *from = NULL, nold = (*scene)->ncontacts;
  char *keep = NULL;
  if (!st && (rm || add)) {
    keep = malloc((size_t)nold + 1);
    if (!keep)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    else
      memset(keep, 1, (size_t)nold + 1);
    for (size_t r = 0; !st && r < json_array_size(rm); r++) {
      char q[64];
      int i;
      snprintf(q, sizeof q, "contacts.remove[%zu]", r);
      st = cm__pref(pp, json_array_get(rm, r), q, 1, 0, &i);
      if (!st && !keep[i])
        st = CM__ERR(ctx, CM_CONFLICT, q,
                     "%s: contact %d is already removed "
                     "by this patch",
                     q, i);
      if (!st)
        keep[i] = 0;
    }
    if (!st)
      st = cm__rebuild(pp, keep, add ? add : NULL, cfg, &next, &from);
    if (!st)
      cm_scene_destroy(&pp->s);
  }
  if (!st && next->ncontacts > cfg->max_contacts)
    st = CM__ERR(ctx, CM_LIMIT, "contacts",
                 "contacts: %d contacts, more than "
                 "the server's limit of %d",
                 next->ncontacts, cfg->max_contacts);
  if (!st)
    st = cm_scene_validate(ctx, next);

  /* ---- the warm start follows the contacts; added ones start at 0 ---- */
  double *ns = NULL;
  if (!st && start && *start) {
    ns = calloc((size_t)next->ncontacts + 1, sizeof *ns);
    if (!ns)
      st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    for (int j = 0; !st && j < next->ncontacts; j++) {
      int i = from ? from[j] : j;
      ns[j] = i >= 0 ? (*start)[i] : 0.0;
    }
  }
  if (!st) {
    *added = json_array();
    for (int j = 0; from && j < next->ncontacts; j++)
      if (from[j] < 0)
        json_array_append_new(*added, json_integer(j));
  }

  /* ---- commit or roll back ---- */
  free(keep);
  free(from);
  if (st) {
    if (next != pp->s)
      cm_scene_destroy(&next);
    cm_scene_destroy(&pp->s);
    free(ns);
    return st;
  }
  cm_scene_destroy(scene);
  *scene = next;
  if (start && *start) {
    free(*start);
    *start = ns;
  }
  return CM_OK;
}

int cm__patch_apply(cm_context_t *ctx, const json_t *patch,
                    const cm__server_config_t *cfg, cm_scene_t **scene,
                    double **start, json_t **added) {
  cm__pt_t p = {ctx, *scene, NULL, NULL, 0};
  int st = cm__patch_run(&p, patch, cfg, scene, start, added);
  free(p.cix);
  return st;
}
