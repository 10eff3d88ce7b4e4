/* report_html.h: the report as one self-contained HTML page (inline SVG, a
 * few lines of script, no network), for one scene or a campaign of many;
 * and the softening plan its sensitivity table shows. */
#ifndef CM_REPORT_HTML_H
#define CM_REPORT_HTML_H

#include "analyze/fields.h"
#include "cmodes.h"

#include <stdio.h>

/* Which contacts to soften, and by how much, to reach a target step. */
typedef struct cm__soften {
  double target_h_s; /* wanted central-difference step, s */
  double h0_s;       /* the scene's step before, s */
  double h_s;        /* step of the softened scene (re-solved), s */
  double omega_s;    /* omega_max of the softened scene, rad/s */
  int rounds;        /* re-solves made */
  int reached;       /* 1: h_s >= target_h_s */
  int n;             /* contacts softened */
  int *contact;      /* size n: scene contacts, most softened first */
  double *factor;    /* size n: new k / old k (normal and tangential) */
  double seconds;    /* wall time of the re-solves */
} cm__soften_t;

/* Plans and confirms a softening of scene (analysed as r with fields f, at
 * least one mode) to reach target_h_s (<= 0: the deck step when the deck is
 * unstable, else 1.1 h): in each round, for every listed mode faster than
 * the target, the fewest top-share contacts whose first-order change
 * d lambda = -lambda sum e_c f_c (d lambda / d k_c = xi_c^2 = lambda e_c /
 * k_c) reaches it with f_c <= 0.75, then a re-solve (12 modes or more);
 * at most 8 rounds.
 * out is owned by the caller (cm__soften_free). */
int cm__soften_plan(cm_context_t *ctx, const cm_scene_t *scene,
                    const cm_options_t *opts, const cm_report_t *r,
                    const cm__fields_t *f, double target_h_s,
                    cm__soften_t *out);
void cm__soften_free(cm__soften_t *s);

typedef struct cm__html_item {
  const char *title;          /* scene name or path */
  const cm_scene_t *scene;    /* NULL for a system given as matrices */
  const cm_report_t *report;  /* the analysis */
  const cm__fields_t *fields; /* full fields, or NULL */
  const cm__soften_t *soften; /* softening plan, or NULL */
} cm__html_item_t;

/* One page: the report of items[0] when n == 1, else a campaign page (a
 * sortable table, then each scene's section). CM_OK or CM_IO. */
int cm__report_write_html(FILE *out, const cm__html_item_t *items, int n,
                          const char *title);
/* Analyses scene (fields, and the softening plan up to 1e5 contacts) and
 * returns its page (malloc'd, caller frees) in *html, *len: for the
 * server. */
int cm__report_html_mem(cm_context_t *ctx, const cm_scene_t *scene,
                        const cm_options_t *opts, const char *title,
                        cm_report_t *r, cm__fields_t *f, int st, char **html,
                        size_t *len);
int cm__report_html_scene(cm_context_t *ctx, const cm_scene_t *scene,
                          const cm_options_t *opts, const char *title,
                          char **html, size_t *len);

/* The page of a time series written by `cmodes track --format jsonl`
 * (text of length len): the steps against time and a row per snapshot.
 * CM_OK, CM_PARSE naming the line, or CM_IO. */
int cm__report_track_html(cm_context_t *ctx, FILE *out, const char *text,
                          size_t len, const char *title);
/* The same with the page's style sheet and script (report_html_track.c). */
int cm__report_write_track_html(cm_context_t *ctx, FILE *out, const char *text,
                                size_t len, const char *title, const char *css,
                                const char *js);

#endif
