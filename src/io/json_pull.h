/* json_pull.h: a pull reader of JSON text (RFC 8259) for the scene reader:
 * no tree, one token at a time from a buffer, with jansson's syntax rules
 * and error messages (line, column, "near '...'"), so the scene reader
 * reports malformed input exactly as json_loadb(..., JSON_REJECT_DUPLICATES)
 * did. Numbers are exact: integers as strtoll, reals as strtod (correctly
 * rounded) or Clinger's exact fast path. Not a general JSON library. */
#ifndef CM_JSON_PULL_H
#define CM_JSON_PULL_H

#include <stddef.h>

/* Token kinds: the structural characters stand for themselves. */
enum {
  CM__JT_EOF = 0,
  CM__JT_INVALID = -1,
  CM__JT_STR = 256,
  CM__JT_INT,
  CM__JT_REAL,
  CM__JT_TRUE,
  CM__JT_FALSE,
  CM__JT_NULL
};

/* Kinds of a captured value. */
enum {
  CM__JV_ABSENT = 0,
  CM__JV_NULL,
  CM__JV_TRUE,
  CM__JV_FALSE,
  CM__JV_INT,
  CM__JV_REAL,
  CM__JV_STR,
  CM__JV_ARR,
  CM__JV_OBJ
};

/* One element of a captured array: a number, or an array of numbers (its
 * length and first four entries), or any other kind. */
typedef struct {
  int kind;
  double num;      /* CM__JV_INT or CM__JV_REAL */
  size_t n;        /* CM__JV_ARR: length */
  int sub_kind[4]; /* CM__JV_ARR: kinds of the first four entries */
  double sub[4];   /* ... and their values when numbers */
} cm__jelem_t;

/* A value as the scene reader needs it: scalars whole, arrays as their
 * length and first four elements (vectors, quaternions, 3x3 inertia),
 * objects as their kind only. */
typedef struct {
  int kind;
  long long ival;  /* CM__JV_INT */
  double num;      /* CM__JV_INT (converted) or CM__JV_REAL */
  const char *str; /* CM__JV_STR: NUL-terminated */
  size_t soff;     /* CM__JV_STR: offset in the reader's scratch */
  size_t n;        /* CM__JV_ARR: length */
  cm__jelem_t e[4];
} cm__jv_t;

typedef struct {
  const char *buf; /* the text, len bytes (need not be NUL-terminated) */
  size_t len;
  size_t pos; /* the next unread byte */
  size_t tok; /* start of the current token (jansson's saved text) */
  int token;  /* the current token (CM__JT_*) */
  long long ival;
  double num;
  size_t soff, slen; /* CM__JT_STR: decoded bytes in sb[soff..] */
  int depth;         /* values open, as jansson counts them */
  int max_depth;     /* deepest allowed (jansson's 2048 by default) */
  int depth_limited; /* the caller's limit was hit (not jansson's) */
  int err;           /* a syntax error was found: emsg, eline, ecol */
  int nomem;         /* that error was an allocation failure */
  int eline, ecol;
  char emsg[160];
  char *sb; /* scratch for decoded strings (grows; reset by the user) */
  size_t scap, sused;
  char *emit; /* compact re-serialisation (cm__jp_emit_value) */
  size_t ecap, elen;
} cm__jp_t;

void cm__jp_init(cm__jp_t *jp, const char *buf, size_t len, int max_depth);
void cm__jp_free(cm__jp_t *jp);
/* Checks that text is one JSON object or array as jansson's json_loadb
 * reads it: 0 valid, 1 a syntax error, -1 out of memory. For telling
 * jansson's out-of-memory failures, which 2.14 often reports as syntax
 * errors, from real ones. */
int cm__json_check(const char *text, size_t len);
/* Reads the next token into jp->token (strings decoded into sb at soff).
 * Returns the token; CM__JT_INVALID after a lexical error (jp->err set). */
int cm__jp_scan(cm__jp_t *jp);
/* Records a syntax error at the current token (first one wins). */
void cm__jp_fail(cm__jp_t *jp, const char *msg);
/* The ']' closing an array (after its last element, or an empty one's):
 * leaves its depth; -1 with "']' expected" at any other token. */
int cm__jp_array_end(cm__jp_t *jp);
/* Parses the value whose first token is current (as jansson's parse_value):
 * counts depth, captures it into v when v is not NULL, checks every object
 * for duplicate keys. Returns 0, or -1 after a syntax error. The token
 * after the value is not read. */
int cm__jp_value(cm__jp_t *jp, cm__jv_t *v);
/* The same, also appending the value to jp->emit as jansson's compact dump
 * writes it (json_dumps(JSON_COMPACT | JSON_ENCODE_ANY)). */
int cm__jp_emit_value(cm__jp_t *jp);
/* Checks a key against the keys of its object so far (a table of the
 * decoded keys in sb, reset by the caller per object): 1 if a duplicate. */
typedef struct {
  size_t *off; /* pairs (offset, length) into sb */
  int n, cap;
} cm__jkeys_t;
int cm__jkeys_seen(cm__jp_t *jp, cm__jkeys_t *k, size_t off, size_t len);
/* The start of a value: the checks of jansson's parse_value (depth, NUL in
 * a string, a token that cannot start a value). Returns 0 or -1. */
int cm__jp_value_start(cm__jp_t *jp);
/* Appends n bytes to the scratch; returns their offset, or (size_t)-1. */
size_t cm__jp_scratch(cm__jp_t *jp, const char *s, size_t n);

#endif
