/* lammps_vars.c: the text layer of the LAMMPS/LIGGGHTS deck reader: command
 * lines (continuations, comments, quotes), variables (index, string, loop,
 * world, universe, equal) and their substitution (${name}, $x, $(expr)),
 * and a small evaluator for equal-style arithmetic. Not for the commands
 * themselves (lammps_deck.c). Expressions that need a running simulation
 * (thermo keywords, computes, group functions) are errors when used. */
#include "lammps_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define CM__PI 3.14159265358979323846

/* ---- messages -------------------------------------------------------------
 */

int cm__deck_error(cm__drd_t *r, int st, const char *srcfile, int srcline,
                   const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cm__error_at(r->ctx, st, srcfile, srcline, r->file, "%s:%ld: %s",
                      r->file, r->line, msg);
}

void cm__deck_warn(cm__drd_t *r, const char *fmt, ...) {
  char msg[700], line[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r->line > 0)
    snprintf(line, sizeof line, "%s:%ld: %s\n", r->file, r->line, msg);
  else /* about the deck as a whole (r->line 0): no line to name */
    snprintf(line, sizeof line, "%s: %s\n", r->file, msg);
  cm_lammps_deck_t *d = r->deck;
  size_t old = d->warnings ? strlen(d->warnings) : 0, n = strlen(line);
  char *p = realloc(d->warnings, old + n + 1);
  if (!p)
    return; /* a lost warning is not worth failing the import */
  memcpy(p + old, line, n + 1);
  d->warnings = p;
}

int cm__deck_number(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return end != s && !*end && !errno && isfinite(*v);
}

/* ---- lines
 * -------------------------------------------------------------------- */

/* Cuts a '#' comment that is outside quotes; returns 1 if the line ends in
 * a continuation '&' (which is removed). */
static int cm__strip(char *s) {
  char q = 0;
  for (char *p = s; *p; p++) {
    if (q) {
      q = *p == q ? 0 : q;
    } else if (*p == '"' || *p == '\'') {
      q = *p;
    } else if (*p == '#') {
      *p = 0;
      break;
    }
  }
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    s[--n] = 0;
  if (n > 0 && s[n - 1] == '&') {
    s[n - 1] = ' ';
    return 1;
  }
  return 0;
}

int cm__deck_next(FILE *f, char **buf, size_t *cap, long *lines, cm__drd_t *r) {
  char *part = NULL;
  size_t pcap = 0, len = 0;
  int more = 1, got = 0;
  while (more) {
    ssize_t n = getline(&part, &pcap, f);
    if (n < 0)
      break;
    (*lines)++;
    if (!got)
      r->line = *lines;
    got = 1;
    more = cm__strip(part);
    size_t m = strlen(part);
    if (len + m + 2 > *cap) {
      size_t c = 2 * (len + m + 2);
      char *p = realloc(*buf, c);
      if (!p) {
        free(part);
        return CM__DECKERR(r, CM_NOMEM, "out of memory reading the deck");
      }
      *buf = p, *cap = c;
    }
    memcpy(*buf + len, part, m);
    len += m;
    (*buf)[len] = 0;
  }
  free(part);
  return got;
}

int cm__deck_split(char *s, char **argv, int max) {
  int n = 0;
  while (*s) {
    while (isspace((unsigned char)*s))
      s++;
    if (!*s)
      break;
    if (n == max)
      return -1;
    char q = (*s == '"' || *s == '\'') ? *s : 0;
    if (q) {
      argv[n++] = ++s;
      while (*s && *s != q)
        s++;
    } else {
      argv[n++] = s;
      while (*s && !isspace((unsigned char)*s))
        s++;
    }
    if (*s)
      *s++ = 0;
  }
  return n;
}

/* ---- variables -------------------------------------------------------------
 */

/* The variable name (len bytes), NULL when none is defined (or it was
 * deleted). */
