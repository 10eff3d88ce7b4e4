/* scene_stream.c: the JSON scene reader that streams: one pass over the
 * text with the pull reader (json_pull.c), each body and contact checked and
 * added to the scene as soon as its object closes, no tree. Syntax errors
 * anywhere come first and read as jansson's; the other errors come in the
 * order of the format's checks (top-level keys, format, version, timestep,
 * dim, the arrays' types, bodies, contacts, name, validation) whatever the
 * order of the keys in the file, as the tree reader gives them. Limits on
 * nesting, bodies and contacts stop the reading as soon as they are passed
 * (cm__scene_limits_t, core/internal.h). Not for other formats. */
#include "io/scene_json_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The rank of an error: the lowest found wins (the tree reader's order). */
enum {
  CM__R_ROOT,     /* the document is not an object */
  CM__R_KEYS,     /* an unknown top-level key */
  CM__R_HEAD,     /* format, version, timestep, dim */
  CM__R_TYPES,    /* bodies or contacts not an array */
  CM__R_BODY,     /* the first body with an error */
  CM__R_CONTACT,  /* the first contact with an error */
  CM__R_NONE = 99 /* no error */
};

/* Where an array of bodies or contacts stands. */
enum { CM__A_NONE, CM__A_DONE, CM__A_DEFERRED, CM__A_FAILED };

typedef struct {
  cm__rd_t rd;       /* rd.ctx is tmp: checks write there */
  cm_context_t tmp;  /* the last check's error */
  cm_context_t pend; /* the best error so far (pend_rank) */
  int pend_rank;
  cm_context_t stop; /* a limit or out of memory: reading stopped */
  int stop_st;
  cm__jp_t *jp;
  const cm__scene_limits_t *lim;
  cm__rec_t root; /* the top-level scalars */
  unsigned root_seen;
  cm__rec_t rec; /* the body or contact being read */
  cm_scene_t *s; /* created once dim is known */
  int state[2];  /* bodies, contacts: CM__A_* */
  size_t at[2];  /* a deferred array's first token */
  int depth[2];  /* ... and the depth there */
  char *meta;    /* the top-level meta, compact */
} cm__sr_t;

static void cm__sr_note(cm__sr_t *r, int rank, int st) {
  if (st == CM_NOMEM && !r->stop_st) {
    r->stop = r->tmp;
    r->stop_st = CM_NOMEM;
  } else if (rank < r->pend_rank) {
    r->pend = r->tmp;
    r->pend_rank = rank;
  }
}

static int cm__sr_stop(cm__sr_t *r, int st, const char *path, const char *msg) {
  if (!r->stop_st) {
    CM__ERR(&r->stop, st, path, "%s", msg);
    r->stop_st = st;
  }
  return -1;
}

/* The key's index among keys, or -1 (lengths compared first). */
static int cm__sr_key(const char *const *keys, const char *k, size_t n) {
  for (int i = 0; keys[i]; i++)
    if (keys[i][0] == k[0] && strlen(keys[i]) == n && !memcmp(keys[i], k, n))
      return i;
  return -1;
}

/* Reads the key of an object member at the current token (checked as
 * jansson does) and the colon after it; returns its index among keys, -1
 * for an unknown key (its decoded text kept at *unk_off in the scratch),
 * -2 after an error. seen: the known keys so far; unk: the unknown ones. */
static int cm__sr_member(cm__sr_t *r, const char *const *keys, unsigned *seen,
                         cm__jkeys_t *unk, size_t *unk_off) {
  cm__jp_t *jp = r->jp;
  if (jp->token != CM__JT_STR) {
    cm__jp_fail(jp, "string or '}' expected");
    return -2;
  }
  const char *key = jp->sb + jp->soff;
  if (memchr(key, 0, jp->slen)) {
    cm__jp_fail(jp, "NUL byte in object key not supported");
    return -2;
  }
  int k = cm__sr_key(keys, key, jp->slen), dup;
  if (k >= 0) {
    dup = *seen >> k & 1u;
    *seen |= 1u << k;
    jp->sused = jp->soff; /* a known key needs no room */
  } else {
    dup = cm__jkeys_seen(jp, unk, jp->soff, jp->slen);
    *unk_off = jp->soff;
  }
  if (dup) {
    cm__jp_fail(jp, dup > 0 ? "duplicate object key" : "out of memory");
    return -2;
  }
  if (cm__jp_scan(jp) != ':') {
    cm__jp_fail(jp, "':' expected");
    return -2;
  }
  cm__jp_scan(jp);
  return k;
}

