/* options_table.h: the analysis options (cm_options_t) as one table, and
 * what is generated from it: cm_options_init and the checks (options.c),
 * the command-line options and help of analyze, compare and verify
 * (cli/args.c), the server's query and JSON options and its cache key, the
 * table in docs/cli.md (a test compares them) and `cmodes options --json`
 * (for other front ends, e.g. a Python package). Not for options of one
 * command only (--threads, --json, ...): those stay with their command. */
#ifndef CM_OPTIONS_TABLE_H
#define CM_OPTIONS_TABLE_H

#include "internal.h"

#include <jansson.h>
#include <math.h>

/* X(field, "cli", TYPE, default, lo, hi, bounds, short, "META", "help", "doc")
 *  field   cm_options_t member; also the server's JSON and query name
 *  cli     the command-line spelling: --cli (the field with '-' for '_')
 *  TYPE    INT, REAL or METHOD (a cm_method_t given by name)
 *  lo, hi  accepted range; bounds: CLOSED, OPEN_LO (lo excluded) or OPEN
 *          (both excluded); hi = HUGE_VAL: no upper bound (finite always)
 *  short   one-letter command-line spelling, or 0
 *  help    one line for `cmodes analyze --help`
 *  doc     the meaning, for docs/cli.md and `cmodes options --json` */
#define CM_OPTIONS_MAP(X)                                                      \
  X(modes, "modes", INT, 6, 1, 1000, CLOSED, 'k', "K", "top modes to report",  \
    "top modes to report")                                                     \
  X(tol, "tol", REAL, 1e-10, 0, 1, OPEN, 0, "T",                               \
    "Lanczos relative residual tolerance",                                     \
    "relative residual tolerance of the Lanczos and ARPACK solves "            \
    "([math.md](math.md#the-stopping-rule-and-what-a-residual-guarantees)); "  \
    "from 1e-6 cmodes' Lanczos reads B's values as floats (and from 2^19 "     \
    "rows keeps its basis in float) and checks the residuals on S in "         \
    "double ([math.md](math.md#numerical-choices))")                           \
  X(method, "method", METHOD, CM_METHOD_AUTO, CM_METHOD_AUTO,                  \
    CM_METHOD_LANCZOS, CLOSED, 0, "M",                                         \
    "auto (dense for small components, else lanczos; arpack with "             \
    "--chebyshev), lanczos, arpack or dense",                                  \
    "`auto`: components with min(contacts, dofs) <= `dense_max` dense, the "   \
    "others by cmodes' own Lanczos (by ARPACK when `chebyshev` is on); "       \
    "`lanczos`: cmodes' Lanczos for every component large enough for it "      \
    "(fewer than max(K + 2, 8) rows or columns stay dense); `arpack`: "        \
    "ARPACK-ng likewise; `dense`: LAPACK `dsyevr` on every component "         \
    "([math.md](math.md#numerical-choices))")                                  \
  X(ncv, "ncv", INT, 0, 0, 10000, CLOSED, 0, "N",                              \
    "Lanczos basis size, 0 = auto (48, fewer if they do not fit in 768 MiB; "  \
    "ARPACK max(2K+1, 20))",                                                   \
    "Lanczos basis size, capped at the operator size; must exceed K (else "    \
    "a usage error). 0 = auto: cmodes' Lanczos 48 vectors, fewer (not below "  \
    "32) when 48 vectors of N doubles (N = the operator size) do not fit in "  \
    "768 MiB, and at least 2K + 8, its first cycle as long as the "            \
    "probabilistic bound needs (at most 65 to 74 steps, fewer when the a "     \
    "posteriori bound is within 4% earlier; a set N below that, or a first "   \
    "cycle past the 768 MiB, runs the bound's remaining steps plain before "   \
    "the first restart); ARPACK max(2K + 1, 20)")                              \
  X(max_iter, "max-iter", INT, 3000, 0, 1e7, CLOSED, 0, "N",                   \
    "Lanczos cycles (ARPACK restarts) per component",                          \
    "budget per component of Lanczos cycles (the first cycle and its thick "   \
    "restarts), or of ARPACK restarts (0: 3000); when it runs out the "        \
    "report is a partial result (exit 5)")                                     \
  X(max_seconds, "max-seconds", REAL, 0, 0, HUGE_VAL, CLOSED, 0, "S",          \
    "eigen-solve time budget, s (0 = none)",                                   \
    "wall-clock budget (s) for all eigen-solves of the analysis, checked "     \
    "after each product, and for what follows them (dense components, rank "   \
    "counts, the damped step of a scene with dashpots), 0 = none (the "        \
    "server caps it with --max-solve-seconds); when it runs out the report "   \
    "is a partial result (exit 5). Breaks bitwise reproducibility")            \
  X(dense_max, "dense-max", INT, 400, 0, 20000, CLOSED, 0, "N",                \
    "auto: components up to N solved densely",                                 \
    "with method `auto`: the largest min(contacts, dofs) of a component "      \
    "solved densely")                                                          \
  X(chebyshev, "chebyshev", INT, 0, 0, 100, CLOSED, 0, "D",                    \
    "ARPACK on a degree-D Chebyshev filter of S (experimental; 0 or 1 = off)", \
    "experimental: ARPACK on a degree-D (>= 2) Chebyshev filter of S that "    \
    "damps the eigenvalues below the squared per-contact estimate "            \
    "([math.md](math.md#numerical-choices)); fewer restarts, more products; "  \
    "0 or 1 = off. With method `auto` the large components then go to "        \
    "ARPACK; method `lanczos` ignores it")                                     \
  X(damping_ratio, "damping-ratio", REAL, 0, 0, HUGE_VAL, CLOSED, 0, "Z",      \
    "modal damping ratio for central difference",                              \
    "modal damping ratio for the central-difference limit")                    \
  X(newmark_gamma, "newmark-gamma", REAL, 0.5, 0.5, HUGE_VAL, CLOSED, 0, "G",  \
    "Newmark gamma",                                                           \
    "Newmark gamma (smaller values are unstable for every step)")              \
  X(newmark_beta, "newmark-beta", REAL, 0.25, 0, HUGE_VAL, CLOSED, 0, "B",     \
    "Newmark beta", "Newmark beta")                                            \
  X(freq_tol, "freq-tol", REAL, 0.01, 0, HUGE_VAL, OPEN_LO, 0, "E",            \
    "accuracy-step frequency error",                                           \
    "relative frequency error allowed by the accuracy step")                   \
  X(failure_probability, "failure-probability", REAL, 1e-9, 0, 0.01, OPEN_LO,  \
    0, "P", "failure probability of the probabilistic upper bound",            \
    "probability that the probabilistic upper bound (and the steps from it) "  \
    "is wrong ([math.md](math.md))")                                           \
  X(rank_max_rows, "rank-max-rows", INT, 20000, 0, 1e9, CLOSED, 0, "N",        \
    "largest component ranked exactly (0: all)",                               \
    "components with more rows are not ranked by SuiteSparseQR: their "        \
    "zero-mode and free-motion counts are null (0: rank every component)")     \
  X(top_contacts, "top-contacts", INT, 5, 0, 1000, CLOSED, 0, "N",             \
    "contacts listed per mode", "contacts listed per mode")                    \
  X(top_bodies, "top-bodies", INT, 5, 0, 1000, CLOSED, 0, "N",                 \
    "bodies listed per mode", "bodies listed per mode")                        \
  X(top_components, "top-components", INT, 10, 0, 1000, CLOSED, 0, "N",        \
    "components listed", "components listed in the report")