static cm__dvar_t *cm__find_var(cm__drd_t *r, const char *name, size_t len) {
  for (int i = 0; i < r->nvars; i++)
    if (r->vars[i].equal != CM__VAR_DELETED && strlen(r->vars[i].name) == len &&
        !strncmp(r->vars[i].name, name, len))
      return &r->vars[i];
  return NULL;
}

/* The error of a use of an unusable variable v. */
static int cm__var_unusable(cm__drd_t *r, const cm__dvar_t *v) {
  if (v->equal == CM__VAR_CONDITIONAL)
    return CM__DECKERR(r, CM_PARSE,
                       "variable '%s' is set inside an if (line %ld), whose "
                       "condition cmodes does not evaluate; give the value "
                       "of the run that wrote the dump with --var %s=VALUE",
                       v->name, v->line, v->name);
  return CM__DECKERR(r, CM_PARSE,
                     "variable '%s' (line %ld) is of style %s, which the "
                     "importer does not evaluate (it reads index, string, "
                     "loop, uloop, world, universe, equal and internal "
                     "variables); give its value with --var %s=VALUE",
                     v->name, v->line, v->value, v->name);
}

void cm__deck_vars_free(cm__drd_t *r) {
  for (int i = 0; i < r->nvars; i++) {
    free(r->vars[i].name);
    free(r->vars[i].value);
  }
  free(r->vars);
  r->vars = NULL;
  r->nvars = r->capvars = 0;
}

/* Defines or replaces a variable. */
static int cm__set_var(cm__drd_t *r, const char *name, int equal,
                       const char *value) {
  cm__dvar_t *v = cm__find_var(r, name, strlen(name));
  if (!v) {
    if (r->nvars == r->capvars) {
      int cap = r->capvars ? 2 * r->capvars : 16;
      cm__dvar_t *p = realloc(r->vars, (size_t)cap * sizeof *p);
      if (!p)
        return CM__DECKERR(r, CM_NOMEM, "out of memory");
      r->vars = p, r->capvars = cap;
    }
    v = &r->vars[r->nvars++];
    v->name = cm__strdup(name);
    v->value = NULL;
  }
  free(v->value);
  v->value = cm__strdup(value);
  v->equal = equal;
  v->line = r->line;
  if (!v->name || !v->value)
    return CM__DECKERR(r, CM_NOMEM, "out of memory");
  return CM_OK;
}

/* 1 if s is a whole number of at most 9 digits. */
static int cm__loop_count(const char *s) {
  size_t n = strspn(s, "0123456789");
  return n && n <= 9 && !s[n];
}

/* The first value of "variable NAME loop|uloop N [pad]" or "loop N1 N2
 * [pad]" (LAMMPS: N1, else 1), zero-padded with pad to the digits of the
 * last value, as LAMMPS writes it; in buf. NULL for other arguments. */
static const char *cm__loop_first(int argc, char **argv, char *buf,
                                  size_t size) {
  int pad = !strcmp(argv[argc - 1], "pad");
  int nval = argc - 3 - pad; /* N, or N1 N2 */
  int two = !strcmp(argv[2], "loop") && nval == 2;
  if (nval != 1 && !two)
    return NULL;
  for (int i = 3; i < 3 + nval; i++)
    if (!cm__loop_count(argv[i]))
      return NULL;
  const char *last = argv[two ? 4 : 3];
  long first = two ? strtol(argv[3], NULL, 10) : 1;
  snprintf(buf, size, "%0*ld", pad ? (int)strlen(last) : 1, first);
  return buf;
}

void cm__deck_conditional(cm__drd_t *r, const char *name, const char *style) {
  cm__dvar_t *v = cm__find_var(r, name, strlen(name));
  if (v && v->line == 0 && v->equal == CM__VAR_TEXT)
    return; /* --var NAME=VALUE, set before the deck's first line */
  if (v && style && strcmp(style, "string") && strcmp(style, "equal") &&
      strcmp(style, "internal") && strcmp(style, "delete"))
    return; /* index, loop, ...: LAMMPS ignores it for an existing one */
  cm__set_var(r, name, CM__VAR_CONDITIONAL, "if");
}