/* After a member's value: 1 if another member follows, 0 at the end of the
 * object, -1 after an error. */
static int cm__sr_next(cm__jp_t *jp) {
  if (cm__jp_scan(jp) == ',') {
    cm__jp_scan(jp);
    return 1;
  }
  if (jp->token != '}') {
    cm__jp_fail(jp, "'}' expected");
    return -1;
  }
  return 0;
}

/* An object of a body or a contact into r->rec (current token '{'). The
 * strings captured stay in the scratch until the caller resets it. */
static int cm__sr_record(cm__sr_t *r, const char *const *keys, int meta) {
  cm__jp_t *jp = r->jp;
  cm__rec_t *rec = &r->rec;
  cm__jkeys_t unk = {NULL, 0, 0};
  unsigned seen = 0;
  size_t unk_first = (size_t)-1, unk_off = 0;
  rec->present = 0;
  rec->unknown = NULL;
  if (cm__jp_value_start(jp))
    return -1;
  int more = cm__jp_scan(jp) != '}';
  while (more > 0) {
    int k = cm__sr_member(r, keys, &seen, &unk, &unk_off);
    if (k == -2)
      break;
    if (k == -1 && unk_first == (size_t)-1)
      unk_first = unk_off;
    cm__jv_t *v = k >= 0 && k != meta ? &rec->v[k] : NULL;
    if (cm__jp_value(jp, v))
      break;
    if (v)
      rec->present |= 1u << k;
    more = cm__sr_next(jp);
  }
  free(unk.off);
  if (jp->err)
    return -1;
  jp->depth--;
  for (int k = 0; keys[k]; k++)
    if ((rec->present >> k & 1u) && rec->v[k].kind == CM__JV_STR)
      rec->v[k].str = jp->sb + rec->v[k].soff;
  if (unk_first != (size_t)-1)
    rec->unknown = jp->sb + unk_first;
  return 0;
}

/* Checks the record of element i and adds it to the scene. */
static int cm__sr_add(cm__sr_t *r, int contacts, int i) {
  if (!contacts)
    return cm__rec_body(&r->rd, r->s, &r->rec, i);
  cm_contact_t c;
  const char *name = NULL;
  int st = cm__rec_contact(&r->rd, r->s, &r->rec, "contacts", i, &c, &name);
  if (!st && (st = cm_scene_add_contact(r->rd.ctx, r->s, &c, name)) > 0)
    st = CM_OK;
  return st;
}

/* The array of bodies or contacts (current token '['): each element is
 * read, checked and added; after the first error the rest is only
 * parsed. */
static int cm__sr_array(cm__sr_t *r, int contacts) {
  cm__jp_t *jp = r->jp;
  const char *arr = contacts ? "contacts" : "bodies";
  long max = !r->lim ? 0 : contacts ? r->lim->max_contacts : r->lim->max_bodies;
  int failed = 0, i = 0;
  if (cm__jp_value_start(jp))
    return -1;
  if (cm__jp_scan(jp) != ']') {
    for (; jp->token != CM__JT_EOF; i++) {
      if (max > 0 && i >= max) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s: more than %s of %ld %s%s", arr,
                 r->lim->who ? r->lim->who : "the limit", max, arr,
                 (contacts ? r->lim->hint_contacts : r->lim->hint_bodies)
                     ? (contacts ? r->lim->hint_contacts : r->lim->hint_bodies)
                     : "");
        return cm__sr_stop(r, CM_LIMIT, arr, msg);
      }
      size_t mark = jp->sused;
      if (failed || jp->token != '{') {
        if (!failed) {
          char path[40];
          snprintf(path, sizeof path, "%s[%d]", arr, i);
          cm__sr_note(
              r, CM__R_BODY + contacts,
              cm__scene_bad(&r->rd, path, "expected an object%s", NULL));
          failed = 1;
        }
        if (cm__jp_value(jp, NULL))
          return -1;
      } else {
        if (cm__sr_record(r, contacts ? cm__contact_keys : cm__body_keys,
                          contacts ? CM__CK_META : CM__BK_META))
          return -1;
        int st = cm__sr_add(r, contacts, i);
        if (st) {
          cm__sr_note(r, CM__R_BODY + contacts, st);
          failed = 1;
          if (r->stop_st)
            return -1;
        }
      }
      jp->sused = mark;
      if (cm__jp_scan(jp) != ',')
        break;
      cm__jp_scan(jp);
    }
  }
  if (cm__jp_array_end(jp))
    return -1;
  r->state[contacts] = failed ? CM__A_FAILED : CM__A_DONE;
  return 0;
}