typedef enum { CM__OPT_INT, CM__OPT_REAL, CM__OPT_METHOD } cm__opt_type_t;

/* bounds */
#define CM__OPT_CLOSED 0
#define CM__OPT_OPEN_LO 1
#define CM__OPT_OPEN 3 /* both ends excluded */

typedef struct cm__option {
  const char *name;    /* field, JSON and query name ("max_iter") */
  const char *cli;     /* command-line spelling ("max-iter") */
  int short_opt;       /* one-letter spelling, 0 = none */
  cm__opt_type_t type; /* value type */
  double def, lo, hi;  /* default and range (HUGE_VAL: unbounded) */
  int bounds;          /* CM__OPT_CLOSED, _OPEN_LO or _OPEN */
  size_t offset;       /* member in cm_options_t */
  const char *meta;    /* value placeholder in help ("N") */
  const char *help;    /* one line */
  const char *doc;     /* the meaning, for docs */
} cm__option_t;

/* The table (rows in CM_OPTIONS_MAP order) and its size; cannot fail. */
const cm__option_t *cm__options_table(int *n);
/* A row by name (field/JSON name, or the command-line spelling), or NULL. */
const cm__option_t *cm__option_find(const char *name);
/* What the option accepts, e.g. "an integer in 1..1000". */
const char *cm__option_expected(const cm__option_t *o, char *buf, size_t n);
/* The current value as a double (method: its enum value). */
double cm__option_get(const cm__option_t *o, const cm_options_t *opts);

/* The one number parser of the command line and the query string: 1 and
 * *v when all of s is a finite number ("1e-8", "12"), else 0. */
int cm__parse_number(const char *s, double *v);

/* Sets one option from text (command line, query); path names it in the
 * message ("--tol", "?tol"). CM_USAGE when the text is not a value of the
 * option or out of its range: "PATH: 'TEXT' is not a number in (0, 1)". */
int cm__option_parse(cm_context_t *ctx, const cm__option_t *o, const char *path,
                     const char *text, cm_options_t *opts);
/* The same from a JSON value (path "options.tol"). */
int cm__option_from_json(cm_context_t *ctx, const cm__option_t *o,
                         const char *path, const json_t *v, cm_options_t *opts);

/* Checks every option of o against the table; CM_USAGE naming the first
 * one out of range ("tol: 2 is not a number in (0, 1)"). */
int cm__options_check(cm_context_t *ctx, const cm_options_t *o);

/* Server: every key of a JSON object of options (paths "options.KEY"), or
 * one query parameter (path "?KEY"). Unknown names are CM_USAGE listing
 * the known ones. */
int cm__options_from_json(cm_context_t *ctx, const json_t *obj,
                          cm_options_t *opts);
int cm__options_from_query(cm_context_t *ctx, const char *key,
                           const char *value, cm_options_t *opts);
/* Canonical text of every table option (a cache key); malloc'd, NULL when
 * out of memory. */
char *cm__options_key(const cm_options_t *opts);
/* The markdown table of docs/cli.md; malloc'd, NULL when out of memory. */
char *cm__options_markdown(void);

#endif