int cm__deck_variable(cm__drd_t *r, int argc, char **argv) {
  if (argc < 3)
    return CM__DECKERR(r, CM_PARSE,
                       "variable: expected 'variable NAME STYLE ARGS'");
  const char *name = argv[1], *style = argv[2];
  int text = !strcmp(style, "index") || !strcmp(style, "loop") ||
             !strcmp(style, "world") || !strcmp(style, "universe") ||
             !strcmp(style, "uloop") || !strcmp(style, "string");
  if (!strcmp(style, "delete")) {
    cm__dvar_t *v = cm__find_var(r, name, strlen(name));
    if (v)
      v->equal = CM__VAR_DELETED;
    return CM_OK;
  }
  if (text) {
    /* index, loop, world...: a later definition of an existing index-like
     * variable is ignored (that is how -var on the command line wins) */
    if (strcmp(style, "string") && cm__find_var(r, name, strlen(name)))
      return CM_OK;
    if (argc < 4)
      return CM__DECKERR(r, CM_PARSE, "variable %s %s: no value", name, style);
    char first[64];
    const char *val = argv[3];
    if (!strcmp(style, "loop") || !strcmp(style, "uloop"))
      val = cm__loop_first(argc, argv, first, sizeof first);
    if (!val)
      return CM__DECKERR(r, CM_PARSE,
                         "variable %s %s: expected N [pad]%s (whole "
                         "numbers)",
                         name, style,
                         strcmp(style, "loop") ? "" : " or N1 N2 [pad]");
    return cm__set_var(r, name, CM__VAR_TEXT, val);
  }
  if (!strcmp(style, "internal")) { /* a number, as LAMMPS requires */
    double x;
    if (argc != 4 || !cm__deck_number(argv[3], &x))
      return CM__DECKERR(r, CM_PARSE,
                         "variable %s internal: expected one number", name);
    return cm__set_var(r, name, CM__VAR_INTERNAL, argv[3]);
  }
  if (!strcmp(style, "equal")) {
    if (argc < 4)
      return CM__DECKERR(r, CM_PARSE, "variable %s equal: no expression", name);
    /* an expression may have been split at spaces: join it back */
    size_t n = 1;
    for (int i = 3; i < argc; i++)
      n += strlen(argv[i]) + 1;
    char *e = malloc(n);
    if (!e)
      return CM__DECKERR(r, CM_NOMEM, "out of memory");
    e[0] = 0;
    for (int i = 3; i < argc; i++) {
      strcat(e, argv[i]);
      if (i + 1 < argc)
        strcat(e, " ");
    }
    int st = cm__set_var(r, name, CM__VAR_EQUAL, e);
    free(e);
    return st;
  }
  /* atom, vector, python, file, getenv, format, ...: a use is an error
   * (getenv too: the importer's environment is not the run's) */
  return cm__set_var(r, name, CM__VAR_UNUSABLE, style);
}

/* ---- expressions -----------------------------------------------------------
 */

typedef struct {
  cm__drd_t *r;
  const char *s; /* cursor */
  const char *expr;
  int depth; /* v_name recursion */
  int nest;  /* parentheses, signs and powers open, across v_name too */
  int err;   /* status of the first error */
  int *refs; /* v_name expansions of the whole evaluation */
} cm__ex_t;

/* Expansions of v_name one evaluation may make: the depth limit alone let
 * a variable that names itself twice expand 2^32 times (found by
 * fuzz_deck: a hang). */
#define CM__EX_MAX_REFS 10000

/* Nesting one evaluation may reach: each level is a few stack frames, and
 * a deck line of '(' or '-' alone overflowed the stack (found by fuzz_deck).
 * LAMMPS decks nest a handful of levels. */
#define CM__EX_MAX_NEST 200

static double cm__ex_or(cm__ex_t *e);

static void cm__ex_space(cm__ex_t *e) {
  while (isspace((unsigned char)*e->s))
    e->s++;
}

/* The first error of an evaluation: the expression, then the len bytes
 * at e->s it is about (none when len is 0: the expression's end). */