/* A top-level integer already read and within [lo, hi], or 0. */
static int cm__sr_int(const cm__sr_t *r, int k, int lo, int hi) {
  const cm__jv_t *v = &r->root.v[k];
  if (!(r->root.present >> k & 1u) || v->kind != CM__JV_INT || v->ival < lo ||
      v->ival > hi)
    return 0;
  return (int)v->ival;
}

/* The value of "bodies" or "contacts": read now when what it needs is
 * known (dim; for contacts the version and every body), else deferred to
 * the end of the document; not an array: only parsed (an error later). */
static int cm__sr_arrays_key(cm__sr_t *r, int contacts) {
  cm__jp_t *jp = r->jp;
  int k = contacts ? CM__RK_CONTACTS : CM__RK_BODIES;
  r->root.present |= 1u << k;
  r->root.v[k].kind = jp->token == '[' ? CM__JV_ARR : CM__JV_OBJ;
  if (jp->token != '[')
    return cm__jp_value(jp, NULL);
  int dim = cm__sr_int(r, CM__RK_DIM, 2, 3);
  int version = cm__sr_int(r, CM__RK_VERSION, 1, 2);
  int ready = dim && (!contacts || (version && r->state[0] == CM__A_DONE));
  if (ready && r->pend_rank > CM__R_TYPES) {
    if (!r->s && !(r->s = cm_scene_create(dim)))
      return cm__sr_stop(r, CM_NOMEM, NULL, "out of memory");
    r->rd.version = version ? version : 1;
    return cm__sr_array(r, contacts);
  }
  r->state[contacts] = CM__A_DEFERRED;
  r->at[contacts] = jp->tok;
  r->depth[contacts] = jp->depth;
  return cm__jp_value(jp, NULL);
}

/* The scene object (current token '{'). */
static int cm__sr_object(cm__sr_t *r) {
  cm__jp_t *jp = r->jp;
  cm__jkeys_t unk = {NULL, 0, 0};
  size_t unk_off = 0;
  int more, st = 0;
  if (cm__jp_value_start(jp))
    return -1;
  more = cm__jp_scan(jp) != '}';
  while (more > 0 && !st) {
    int k = cm__sr_member(r, cm__root_keys, &r->root_seen, &unk, &unk_off);
    if (k == -2)
      break;
    if (k == -1 && r->pend_rank > CM__R_KEYS) {
      cm__rec_t u = {0, jp->sb + unk_off, {{0}}};
      cm__sr_note(r, CM__R_KEYS,
                  cm__rec_keys(&r->rd, &u, NULL, -1, cm__root_keys));
    }
    if (k == CM__RK_BODIES || k == CM__RK_CONTACTS) {
      st = cm__sr_arrays_key(r, k == CM__RK_CONTACTS);
    } else if (k == CM__RK_META) {
      st = cm__jp_emit_value(jp);
      if (!st && !(r->meta = cm__strdup(jp->emit)))
        st = cm__sr_stop(r, CM_NOMEM, NULL, "out of memory");
    } else if (k >= 0) {
      st = cm__jp_value(jp, &r->root.v[k]);
      r->root.present |= 1u << k;
    } else {
      st = cm__jp_value(jp, NULL);
    }
    if (!st)
      more = cm__sr_next(jp);
  }
  free(unk.off);
  if (jp->err || st)
    return -1;
  jp->depth--;
  return 0;
}

/* Points the top-level strings into the scratch, which moves as it grows:
 * before each use. */
static void cm__sr_root_strings(cm__sr_t *r) {
  for (int k = 0; k < CM__RK_N; k++)
    if ((r->root.present >> k & 1u) && r->root.v[k].kind == CM__JV_STR)
      r->root.v[k].str = r->jp->sb + r->root.v[k].soff;
}

/* A deferred array, read now that the whole document is known valid. */
static int cm__sr_deferred(cm__sr_t *r, int contacts) {
  cm__jp_t *jp = r->jp;
  jp->pos = r->at[contacts];
  jp->depth = r->depth[contacts];
  cm__jp_scan(jp);
  int st = cm__sr_array(r, contacts);
  if (st && !r->stop_st && jp->err) /* cannot happen: parsed once already */
    return cm__sr_stop(r, CM_INTERNAL, NULL, "scene reader: lost its place");
  return st;
}

/* After the document: the errors in the tree reader's order, the deferred
 * arrays, the name, the meta and the validation. */
