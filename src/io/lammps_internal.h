/* lammps_internal.h: the input-deck reader's private parts shared by
 * lammps_vars.c (lines, variables, expressions) and lammps_deck.c
 * (commands). Not installed; not for anything else. */
#ifndef CM_LAMMPS_INTERNAL_H
#define CM_LAMMPS_INTERNAL_H

#include "internal.h"

#include <stdio.h>

#define CM__DECK_MAX_ARGS 256 /* words per command */

/* What a variable holds (cm__dvar_t.equal). */
enum {
  CM__VAR_TEXT = 0,        /* index, string, loop, world, ...: its text */
  CM__VAR_EQUAL = 1,       /* equal: an expression evaluated when used */
  CM__VAR_INTERNAL = 2,    /* internal: a number, read at full precision */
  CM__VAR_UNUSABLE = -1,   /* a style the reader does not evaluate (atom,
                              getenv, file, ...): value is the style's name,
                              and a use of it is an error naming it */
  CM__VAR_DELETED = -2,    /* variable NAME delete: as if never defined */
  CM__VAR_CONDITIONAL = -3 /* set inside an `if` (value: "if"), whose
                              condition the reader does not evaluate: a
                              use is an error */
};

/* One variable: index/string/loop/world (text) or equal (an expression
 * evaluated when used, as LAMMPS does). */
typedef struct {
  char *name;  /* owned */
  int equal;   /* CM__VAR_* */
  char *value; /* owned: the text, or the expression */
  long line;   /* where it was defined */
} cm__dvar_t;

/* The reader: where it is, the variables, and the deck being filled. */
typedef struct {
  cm_context_t *ctx;
  cm_lammps_deck_t *deck;
  const char *file; /* current file, for messages */
  long line;        /* line of the current command (its first line) */
  cm__dvar_t *vars; /* variables, size nvars (owned) */
  int nvars, capvars;
  int depth;  /* include depth */
  void *priv; /* lammps_deck.c's state */
} cm__drd_t;

/* Error "file:line: message" with status st. */
#define CM__DECKERR(r, st, ...)                                                \
  cm__deck_error((r), (st), __FILE__, __LINE__, __VA_ARGS__)
int cm__deck_error(cm__drd_t *r, int st, const char *srcfile, int srcline,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Appends a warning "file:line: message" to the deck. */
void cm__deck_warn(cm__drd_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reads the next command of f into *buf (malloc'd, grown as needed):
 * continuation lines ('&' at the end) joined, the '#' comment outside
 * quotes removed. Sets r->line to its first line; *lines counts the file's
 * lines read so far. 0 at the end of the file. */
int cm__deck_next(FILE *f, char **buf, size_t *cap, long *lines, cm__drd_t *r);

/* Replaces ${name}, $x and $(expression) in line (outside quotes); the
 * result is malloc'd in *out. Errors name the variable. */
int cm__deck_substitute(cm__drd_t *r, const char *line, char **out);

/* Splits line into words in place (quotes removed); returns the count or
 * -1 if more than max. */
int cm__deck_split(char *line, char **argv, int max);

/* Marks variable name as set inside an `if` at the current line by
 * `variable name style ...` (style may be NULL), unless --var gave it
 * (LAMMPS' -var wins) or LAMMPS ignores that definition (an index-like
 * style for a variable that exists). */
void cm__deck_conditional(cm__drd_t *r, const char *name, const char *style);

/* The variable command: variable NAME STYLE ARGS. */
int cm__deck_variable(cm__drd_t *r, int argc, char **argv);

/* Evaluates an equal-style expression (numbers, + - * / ^, parentheses,
 * comparisons, sqrt exp ln log abs sin cos tan asin acos atan floor ceil
 * round, PI, v_name). */
int cm__deck_eval(cm__drd_t *r, const char *expr, double *out);

/* Frees the variables. */
void cm__deck_vars_free(cm__drd_t *r);

/* Parses a number word ("2000.0", "1e-4"); 1 on success. */
int cm__deck_number(const char *s, double *v);

#endif