static double cm__ex_fail(cm__ex_t *e, const char *what, size_t len) {
  /* Long expressions are cut so the message keeps its verdict. */
  int cut = strlen(e->expr) > 80, part = len > 40;
  int ex = cut ? 80 : (int)strlen(e->expr);
  if (!e->err && !len)
    e->err = CM__DECKERR(e->r, CM_PARSE, "expression '%.*s%s' %s", ex, e->expr,
                         cut ? "..." : "", what);
  else if (!e->err)
    e->err = CM__DECKERR(e->r, CM_PARSE, "expression '%.*s%s': '%.*s%s' %s", ex,
                         e->expr, cut ? "..." : "", part ? 40 : (int)len, e->s,
                         part ? "..." : "", what);
  return NAN;
}

static double cm__ex_call(cm__ex_t *e, const char *name, size_t len, double x) {
  static const struct {
    const char *n;
    double (*f)(double);
  } fn[] = {{"sqrt", sqrt}, {"exp", exp},    {"ln", log},    {"log", log10},
            {"abs", fabs},  {"sin", sin},    {"cos", cos},   {"tan", tan},
            {"asin", asin}, {"acos", acos},  {"atan", atan}, {"floor", floor},
            {"ceil", ceil}, {"round", round}};
  for (size_t k = 0; k < sizeof fn / sizeof fn[0]; k++)
    if (strlen(fn[k].n) == len && !strncmp(fn[k].n, name, len))
      return fn[k].f(x);
  e->s = name;
  return cm__ex_fail(e,
                     "is not a constant function (thermo keywords, computes, "
                     "fixes and group functions need a running simulation)",
                     len);
}

/* v_name: the value of another variable. */
static double cm__ex_var(cm__ex_t *e, const char *name, size_t len) {
  cm__dvar_t *v = cm__find_var(e->r, name, len);
  if (!v) {
    e->s = name - 2;
    return cm__ex_fail(e, "names no variable defined before this line",
                       len + 2);
  }
  double x;
  if (v->equal == CM__VAR_UNUSABLE || v->equal == CM__VAR_CONDITIONAL) {
    if (!e->err)
      e->err = cm__var_unusable(e->r, v);
    return NAN;
  }
  if (v->equal == CM__VAR_EQUAL) {
    const char *why =
        e->depth > 32 ? "refers to itself (more than 32 equal-style "
                        "variables deep, each naming the next)"
        : ++*e->refs > CM__EX_MAX_REFS
            ? "expands to more than 10000 variable references (does a "
              "variable refer to itself?)"
            : NULL;
    if (why) { /* quoting v_name */
      e->s = name - 2;
      return cm__ex_fail(e, why, len + 2);
    }
    cm__ex_t sub = {e->r,    v->value, v->value, e->depth + 1,
                    e->nest, 0,        e->refs};
    x = cm__ex_or(&sub);
    cm__ex_space(&sub);
    if (!sub.err && *sub.s)
      x = cm__ex_fail(&sub, "is not understood", strlen(sub.s));
    if (sub.err && !e->err)
      e->err = sub.err;
    /* LAMMPS reads another variable through its text (retrieve(), "%.15g"
     * for an equal-style one, then atof): the same digits here */
    char text[40];
    snprintf(text, sizeof text, "%.15g", x);
    x = strtod(text, NULL);
  } else if (!cm__deck_number(v->value, &x)) {
    e->s = name - 2;
    return cm__ex_fail(e, "is not a number", len + 2);
  }
  return x;
}