static int cm__sr_finish(cm__sr_t *r) {
  if (r->pend_rank <= CM__R_KEYS)
    return -1;
  int dim, st;
  double timestep;
  cm__sr_root_strings(r);
  if ((st = cm__rec_root_head(&r->rd, &r->root, &dim, &timestep))) {
    cm__sr_note(r, CM__R_HEAD, st);
    return -1;
  }
  unsigned p = r->root.present;
  if (!(p >> CM__RK_BODIES & 1u) || r->root.v[CM__RK_BODIES].kind != CM__JV_ARR)
    st = cm__scene_bad(&r->rd, "bodies", "expected an array of bodies%s", NULL);
  else if ((p >> CM__RK_CONTACTS & 1u) &&
           r->root.v[CM__RK_CONTACTS].kind != CM__JV_ARR)
    st = cm__scene_bad(&r->rd, "contacts", "expected an array of contacts%s",
                       NULL);
  if (st)
    cm__sr_note(r, CM__R_TYPES, st);
  if (r->pend_rank != CM__R_NONE || r->stop_st)
    return -1;
  if (!r->s && !(r->s = cm_scene_create(dim)))
    return cm__sr_stop(r, CM_NOMEM, NULL, "out of memory");
  r->s->timestep_s = timestep;
  for (int a = 0; a < 2; a++)
    if (r->state[a] == CM__A_DEFERRED &&
        (cm__sr_deferred(r, a) || r->pend_rank != CM__R_NONE))
      return -1;
  cm__sr_root_strings(r);
  if ((st = cm__rec_root_name(&r->rd, &r->root, r->s)) ||
      (st = cm__scene_validate_named(&r->rd, r->s))) {
    cm__sr_note(r, CM__R_CONTACT + 1, st);
    return -1;
  }
  r->s->meta_json = r->meta;
  r->meta = NULL;
  return 0;
}

static void cm__sr_init(cm__sr_t *r, cm__jp_t *jp, const char *source,
                        const cm__scene_limits_t *lim) {
  memset(r, 0, sizeof *r);
  cm_context_init(&r->tmp);
  r->rd.ctx = &r->tmp;
  r->rd.source = source;
  r->rd.version = 1;
  r->pend_rank = CM__R_NONE;
  r->jp = jp;
  r->lim = lim;
}

/* Copies an error into the caller's context (keeping its settings). */
static int cm__sr_copy(cm_context_t *ctx, const cm_context_t *from) {
  ctx->status = from->status;
  memcpy(ctx->message, from->message, sizeof ctx->message);
  memcpy(ctx->path, from->path, sizeof ctx->path);
  ctx->file = from->file;
  ctx->line = from->line;
  return from->status;
}

/* The outcome: a limit, a syntax error (named source:line:column, at path),
 * the best other error, or the scene. */
static int cm__sr_result(cm__sr_t *r, cm_context_t *ctx, const char *name,
                         const char *path, cm_scene_t **out) {
  cm__jp_t *jp = r->jp;
  int st;
  if (r->stop_st) {
    st = cm__sr_copy(ctx, &r->stop);
  } else if (jp->err && jp->depth_limited) {
    const cm__scene_limits_t *l = r->lim;
    st = CM__ERR(ctx, CM_LIMIT, path,
                 "%s:%d:%d: JSON nested deeper than %s of %d levels%s", name,
                 jp->eline, jp->ecol, l->who ? l->who : "the limit",
                 l->max_depth, l->hint_depth ? l->hint_depth : "");
  } else if (jp->err && jp->nomem) {
    st = CM__ERR(ctx, CM_NOMEM, path, "%s: out of memory reading the JSON",
                 name);
  } else if (jp->err) {
    st = CM__ERR(ctx, CM_PARSE, path, "%s:%d:%d: malformed JSON: %s", name,
                 jp->eline, jp->ecol, jp->emsg);
  } else if (r->pend_rank != CM__R_NONE) {
    st = cm__sr_copy(ctx, &r->pend);
  } else {
    *out = r->s;
    r->s = NULL;
    st = CM_OK;
  }
  cm_scene_destroy(&r->s);
  free(r->meta);
  r->meta = NULL;
  return st;
}

static void cm__jp_setup(cm__jp_t *jp, const char *text, size_t len,
                         const cm__scene_limits_t *lim) {
  /* the limit counts arrays and objects; jansson's depth also counts the
   * scalars in the innermost of them */
  cm__jp_init(jp, text, len,
              lim && lim->max_depth > 0 ? lim->max_depth + 1 : 0);
}

/* After the root value: the end of the document. */
static void cm__jp_end(cm__jp_t *jp) {
  if (!jp->err && cm__jp_scan(jp) != CM__JT_EOF)
    cm__jp_fail(jp, "end of file expected");
}

