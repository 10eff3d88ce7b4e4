/* report_html_track.c: the page of a time series written by `cmodes track
 * --format jsonl`: the steps against time as inline SVG (critical,
 * certified, per-contact, undamped, the deck's step) and one table row per
 * snapshot. Not for single scenes (report_html.c). Units: s, rad/s. */
#include "internal.h"
#include "report/report_html.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *key;  /* jsonl field, s */
  const char *name; /* legend */
  const char *col;  /* colour */
  const char *dash; /* stroke-dasharray, "" solid */
} cm__series_t;

static const cm__series_t cm__series[5] = {
    {"central_difference", "critical step (central difference)", "#2c7fb8", ""},
    {"certified", "certified step", "#5a6777", "2,3"},
    {"undamped", "without the dashpots", "#9fb6cc", "6,3"},
    {"per_contact", "per-contact step (unstable above the critical)", "#c0392b",
     "6,3"},
    {"deck", "the deck's step", "#2e8b57", "10,4"}};

/* Value k of line i: the series, or the deck's step (fraction times the
 * critical step); NAN when absent. */
static double cm__tval(json_t *row, int k) {
  if (k == 4) {
    json_t *f = json_object_get(row, "deck_fraction");
    json_t *h = json_object_get(row, "central_difference");
    return json_is_number(f) && json_is_number(h)
               ? json_number_value(f) * json_number_value(h)
               : NAN;
  }
  json_t *v = json_object_get(row, cm__series[k].key);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static double cm__tx(json_t *row, int use_time) {
  json_t *v = json_object_get(row, use_time ? "time" : "step");
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static void cm__track_chart(FILE *o, json_t *rows, int use_time) {
  size_t n = json_array_size(rows);
  double x0 = INFINITY, x1 = -INFINITY, ymax = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *r = json_array_get(rows, i);
    double x = cm__tx(r, use_time);
    x0 = fmin(x0, x), x1 = fmax(x1, x);
    for (int k = 0; k < 5; k++)
      if (isfinite(cm__tval(r, k)))
        ymax = fmax(ymax, cm__tval(r, k));
  }
  if (!(ymax > 0) || !isfinite(x0))
    return;
  if (!(x1 > x0))
    x1 = x0 + 1;
  ymax *= 1.08;
  const int W = 1000, H = 320, L = 80, R = 20, T = 14, B = 40;
  double sx = (W - L - R) / (x1 - x0), sy = (H - T - B) / ymax;
  fprintf(o,
          "<div class=\"fig\"><svg viewBox=\"0 0 %d %d\" width=\"100%%\" "
          "role=\"img\" aria-label=\"steps over time\">",
          W, H);
  double ty = ymax / 5, p10 = pow(10, floor(log10(ty))), f = ty / p10;
  ty = p10 * (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10);
  for (double y = 0; y <= ymax; y += ty)
    fprintf(o,
            "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#e3e8ee\"/><text x=\"%d\" y=\"%.1f\" "
            "text-anchor=\"end\">%.3g</text>",
            L, W - R, H - B - y * sy, H - B - y * sy, L - 4, H - B - y * sy + 4,
            y);
  fprintf(o,
          "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#3a4654\"/>"
          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>"
          "<text x=\"%.1f\" y=\"%d\">%.6g</text><text x=\"%d\" y=\"%d\" "
          "text-anchor=\"end\">%.6g</text>",
          L, H - B, W - R, H - B, L + (W - L - R) / 2, H - 6,
          use_time ? "time (s)" : "timestep", (double)L, H - B + 16, x0, W - R,
          H - B + 16, x1);
  for (int k = 0; k < 5; k++) {
    int open = 0;
    for (size_t i = 0; i < n; i++) {
      json_t *r = json_array_get(rows, i);
      double y = cm__tval(r, k), x = cm__tx(r, use_time);
      if (!isfinite(y) || !isfinite(x))
        continue;
      if (!open)
        fprintf(o,
                "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                "stroke-dasharray=\"%s\" d=\"",
                cm__series[k].col, cm__series[k].dash);
      fprintf(o, "%s%.1f %.1f", open ? "L" : "M", L + (x - x0) * sx,
              H - B - y * sy);
      open = 1;
    }
    if (open)
      fputs("\"/>", o);
  }
  /* points of the critical step, with their values on hover */
  for (size_t i = 0; i < n; i++) {
    json_t *r = json_array_get(rows, i);
    double y = cm__tval(r, 0), x = cm__tx(r, use_time);
    if (isfinite(y) && isfinite(x))
      fprintf(o,
              "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#2c7fb8\">"
              "<title>timestep %.0f: critical %.6g s</title></circle>",
              L + (x - x0) * sx, H - B - y * sy, cm__tx(r, 0), y);
  }
  fputs("</svg><div class=\"cap\">", o);
  for (int k = 0; k < 5; k++)
    fprintf(o, "<span style=\"color:%s\">&#9632;</span> %s%s",
            cm__series[k].col, cm__series[k].name, k < 4 ? " &nbsp; " : "");
  fputs("</div></div>\n", o);
}

static void cm__tcell(FILE *o, json_t *row, const char *key) {
  json_t *v = json_object_get(row, key);
  if (json_is_number(v))
    fprintf(o, "<td data-v=\"%.17g\">%.6g</td>", json_number_value(v),
            json_number_value(v));
  else
    fputs("<td data-v=\"-1\">&mdash;</td>", o);
}

/* The lines of `cmodes track --format jsonl`, one object each, into
 * *out (a new array, the caller's). */
static int cm__track_rows(cm_context_t *ctx, const char *text, size_t len,
                          json_t **out) {
  json_t *rows = json_array();
  if (!rows)
    return CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
  size_t at = 0;
  int line = 0;
  while (at < len) {
    size_t end = at;
    while (end < len && text[end] != '\n')
      end++;
    line++;
    size_t k = at;
    while (k < end && (text[k] == ' ' || text[k] == '\r' || text[k] == '\t'))
      k++;
    if (k < end) {
      json_error_t err;
      json_t *r = json_loadb(text + at, end - at, 0, &err);
      if (!json_is_object(r) || !json_object_get(r, "central_difference")) {
        json_decref(r);
        json_decref(rows);
        return CM__ERR(ctx, CM_PARSE, NULL,
                       "line %d: expected a line of cmodes track --format "
                       "jsonl (%s)",
                       line, r ? "no central_difference" : err.text);
      }
      json_array_append_new(rows, r);
    }
    at = end + 1;
  }
  if (json_array_size(rows) == 0) {
    json_decref(rows);
    return CM__ERR(ctx, CM_PARSE, NULL, "no snapshot in the time series");
  }
  *out = rows;
  return CM_OK;
}

/* The rows of the snapshot table (row lo highlighted). */
static void cm__track_table_rows(FILE *o, json_t *rows, size_t lo) {
  size_t n = json_array_size(rows);
  static const char *keys[] = {"step",
                               "time",
                               "contacts",
                               "omega_max",
                               "central_difference",
                               "certified",
                               "per_contact",
                               "deck_fraction"};
  for (size_t i = 0; i < n; i++) {
    json_t *r = json_array_get(rows, i), *ids;
    fprintf(o, "<tr%s>", i == lo ? " class=\"hi\"" : "");
    for (int k = 0; k < 8; k++)
      cm__tcell(o, r, keys[k]);
    fputs("<td class=\"l\">", o);
    size_t q;
    json_t *id;
    ids = json_object_get(r, "limiting_ids");
    json_array_foreach(ids, q, id) {
      const char *s = json_string_value(id);
      for (; s && *s; s++)
        fputs(*s == '<' ? "&lt;" : *s == '&' ? "&amp;" : (char[2]){*s, 0}, o);
      fputs(q + 1 < json_array_size(ids) ? ", " : "", o);
    }
    fputs("</td>", o);
    cm__tcell(o, r, "matvecs");
    fputs("</tr>", o);
  }
}

int cm__report_write_track_html(cm_context_t *ctx, FILE *o, const char *text,
                                size_t len, const char *title, const char *css,
                                const char *js) {
  /* ---- parse one JSON object per line ---- */
  json_t *rows = NULL;
  int st = cm__track_rows(ctx, text, len, &rows);
  if (st)
    return st;
  size_t n = json_array_size(rows);
  /* ---- headline: the smallest step and the largest deck fraction ---- */
  size_t lo = 0, hi = 0;
  for (size_t i = 1; i < n; i++) {
    if (cm__tval(json_array_get(rows, i), 0) <
        cm__tval(json_array_get(rows, lo), 0))
      lo = i;
    json_t *f = json_object_get(json_array_get(rows, i), "deck_fraction");
    json_t *g = json_object_get(json_array_get(rows, hi), "deck_fraction");
    if (json_is_number(f) &&
        (!json_is_number(g) || json_number_value(f) > json_number_value(g)))
      hi = i;
  }
  int use_time = 1;
  for (size_t i = 0; i < n; i++)
    use_time &=
        json_is_number(json_object_get(json_array_get(rows, i), "time"));
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>",
        o);
  for (const char *s = title; *s; s++)
    fputs(*s == '<' ? "&lt;" : *s == '&' ? "&amp;" : (char[2]){*s, 0}, o);
  fprintf(o, "</title><style>%s</style></head>\n<body><main><h1>", css);
  for (const char *s = title; *s; s++)
    fputs(*s == '<' ? "&lt;" : *s == '&' ? "&amp;" : (char[2]){*s, 0}, o);
  json_t *rl = json_array_get(rows, lo), *rh = json_array_get(rows, hi);
  json_t *fh = json_object_get(rh, "deck_fraction");
  fprintf(o,
          "</h1><p class=\"sub\">%zu snapshots analysed by cmodes track."
          "</p><div class=\"cards\"><div class=\"card main\"><div "
          "class=\"k\">smallest critical step over the run</div><div "
          "class=\"big\"><span class=\"v\" id=\"t-hmin\" data-v=\"%.17g\">"
          "%.6g</span>&nbsp;s</div>at timestep %.0f</div>",
          n, cm__tval(rl, 0), cm__tval(rl, 0), cm__tx(rl, 0));
  if (json_is_number(fh)) {
    double f = json_number_value(fh);
    fprintf(o,
            "<div class=\"card %s\"><div class=\"k\">deck step, largest "
            "fraction of critical</div><div class=\"big\"><span class=\"v\" "
            "id=\"t-deck\" data-v=\"%.17g\">%.4g</span></div>at timestep "
            "%.0f: <span class=\"%s\">%s</span></div>",
            f > 1 ? "warn" : "ok", f, f, cm__tx(rh, 0), f > 1 ? "bad" : "good",
            f > 1 ? "unstable" : "stable throughout");
  }
  fputs("</div><h2>Steps over the run</h2>", o);
  cm__track_chart(o, rows, use_time);
  fputs("<h2>Snapshots</h2><table class=\"sort\" id=\"track\"><thead><tr>"
        "<th>timestep</th><th>time (s)</th><th>contacts</th><th>&omega;max "
        "(rad/s)</th><th>CD step (s)</th><th>certified (s)</th>"
        "<th>per-contact (s)</th><th>deck fraction</th><th class=\"l\">"
        "limiting particles</th><th>matvecs</th></tr></thead><tbody>",
        o);
  cm__track_table_rows(o, rows, lo);
  fprintf(o,
          "</tbody></table><p class=\"note\">Click a column to sort; the "
          "highlighted row has the smallest step. Written by cmodes %s; "
          "self-contained.</p></main><script>%s</script></body></html>\n",
          CM_VERSION_STRING, js);
  json_decref(rows);
  return ferror(o) ? CM__ERR(ctx, CM_IO, NULL, "write error") : CM_OK;
}