static double cm__ex_atom(cm__ex_t *e) {
  cm__ex_space(e);
  const char *p = e->s;
  if (*p == '(') {
    e->s++;
    double x = cm__ex_or(e);
    cm__ex_space(e);
    if (*e->s != ')')
      return cm__ex_fail(e, "needs a closing parenthesis", strlen(e->s));
    e->s++;
    return x;
  }
  if (isdigit((unsigned char)*p) || *p == '.') {
    char *end;
    double x = strtod(p, &end);
    e->s = end;
    return x;
  }
  if (isalpha((unsigned char)*p) || *p == '_') {
    const char *q = p;
    while (isalnum((unsigned char)*q) || *q == '_' || *q == '[' || *q == ']')
      q++;
    size_t len = (size_t)(q - p);
    e->s = q;
    if (len == 2 && !strncmp(p, "PI", 2))
      return CM__PI;
    if (len > 2 && !strncmp(p, "v_", 2))
      return cm__ex_var(e, p + 2, len - 2);
    cm__ex_space(e);
    if (*e->s == '(') {
      e->s++;
      double x = cm__ex_or(e);
      cm__ex_space(e);
      if (*e->s != ')') {
        e->s = p;
        return cm__ex_fail(e, "is not a one-argument constant function",
                           strlen(p));
      }
      e->s++;
      return e->err ? NAN : cm__ex_call(e, p, len, x);
    }
    e->s = p;
    return cm__ex_fail(e,
                       "is not a constant (thermo keywords and computes need "
                       "a running simulation)",
                       len);
  }
  if (!*p)
    return cm__ex_fail(e,
                       "ends where a number, a variable, a function or '(' "
                       "was expected",
                       0);
  return cm__ex_fail(e, "is not understood", strlen(p));
}

static double cm__ex_unary_(cm__ex_t *e);

static double cm__ex_unary(cm__ex_t *e) {
  if (e->nest >= CM__EX_MAX_NEST)
    return cm__ex_fail(e,
                       "nests more than 200 levels of parentheses, signs or "
                       "powers",
                       strlen(e->s) < 20 ? strlen(e->s) : 20);
  e->nest++;
  double x = cm__ex_unary_(e);
  e->nest--;
  return x;
}

static double cm__ex_unary_(cm__ex_t *e) {
  cm__ex_space(e);
  if (*e->s == '-') {
    e->s++;
    return -cm__ex_unary(e);
  }
  if (*e->s == '!') {
    e->s++;
    return cm__ex_unary(e) == 0.0;
  }
  if (*e->s == '+') {
    e->s++;
    return cm__ex_unary(e);
  }
  return cm__ex_atom(e);
}

/* Powers, left to right as LAMMPS evaluates them (2^3^2 is 64), of
 * operands whose signs bind tighter (-2^2 is 4). */
static double cm__ex_pow(cm__ex_t *e) {
  double x = cm__ex_unary(e);
  for (;;) {
    cm__ex_space(e);
    if (*e->s != '^')
      return x;
    e->s++;
    x = pow(x, cm__ex_unary(e));
  }
}

static double cm__ex_mul(cm__ex_t *e) {
  double x = cm__ex_pow(e);
  for (;;) {
    cm__ex_space(e);
    char c = *e->s;
    if (c != '*' && c != '/' && c != '%')
      return x;
    e->s++;
    double y = cm__ex_pow(e);
    x = c == '*' ? x * y : c == '/' ? x / y : fmod(x, y);
  }
}

static double cm__ex_add(cm__ex_t *e) {
  double x = cm__ex_mul(e);
  for (;;) {
    cm__ex_space(e);
    char c = *e->s;
    if (c != '+' && c != '-')
      return x;
    e->s++;
    double y = cm__ex_mul(e);
    x = c == '+' ? x + y : x - y;
  }
}

/* Comparisons: < <= > >= (rel 1), then == != (rel 0) one level looser,
 * as in LAMMPS (2==1<3 is 0). */
static double cm__ex_cmp(cm__ex_t *e, int rel) {
  double x = rel ? cm__ex_add(e) : cm__ex_cmp(e, 1);
  for (;;) {
    cm__ex_space(e);
    const char *p = e->s;
    int op = rel ? (!strncmp(p, "<=", 2)   ? 1
                    : !strncmp(p, ">=", 2) ? 2
                    : *p == '<'            ? 5
                    : *p == '>'            ? 6
                                           : 0)
                 : (!strncmp(p, "==", 2)   ? 3
                    : !strncmp(p, "!=", 2) ? 4
                                           : 0);
    if (!op)
      return x;
    e->s += op <= 4 ? 2 : 1;
    double y = rel ? cm__ex_add(e) : cm__ex_cmp(e, 1);
    x = op == 1   ? x <= y
        : op == 2 ? x >= y
        : op == 3 ? x == y
        : op == 4 ? x != y
        : op == 5 ? x < y
                  : x > y;
  }
}