int cm__scene_parse_json_limited(cm_context_t *ctx, const char *text,
                                 size_t len, const char *source,
                                 const cm__scene_limits_t *lim,
                                 cm_scene_t **out) {
  cm__jp_t jp;
  cm__sr_t r;
  *out = NULL;
  source = source ? source : "scene";
  cm__jp_setup(&jp, text, len, lim);
  cm__sr_init(&r, &jp, source, lim);
  int t = cm__jp_scan(&jp);
  if (t == '{') {
    cm__sr_object(&r);
  } else if (t == '[') {
    if (!cm__jp_value(&jp, NULL)) {
      cm__sr_note(
          &r, CM__R_ROOT,
          cm__scene_bad(&r.rd, "(root)", "expected a JSON object%s", NULL));
    }
  } else {
    cm__jp_fail(&jp, "'[' or '{' expected");
  }
  if (!r.stop_st)
    cm__jp_end(&jp);
  if (!jp.err && !r.stop_st)
    cm__sr_finish(&r);
  int st = cm__sr_result(&r, ctx, source, "", out);
  cm__jp_free(&jp);
  return st;
}

/* The members of {"scene": ..., "options": ...}; 0 or -1. */
static int cm__wrapped_members(cm__sr_t *r, size_t *opt_at, size_t *opt_end,
                               int *scene_kind, char *unknown, size_t usize) {
  static const char *const keys[] = {"scene", "options", NULL};
  cm__jp_t *jp = r->jp;
  cm__jkeys_t unk = {NULL, 0, 0};
  unsigned seen = 0;
  size_t unk_off = 0;
  int more = cm__jp_scan(jp) != '}', st = 0;
  while (more > 0 && !st) {
    int k = cm__sr_member(r, keys, &seen, &unk, &unk_off);
    if (k == -2)
      break;
    if (k == -1 && !unknown[0])
      snprintf(unknown, usize, "%.64s", jp->sb + unk_off);
    if (k == 0) {
      *scene_kind = jp->token == '{' ? CM__JV_OBJ : CM__JV_ARR;
      st = jp->token == '{' ? cm__sr_object(r) : cm__jp_value(jp, NULL);
    } else {
      *opt_at = jp->tok;
      st = cm__jp_value(jp, NULL);
      *opt_end = jp->pos;
    }
    if (!st)
      more = cm__sr_next(jp);
  }
  free(unk.off);
  return jp->err || st ? -1 : 0;
}

int cm__scene_parse_wrapped(cm_context_t *ctx, const char *text, size_t len,
                            const cm__scene_limits_t *lim, cm_scene_t **out,
                            struct json_t **options) {
  cm__jp_t jp;
  cm__sr_t r;
  char unknown[72] = "";
  size_t opt_at = 0, opt_end = 0;
  int scene_kind = CM__JV_ABSENT;
  *out = NULL;
  *options = NULL;
  cm__jp_setup(&jp, text, len, lim);
  cm__sr_init(&r, &jp, "scene", lim);
  int t = cm__jp_scan(&jp);
  if (t == '{') {
    if (!cm__jp_value_start(&jp) &&
        !cm__wrapped_members(&r, &opt_at, &opt_end, &scene_kind, unknown,
                             sizeof unknown))
      jp.depth--;
  } else if (t == '[') {
    cm__jp_value(&jp, NULL);
  } else {
    cm__jp_fail(&jp, "'[' or '{' expected");
  }
  if (!r.stop_st)
    cm__jp_end(&jp);
  int st;
  if (jp.err || r.stop_st) {
    st = cm__sr_result(&r, ctx, "request body", "(body)", out);
  } else if (unknown[0]) {
    st = CM__ERR(ctx, CM_USAGE, unknown,
                 "%s: unknown key next to \"scene\" (allowed: scene, options)",
                 unknown);
  } else if (scene_kind != CM__JV_OBJ) {
    st = CM__ERR(ctx, CM_INVALID_SCENE, "scene",
                 "scene: expected a scene object {\"format\": "
                 "\"cmodes-scene\", ...}");
  } else {
    cm__sr_finish(&r);
    st = cm__sr_result(&r, ctx, "request body", "(body)", out);
    if (!st && opt_end > opt_at) {
      *options = json_loadb(text + opt_at, opt_end - opt_at,
                            JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
      if (!*options) {
        cm_scene_destroy(out);
        st = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
      }
    }
  }
  cm_scene_destroy(&r.s);
  free(r.meta);
  cm__jp_free(&jp);
  return st;
}