/* && (and 1), then || and |^ (exclusive or) one level looser, as in
 * LAMMPS (1||0&&0 is 1). */
static double cm__ex_logic(cm__ex_t *e, int and) {
  double x = and? cm__ex_cmp(e, 0) : cm__ex_logic(e, 1);
  for (;;) {
    cm__ex_space(e);
    int op = and? (!strncmp(e->s, "&&", 2) ? 1 : 0)
                : (!strncmp(e->s, "||", 2)   ? 2
                   : !strncmp(e->s, "|^", 2) ? 3
                                             : 0);
    if (!op)
      return x;
    e->s += 2;
    double y = and? cm__ex_cmp(e, 0) : cm__ex_logic(e, 1);
    x = op == 1   ? (x != 0 && y != 0)
        : op == 2 ? (x != 0 || y != 0)
                  : ((x != 0) != (y != 0));
  }
}

static double cm__ex_or(cm__ex_t *e) { return cm__ex_logic(e, 0); }

int cm__deck_eval(cm__drd_t *r, const char *expr, double *out) {
  int refs = 0;
  cm__ex_t e = {r, expr, expr, 0, 0, 0, &refs};
  double x = cm__ex_or(&e);
  cm__ex_space(&e);
  if (!e.err && *e.s)
    cm__ex_fail(&e, "is not understood", strlen(e.s));
  if (e.err)
    return e.err;
  if (!isfinite(x))
    return CM__DECKERR(r, CM_PARSE, "expression '%s' is not finite", expr);
  *out = x;
  return CM_OK;
}

/* ---- substitution ----------------------------------------------------------
 */

/* Appends n bytes of s to the growing *out. */
static int cm__cat(char **out, size_t *len, size_t *cap, const char *s,
                   size_t n) {
  if (*len + n + 1 > *cap) {
    size_t c = 2 * (*len + n + 1);
    char *p = realloc(*out, c);
    if (!p)
      return 0;
    *out = p, *cap = c;
  }
  memcpy(*out + *len, s, n);
  *len += n;
  (*out)[*len] = 0;
  return 1;
}

/* The text of variable name (an equal one evaluated, "%.15g" as LAMMPS). */
static int cm__var_text(cm__drd_t *r, const char *name, size_t n, char *buf,
                        size_t size, const char **text) {
  cm__dvar_t *v = cm__find_var(r, name, n);
  if (!v)
    return CM__DECKERR(r, CM_PARSE,
                       "variable '%.*s' is not defined before this line "
                       "(define it with 'variable', or give it with "
                       "'-var' in the deck's own run)",
                       (int)n, name);
  if (v->equal == CM__VAR_UNUSABLE || v->equal == CM__VAR_CONDITIONAL)
    return cm__var_unusable(r, v);
  if (v->equal == CM__VAR_TEXT) {
    *text = v->value;
    return CM_OK;
  }
  double x; /* equal, or internal ("%.15g" as LAMMPS' retrieve()) */
  int st =
      v->equal == CM__VAR_EQUAL ? cm__deck_eval(r, v->value, &x)
      : cm__deck_number(v->value, &x)
          ? CM_OK
          : CM__DECKERR(r, CM_PARSE, "variable '%s': not a number", v->name);
  if (st)
    return st;
  snprintf(buf, size, "%.15g", x);
  *text = buf;
  return CM_OK;
}

/* 1 if f is a format LAMMPS accepts for $(expr:f) (src/input.cpp: "%",
 * digits or spaces, ".", a precision, then e, f or g in either case:
 * %.3f, %10.4e, %08.3f), with nothing after it. */
static int cm__number_format(const char *f) {
  if (*f++ != '%')
    return 0;
  while (isdigit((unsigned char)*f) || *f == ' ')
    f++;
  if (*f++ != '.' || !isdigit((unsigned char)*f))
    return 0;
  while (isdigit((unsigned char)*f))
    f++;
  return *f && strchr("eEfFgG", *f) && !f[1];
}

/* $(expression) starting at p (after "$("); sets *end past the ')'. */
static int cm__immediate(cm__drd_t *r, const char *p, const char **end,
                         char *buf, size_t size) {
  int depth = 1;
  const char *q = p;
  for (; *q && depth; q++)
    depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
  if (depth)
    return CM__DECKERR(r, CM_PARSE, "'$(%s': no closing parenthesis", p);
  char *expr = malloc((size_t)(q - p));
  if (!expr)
    return CM__DECKERR(r, CM_NOMEM, "out of memory");
  memcpy(expr, p, (size_t)(q - p - 1));
  expr[q - p - 1] = 0;
  /* $(expr:%fmt), LAMMPS' rule: the last ':' followed by '%' */
  char fmt[16] = "%.20g", *colon = strrchr(expr, ':');
  int st = CM_OK;
  if (colon && colon[1] == '%') {
    if (!cm__number_format(colon + 1) || strlen(colon + 1) >= sizeof fmt)
      st = CM__DECKERR(r, CM_PARSE,
                       "'$(%s)': format '%s' is not one LAMMPS accepts "
                       "('%%', digits or spaces, '.', a precision, then e, "
                       "f or g: %%.3f, %%10.4e), or longer than 15 "
                       "characters",
                       expr, colon + 1);
    else
      snprintf(fmt, sizeof fmt, "%s", colon + 1), *colon = 0;
  }
  double x = 0;
  if (!st)
    st = cm__deck_eval(r, expr, &x);
  int n = st ? 0 : snprintf(buf, size, fmt, x);
  if (!st && (n < 0 || (size_t)n >= size))
    st = CM__DECKERR(r, CM_PARSE,
                     "'$(%s)': %.20g formats to more than %zu "
                     "characters",
                     expr, x, size - 1);
  free(expr);
  if (st)
    return st;
  *end = q;
  return CM_OK;
}

int cm__deck_substitute(cm__drd_t *r, const char *line, char **out) {
  size_t len = 0, cap = strlen(line) + 64;
  char *s = malloc(cap), q = 0;
  if (!s)
    return CM__DECKERR(r, CM_NOMEM, "out of memory");
  s[0] = 0;
  int st = CM_OK, ok = 1;
  for (const char *p = line; *p && !st && ok;) {
    if (q || *p != '$') {
      if (q)
        q = *p == q ? 0 : q;
      else if (*p == '"' || *p == '\'')
        q = *p;
      ok = cm__cat(&s, &len, &cap, p++, 1);
      continue;
    }
    char buf[64];
    const char *text = NULL, *end = NULL;
    if (p[1] == '{') {
      const char *c = strchr(p + 2, '}');
      if (!c) {
        st = CM__DECKERR(r, CM_PARSE, "'%s': '${' without '}'", p);
        break;
      }
      st = cm__var_text(r, p + 2, (size_t)(c - p - 2), buf, sizeof buf, &text);
      end = c + 1;
    } else if (p[1] == '(') {
      st = cm__immediate(r, p + 2, &end, buf, sizeof buf);
      text = buf;
    } else if (p[1] && !isspace((unsigned char)p[1])) {
      st = cm__var_text(r, p + 1, 1, buf, sizeof buf, &text);
      end = p + 2;
    } else {
      ok = cm__cat(&s, &len, &cap, p++, 1);
      continue;
    }
    if (st)
      break;
    ok = cm__cat(&s, &len, &cap, text, strlen(text));
    p = end;
  }
  if (!ok && !st)
    st = CM__DECKERR(r, CM_NOMEM, "out of memory");
  if (st) {
    free(s);
    return st;
  }
  *out = s;
  return CM_OK;
}
