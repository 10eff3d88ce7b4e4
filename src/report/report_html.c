/* report_html.c: the report as one self-contained HTML page: headline, step
 * table, spectrum chart, the scene drawn in inline SVG (contacts coloured by
 * their share of the top mode, bodies by kinetic share), softening table,
 * components, solver. No network, no external files; a few lines of script
 * sort the campaign table. Not for the numbers themselves (analyze/) nor the
 * softening plan (soften.c). Units: rad/s, s, N/m. */
#include "report/report_html.h"
#include "internal.h"
#include "io/fields_io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Above this many drawn elements (contacts times views) the scene is
 * aggregated on a grid and only the top contacts are drawn one by one. */
#define CM__HTML_DETAIL_MAX 5000
#define CM__HTML_TOP_DRAWN                                                     \
  300                         /* contacts drawn individually when aggregated   \
                               */
#define CM__HTML_SENS_ROWS 15 /* rows of the sensitivity table */
#define CM__HTML_PLAN_ROWS 40 /* rows of the softening plan shown */

/* ---- small writers ---------------------------------------------------------
 */

static void cm__esc(FILE *o, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '<':
      fputs("&lt;", o);
      break;
    case '>':
      fputs("&gt;", o);
      break;
    case '&':
      fputs("&amp;", o);
      break;
    case '"':
      fputs("&quot;", o);
      break;
    default:
      fputc(*s, o);
    }
  }
}

/* A number for reading (6 digits), or a dash. */
static void cm__n(FILE *o, double v) {
  if (isfinite(v))
    fprintf(o, "%.6g", v);
  else
    fputs("&mdash;", o);
}

/* <span id=.. data-v=full precision>readable</span>: the browser test
 * compares data-v with the JSON report. */
static void cm__val(FILE *o, const char *pre, const char *id, double v,
                    const char *unit) {
  fprintf(o, "<span class=\"v\" id=\"%s%s\" data-v=\"%.17g\">", pre, id, v);
  cm__n(o, v);
  fprintf(o, "</span>%s%s", unit && *unit ? "&nbsp;" : "", unit ? unit : "");
}

/* Colour of t in [0, 1]: pale blue-grey, amber, red, dark red. */
static void cm__heat(double t, char out[8]) {
  static const double st[4][3] = {
      {214, 221, 230}, {246, 195, 66}, {228, 87, 46}, {122, 12, 12}};
  t = isfinite(t) ? fmin(fmax(t, 0), 1) : 0;
  double x = t * 3;
  int k = x >= 3 ? 2 : (int)x;
  double u = x - k;
  int rgb[3];
  for (int i = 0; i < 3; i++)
    rgb[i] = (int)lround(st[k][i] + u * (st[k + 1][i] - st[k][i]));
  snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* Colour of t in [0, 1] for bodies: white to blue. */
static void cm__blue(double t, char out[8]) {
  t = isfinite(t) ? fmin(fmax(t, 0), 1) : 0;
  int r = (int)lround(244 - t * (244 - 44)),
      g = (int)lround(246 - t * (246 - 127)),
      b = (int)lround(248 - t * (248 - 184));
  snprintf(out, 8, "#%02x%02x%02x", r, g, b);
}

/* 1-2-5 tick spacing for [0, xmax] with about n ticks. */
static double cm__tick(double xmax, int n) {
  double raw = xmax / n, p = pow(10, floor(log10(raw))), f = raw / p;
  return p * (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10);
}

static const char *cm__label(const cm_scene_t *s, int b, char *buf,
                             size_t size) {
  if (!s) {
    snprintf(buf, size, "#%d", b);
    return buf;
  }
  return cm_scene_body_label(s, b, buf, size);
}

/* "c12 name (a-b)" for contact c. */
/* "c3 name (a-b)"; for matrices (no scene) "c3 name" with the row's name
 * from the report (may be NULL). */
static void cm__contact_label(FILE *o, const cm_scene_t *s, int c,
                              const char *row_name) {
  char ba[128], bb[128];
  fprintf(o, "c%d", c);
  if (!s) {
    if (row_name) {
      fputc(' ', o);
      cm__esc(o, row_name);
    }
    return;
  }
  const char *nm = cm_scene_contact_name(s, c);
  if (nm) {
    fputc(' ', o);
    cm__esc(o, nm);
  }
  fputs(" (", o);
  cm__esc(o, cm__label(s, s->contacts[c].a, ba, sizeof ba));
  fputs("&ndash;", o);
  cm__esc(o, cm__label(s, s->contacts[c].b, bb, sizeof bb));
  fputc(')', o);
}

/* ---- page frame ------------------------------------------------------------
 */

static const char *cm__css =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
    "color:#1d2733;background:#f5f7fa;margin:0}"
    "main{max-width:1100px;margin:0 auto;padding:18px 22px 40px}"
    "h1{font-size:22px;margin:8px 0 2px}h2{font-size:17px;margin:26px 0 8px;"
    "border-bottom:1px solid #d5dbe3;padding-bottom:3px}"
    "h3{font-size:15px;margin:14px 0 6px}"
    ".sub{color:#5a6777;margin:0 0 12px}"
    ".cards{display:flex;flex-wrap:wrap;gap:10px}"
    ".card{background:#fff;border:1px solid #d5dbe3;border-radius:8px;"
    "padding:10px 14px;min-width:180px;flex:1 1 0}"
    ".card .k{color:#5a6777;font-size:12px;text-transform:uppercase;"
    "letter-spacing:.04em}.card .big{font-size:22px;font-weight:600}"
    ".card.main{border-color:#2c7fb8;border-width:2px}"
    ".card.warn{border-color:#c0392b;background:#fff6f4}"
    ".card.ok{border-color:#2e8b57}"
    "table{border-collapse:collapse;background:#fff;margin:6px 0;"
    "font-size:13px}th,td{border:1px solid #dde3ea;padding:3px 8px;"
    "text-align:right}th{background:#eef2f6;font-weight:600}"
    "td.l,th.l{text-align:left}tr.hi td{background:#fff1e6}"
    "table.sort th{cursor:pointer}table.sort th:hover{background:#dfe7f0}"
    ".fig{background:#fff;border:1px solid #d5dbe3;border-radius:8px;"
    "padding:8px;margin:6px 0}.views{display:flex;flex-wrap:wrap;gap:8px}"
    ".view{flex:1;min-width:300px}.cap{color:#5a6777;font-size:12px;"
    "margin:4px 2px}svg text{font:11px system-ui,sans-serif;fill:#3a4654}"
    ".note{color:#5a6777}.bad{color:#b0271b;font-weight:600}"
    ".good{color:#237a47;font-weight:600}a{color:#1f5f9a}"
    "section.scene{border-top:3px solid #2c7fb8;margin-top:30px}"
    "nav.toc a{margin-right:12px}"
    "@media print{body{background:#fff}main{max-width:none}"
    ".card,.fig{break-inside:avoid}section.scene{break-before:page}"
    "h2{break-after:avoid}}";

/* Sorts a table.sort by the clicked column (numbers by data-v). */
static const char *cm__js =
    "document.querySelectorAll('table.sort').forEach(function(t){"
    "t.querySelectorAll('th').forEach(function(th,i){th.addEventListener("
    "'click',function(){var b=t.tBodies[0],r=[].slice.call(b.rows),"
    "d=th.dataset.d=th.dataset.d==='1'?'-1':'1';r.sort(function(x,y){"
    "var p=x.cells[i],q=y.cells[i],u=p.dataset.v,w=q.dataset.v;"
    "var c=(u!==undefined&&w!==undefined)?(+u)-(+w):"
    "p.textContent.localeCompare(q.textContent);return d*(c||0)});"
    "r.forEach(function(x){b.appendChild(x)})})})});";

static void cm__page_open(FILE *o, const char *title) {
  fputs(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>",
      o);
  cm__esc(o, title);
  fprintf(o, "</title><style>%s</style></head>\n<body><main>\n", cm__css);
}

static void cm__page_close(FILE *o) {
  fprintf(o,
          "<p class=\"note\">Written by cmodes %s. Self-contained: no "
          "network, no external files.</p>\n</main><script>%s</script>"
          "</body></html>\n",
          CM_VERSION_STRING, cm__js);
}

/* ---- headline --------------------------------------------------------------
 */

static void cm__card_open(FILE *o, const char *cls, const char *key) {
  fprintf(o, "<div class=\"card %s\"><div class=\"k\">%s</div>", cls, key);
}

static void cm__headline(FILE *o, const char *p, const cm__html_item_t *it) {
  const cm_report_t *r = it->report;
  const cm_step_t *cd = &r->central_difference;
  fputs("<div class=\"cards\">", o);
  cm__card_open(o, "main",
                r->dashpots ? "stable step, central difference "
                              "(damped)"
                            : "stable step, central difference");
  fputs("<div class=\"big\">", o);
  cm__val(o, p, "h-cd", cd->h_s, "s");
  fputs("</div>certified ", o);
  cm__val(o, p, "h-cert", cd->certified_s, "s");
  fputs("<br>&omega;<sub>max</sub> ", o);
  cm__val(o, p, "h-omega", r->omega_max, "rad/s");
  fputs("</div>", o);
  /* per-contact estimate */
  /* the engines' step 2 / max sqrt(S_cc), against the critical step shown
   * (damped or not) */
  double hpc = r->pc_omega_max > 0 ? 2 / r->pc_omega_max : NAN;
  double over = hpc / cd->h_s - 1;
  cm__card_open(o, over > 1e-9 ? "warn" : "", "per-contact estimate");
  fputs("<div class=\"big\">", o);
  cm__val(o, p, "h-pc", hpc, "s");
  fputs("</div>coupled/per-contact &omega; = ", o);
  cm__val(o, p, "h-ratio", r->pc_ratio, "");
  if (over > 1e-9)
    fprintf(o,
            "<br><span class=\"bad\">%.0f%% longer than the critical "
            "step: unstable</span>",
            100 * over);
  fputs("</div>", o);
  /* model, deck, damping */
  cm__card_open(o, "", "contact model");
  fprintf(o, "<div id=\"%sh-model\" style=\"font-weight:600\">", p);
  cm__esc(o, r->model ? r->model : "normal springs only");
  fputs("</div>", o);
  if (r->dashpots) {
    fputs("undamped step ", o);
    cm__val(o, p, "h-undamped", r->cd_undamped.h_s, "s");
    fputs("<br>modal damped limit ", o);
    cm__val(o, p, "h-modal", r->damped_modal_h_s, "s");
  }
  if (r->deck_timestep_s > 0) {
    fputs("<br>deck step ", o);
    cm__val(o, p, "h-deck", r->deck_timestep_s, "s");
    fputs(" = ", o);
    cm__val(o, p, "h-deck-frac", r->deck_fraction, "");
    fprintf(o, " of critical: <span class=\"%s\">%s</span>",
            r->deck_fraction > 1 ? "bad" : "good",
            r->deck_fraction > 1 ? "unstable" : "stable");
  }
  fputs("</div>", o);
  /* what limits it */
  cm__card_open(o, "", "limited by");
  if (r->nmodes > 0 && r->modes[0].ncontacts > 0) {
    const cm_mode_t *m = &r->modes[0];
    int ties = 0;
    const cm__fields_t *f = it->fields;
    for (int c = 0; f && f->comp_omega && c < f->ncomp; c++)
      ties +=
          c != m->component && f->comp_omega[c] >= r->omega_max * (1 - 1e-9);
    fprintf(o, "component %d", m->component);
    if (ties)
      fprintf(o, " <span class=\"bad\">+ %d tied</span>", ties);
    fputs("<br>", o);
    for (int i = 0; i < m->ncontacts && i < 3; i++) {
      cm__contact_label(o, it->scene, m->contacts[i].index,
                        m->contacts[i].name);
      fprintf(o, " <b>%.1f%%</b><br>", 100 * m->contacts[i].share);
    }
  } else {
    fputs("no contact mode", o);
  }
  fputs("</div>", o);
  /* the softening plan in one line, linked to its table */
  const cm__soften_t *sp = it->soften;
  if (sp && sp->target_h_s > 0 && sp->n > 0) {
    cm__card_open(o, sp->reached ? "ok" : "warn", "to reach the target step");
    fprintf(o,
            "<div class=\"big\">%.6g&nbsp;s</div>soften <a "
            "href=\"#%splan\"><b>%d contact%s</b></a> (k &times; %.2f "
            "to %.2f): re-solved %.6g s, %s",
            sp->target_h_s, p, sp->n, sp->n == 1 ? "" : "s", sp->factor[0],
            sp->factor[sp->n - 1], sp->h_s,
            sp->reached ? "reached" : "not reached");
    fputs("</div>", o);
  }
  fputs("</div>\n", o);
}

/* ---- step table ------------------------------------------------------------
 */

static void cm__step_row(FILE *o, const char *name, const cm_step_t *s) {
  fprintf(o, "<tr><td class=\"l\">%s</td><td>", name);
  cm__n(o, s->h_s);
  fputs("</td><td>", o);
  cm__n(o, s->certified_s);
  fputs("</td><td class=\"l note\">", o);
  cm__esc(o, isfinite(s->h_s) ? "" : s->note);
  fputs("</td></tr>", o);
}

static void cm__steps(FILE *o, const cm_report_t *r) {
  fputs("<table><tr><th class=\"l\">integrator</th><th>critical step (s)</th>"
        "<th>certified (s)</th><th class=\"l\"></th></tr>",
        o);
  cm__step_row(o,
               r->dashpots ? "central difference, leapfrog, velocity "
                             "Verlet (dashpots)"
                           : "central difference, leapfrog, velocity "
                             "Verlet, symplectic Euler",
               &r->central_difference);
  if (r->dashpots)
    cm__step_row(o, "central difference without the dashpots", &r->cd_undamped);
  cm__step_row(o, "RK3", &r->rk3);
  cm__step_row(o, "RK4", &r->rk4);
  cm__step_row(o, "explicit Euler", &r->explicit_euler);
  char nm[96];
  snprintf(nm, sizeof nm, "Newmark(&gamma; %g, &beta; %g)", r->newmark_gamma,
           r->newmark_beta);
  cm__step_row(o, nm, &r->newmark);
  fputs("<tr><td class=\"l\">accuracy (CD frequency error &le; ", o);
  cm__n(o, r->freq_tol);
  fputs(")</td><td>", o);
  cm__n(o, r->accuracy_h_s);
  fputs("</td><td></td><td></td></tr></table>\n", o);
}

/* ---- spectrum: histogram of sqrt(S_cc), modes, bounds on one axis
 * -------------- */

static void cm__spectrum(FILE *o, const cm__html_item_t *it) {
  const cm_report_t *r = it->report;
  const cm__fields_t *f = it->fields;
  double xmax = fmax(r->omega_upper, r->omega_max);
  if (!(xmax > 0) || !isfinite(xmax))
    return;
  xmax *= 1.06;
  const int W = 1000, H = 230, L = 50, R = 16, T = 26, B = 36, NB = 80;
  double sx = (W - L - R) / xmax;
  int cnt[80] = {0}, cmax = 1;
  if (f && f->pc_omega) {
    for (int c = 0; c < f->nc; c++) {
      double w = f->pc_omega[c];
      if (!isfinite(w))
        continue;
      int b = (int)(w / xmax * NB);
      b = b < 0 ? 0 : b >= NB ? NB - 1 : b;
      cnt[b]++;
    }
    for (int b = 0; b < NB; b++)
      cmax = cnt[b] > cmax ? cnt[b] : cmax;
  }
  fprintf(o,
          "<div class=\"fig\"><svg viewBox=\"0 0 %d %d\" width=\"100%%\" "
          "role=\"img\" aria-label=\"spectrum\">",
          W, H);
  /* histogram (count on a square-root scale so single contacts show) */
  double bw = (W - L - R) / (double)NB, hmax = H - T - B;
  for (int b = 0; b < NB; b++) {
    if (!cnt[b])
      continue;
    double h = sqrt((double)cnt[b] / cmax) * hmax * 0.8;
    fprintf(o,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"#9fb6cc\"><title>%d contacts with sqrt(S_cc) in "
            "[%.4g, %.4g) rad/s</title></rect>",
            L + b * bw + 0.5, H - B - h, bw - 1, h, cnt[b], b * xmax / NB,
            (b + 1) * xmax / NB);
  }
  /* axis and ticks */
  fprintf(o,
          "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#3a4654\"/>",
          L, H - B, W - R, H - B);
  double tk = cm__tick(xmax, 8);
  for (double x = 0; x <= xmax * 1.0001; x += tk) {
    double px = L + x * sx;
    fprintf(o,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"#3a4654\"/><text x=\"%.1f\" y=\"%d\" "
            "text-anchor=\"middle\">%.4g</text>",
            px, H - B, px, H - B + 4, px, H - B + 16, x);
  }
  fprintf(o,
          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">&omega; "
          "(rad/s)</text>",
          L + (W - L - R) / 2, H - 4);
  /* bounds */
  struct {
    double w;
    const char *name, *col, *dash;
  } mk[3] = {
      {r->omega_lower, "per-contact max = lower bound", "#2c7fb8", "5,3"},
      {r->omega_upper, "Gershgorin upper bound", "#5a6777", "2,3"},
      {r->deck_timestep_s > 0 ? 2 / r->deck_timestep_s : NAN, "2 / deck step",
       "#2e8b57", "8,3"}};
  for (int i = 0; i < 3; i++) {
    if (!isfinite(mk[i].w))
      continue;
    double px = L + mk[i].w * sx;
    if (px > W - R)
      continue;
    fprintf(o,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\">"
            "<title>%s: %.6g rad/s</title></line>"
            "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\" "
            "style=\"fill:%s\">%s</text>",
            px, T - 6 + 12 * i, px, H - B, mk[i].col, mk[i].dash, mk[i].name,
            mk[i].w, px + (i == 1 ? -4 : 4), T - 8 + 12 * i + 10,
            i == 1 ? "end" : "start", mk[i].col, mk[i].name);
  }
  /* modes: stems, the top one thickest */
  for (int i = r->nmodes - 1; i >= 0; i--) {
    const cm_mode_t *m = &r->modes[i];
    double px = L + m->omega * sx;
    fprintf(o,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"#c0392b\" stroke-width=\"%d\"><title>mode %d: "
            "&omega; = %.9g rad/s, residual %.2g, component %d</title>"
            "</line>",
            px, T + 30, px, H - B, i == 0 ? 3 : 1, i + 1, m->omega, m->residual,
            m->component);
  }
  if (r->nmodes > 0) { /* right of the top stem: no other stem is there */
    double px = L + r->modes[0].omega * sx;
    int right = px < W - R - 130;
    fprintf(o,
            "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\" "
            "style=\"fill:#c0392b;font-weight:600\">&omega;max %.6g</text>",
            px + (right ? 5 : -5), T + 44, right ? "start" : "end",
            r->modes[0].omega);
  }
  fputs(
      "</svg><div class=\"cap\">Blue bars: how many contacts have each "
      "per-contact frequency sqrt(S<sub>cc</sub>) = sqrt(k<sub>c</sub> "
      "(J M<sup>-1</sup> J<sup>T</sup>)<sub>cc</sub>) (bar height on a "
      "square-root scale). Red stems: the coupled modes (hover for residuals). "
      "Dashed: the bounds, and 2/h of the deck's step when there is one; "
      "a step is stable while every red stem is left of 2/h.</div></div>\n",
      o);
}

/* ---- the scene drawn
 * ---------------------------------------------------------- */

typedef struct {
  int ax, ay;       /* world axes drawn horizontally and vertically */
  int depth;        /* axis towards the viewer (-1: none) */
  const char *name; /* caption */
} cm__view_t;

typedef struct {
  double lo[3], hi[3];    /* world box of what is drawn */
  double *rad;            /* size nbodies: drawn radius (contact distance) */
  double emax, kmax;      /* largest contact and body shares */
  const double *e;        /* size nc: share of each contact in the top mode */
  const double *kin;      /* size nb or NULL */
  const cm__soften_t *sp; /* the softening plan, or NULL */
} cm__draw_t;

static double cm__px(const cm__draw_t *d, int a, double v, double s, int off) {
  return off + (v - d->lo[a]) * s;
}

typedef struct {
  double key; /* draw order */
  int i;      /* element */
} cm__ord_t;

static int cm__ord_cmp(const void *pa, const void *pb) {
  const cm__ord_t *a = pa, *b = pb;
  return a->key != b->key ? (a->key < b->key ? -1 : 1) : a->i - b->i;
}

/* The point of contact c on side q in out (0: body a's centre, 1: body
 * b's centre, or the contact point when b is fixed or the world). A
 * contact across a periodic boundary touches an image of b, drawn at the
 * image's centre (x_a + arm_a - arm_b): a short line beside a, not one
 * across the box. */
static void cm__end(const cm_scene_t *s, int c, int q, double out[3]) {
  const cm_contact_t *k = &s->contacts[c];
  int b = q ? k->b : k->a;
  const double *x =
      b < 0 || s->bodies[b].fixed ? k->point : s->bodies[b].position;
  int img = q && cm__contact_imaged(s, k);
  for (int i = 0; i < 3; i++)
    out[i] =
        img ? s->bodies[k->a].position[i] + k->arm_a[i] - k->arm_b[i] : x[i];
}

static void cm__contact_line(FILE *o, const cm_scene_t *s, const cm__draw_t *d,
                             const cm__view_t *v, double sc, int ox, int oy,
                             int H, int c, int titled) {
  double p[3], q[3];
  cm__end(s, c, 0, p), cm__end(s, c, 1, q);
  double t = d->emax > 0 ? sqrt(d->e[c] / d->emax) : 0;
  char col[8];
  cm__heat(t, col);
  fprintf(o,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
          "stroke=\"%s\" stroke-width=\"%.1f\"",
          cm__px(d, v->ax, p[v->ax], sc, ox),
          H - cm__px(d, v->ay, p[v->ay], sc, oy),
          cm__px(d, v->ax, q[v->ax], sc, ox),
          H - cm__px(d, v->ay, q[v->ay], sc, oy), col, 1 + 3 * t);
  if (titled) {
    fputs("><title>", o);
    cm__contact_label(o, s, c, NULL);
    fprintf(o, ": share %.3g, k %.4g N/m</title></line>", d->e[c],
            s->contacts[c].stiffness);
  } else {
    fputs("/>", o);
  }
}

/* A coarse view: a grid of cells, each coloured by the largest share of
 * the contacts whose midpoint falls in it. */
static void cm__view_grid(FILE *o, const cm_scene_t *s, const cm__draw_t *d,
                          const cm__view_t *v, double sc, int W, int H,
                          int pad) {
  int nc = s->ncontacts, ox = pad, oy = pad;
  int G = (int)sqrt(nc / 4.0);
  G = G < 24 ? 24 : G > 90 ? 90 : G;
  int GY = (int)ceil(G * (H - 2.0 * pad) / (W - 2.0 * pad));
  GY = GY < 1 ? 1 : GY > 2 * G ? 2 * G : GY;
  double *cell = malloc(sizeof(double) * (size_t)G * GY);
  if (cell) {
    for (int i = 0; i < G * GY; i++)
      cell[i] = -1;
    for (int c = 0; c < nc; c++) {
      double p[3], q[3];
      cm__end(s, c, 0, p), cm__end(s, c, 1, q);
      double mx = 0.5 * (p[v->ax] + q[v->ax]) - d->lo[v->ax];
      double my = 0.5 * (p[v->ay] + q[v->ay]) - d->lo[v->ay];
      int ix = (int)(mx * sc / ((W - 2.0 * pad) / G));
      int iy = (int)(my * sc / ((H - 2.0 * pad) / GY));
      ix = ix < 0 ? 0 : ix >= G ? G - 1 : ix;
      iy = iy < 0 ? 0 : iy >= GY ? GY - 1 : iy;
      double *cv = &cell[iy * G + ix];
      *cv = fmax(*cv, d->e[c]);
    }
    /* colours quantised to NL levels; one path per level made of
     * horizontal runs (a stroke as high as a cell): a few bytes a run */
    enum { NL = 24 };
    double cw = (W - 2.0 * pad) / G, ch = (H - 2.0 * pad) / GY;
    char col[8];
    for (int L = 0; L < NL; L++) {
      int open = 0;
      for (int iy = 0; iy < GY; iy++) {
        for (int ix = 0; ix < G;) {
          double e = cell[iy * G + ix];
          int lv = e < 0 ? -1
                         : (int)lround((d->emax > 0 ? sqrt(e / d->emax) : 0) *
                                       (NL - 1));
          if (lv != L) {
            ix++;
            continue;
          }
          int run = 1;
          while (
              ix + run < G && cell[iy * G + ix + run] >= 0 &&
              (int)lround(
                  (d->emax > 0 ? sqrt(cell[iy * G + ix + run] / d->emax) : 0) *
                  (NL - 1)) == L)
            run++;
          if (!open) {
            cm__heat(L / (NL - 1.0), col);
            fprintf(o,
                    "<path fill=\"none\" stroke=\"%s\" "
                    "stroke-width=\"%.2f\" d=\"",
                    col, ch + 0.05);
            open = 1;
          }
          fprintf(o, "M%.1f %.1fh%.1f", ox + ix * cw, H - oy - (iy + 0.5) * ch,
                  run * cw);
          ix += run;
        }
      }
      if (open)
        fputs("\"/>", o);
    }
    free(cell);
  }
}

static void cm__view(FILE *o, const cm_scene_t *s, const cm__draw_t *d,
                     const cm__view_t *v, int W, int detail) {
  double wx = d->hi[v->ax] - d->lo[v->ax], wy = d->hi[v->ay] - d->lo[v->ay];
  if (!(wx > 0))
    wx = 1;
  if (!(wy > 0))
    wy = wx;
  int pad = 6, Hmax = v->depth < 0 ? 640 : 420;
  double sc = fmin((W - 2 * pad) / wx, (Hmax - 2 * pad) / wy);
  W = (int)ceil(wx * sc) + 2 * pad;
  int H = (int)ceil(wy * sc) + 2 * pad;
  int ox = pad, oy = pad;
  fprintf(o,
          "<div class=\"view\"><svg viewBox=\"0 0 %d %d\" width=\"100%%\" "
          "style=\"max-width:%dpx\" role=\"img\" aria-label=\"%s\">"
          "<rect width=\"%d\" height=\"%d\" fill=\"#fbfcfd\"/>",
          W, H, W, v->name, W, H);
  int nb = s->nbodies, nc = s->ncontacts;
  cm__ord_t *ord = malloc(sizeof *ord * ((size_t)(nb > nc ? nb : nc) + 1));
  if (!ord) {
    fputs("</svg></div>", o);
    return;
  }
  if (detail) {
    /* bodies back to front, then contacts by share (largest on top) */
    int n = 0;
    for (int b = 0; b < nb; b++)
      if (!s->bodies[b].fixed)
        ord[n++] = (cm__ord_t){
            v->depth >= 0 ? -s->bodies[b].position[v->depth] : 0, b};
    qsort(ord, (size_t)n, sizeof *ord, cm__ord_cmp);
    char buf[128], col[8];
    for (int q = 0; q < n; q++) {
      int b = ord[q].i;
      const double *x = s->bodies[b].position;
      double k = d->kin && d->kmax > 0 ? d->kin[b] / d->kmax : 0;
      cm__blue(sqrt(k), col);
      fprintf(o,
              "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" "
              "stroke=\"#8795a6\" stroke-width=\"0.6\"><title>",
              cm__px(d, v->ax, x[v->ax], sc, ox),
              H - cm__px(d, v->ay, x[v->ay], sc, oy), fmax(d->rad[b] * sc, 0.8),
              col);
      cm__esc(o, cm__label(s, b, buf, sizeof buf));
      fprintf(o, ": kinetic share %.3g</title></circle>",
              d->kin ? d->kin[b] : 0.0);
    }
    for (int c = 0; c < nc; c++)
      ord[c] = (cm__ord_t){d->e[c], c};
    qsort(ord, (size_t)nc, sizeof *ord, cm__ord_cmp);
    for (int q = 0; q < nc; q++)
      cm__contact_line(o, s, d, v, sc, ox, oy, H, ord[q].i, 1);
  } else {
    /* a grid of cells, then the top contacts one by one */
    cm__view_grid(o, s, d, v, sc, W, H, pad);
    for (int c = 0; c < nc; c++)
      ord[c] = (cm__ord_t){-d->e[c], c};
    int top = nc < CM__HTML_TOP_DRAWN ? nc : CM__HTML_TOP_DRAWN;
    qsort(ord, (size_t)nc, sizeof *ord, cm__ord_cmp);
    while (top > 0 && d->e[ord[top - 1].i] < 1e-3 * d->emax)
      top--; /* only the contacts the picture can show */
    for (int q = top - 1; q >= 0; q--)
      cm__contact_line(o, s, d, v, sc, ox, oy, H, ord[q].i, 1);
  }
  free(ord);
  /* the plan's contacts: a ring at each midpoint, visible on any colour */
  for (int q = 0; d->sp && q < d->sp->n && q < CM__HTML_PLAN_ROWS; q++) {
    int c = d->sp->contact[q];
    double p[3], e[3];
    cm__end(s, c, 0, p), cm__end(s, c, 1, e);
    fprintf(o,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" "
            "stroke=\"#0b8a8a\" stroke-width=\"2\"><title>",
            cm__px(d, v->ax, 0.5 * (p[v->ax] + e[v->ax]), sc, ox),
            H - cm__px(d, v->ay, 0.5 * (p[v->ay] + e[v->ay]), sc, oy));
    cm__contact_label(o, s, c, NULL);
    fprintf(o, ": soften to k &times; %.3f</title></circle>", d->sp->factor[q]);
  }
  fprintf(o, "</svg><div class=\"cap\">%s</div></div>", v->name);
}

static void cm__legend(FILE *o, double emax, double kmax, int plan) {
  fputs("<svg viewBox=\"0 0 860 34\" width=\"860\" height=\"34\" "
        "style=\"max-width:100%\">",
        o);
  if (plan)
    fputs("<circle cx=\"672\" cy=\"10\" r=\"5\" fill=\"none\" "
          "stroke=\"#0b8a8a\" stroke-width=\"2\"/><text x=\"684\" "
          "y=\"14\">contacts to soften (plan)</text>",
          o);
  char col[8];
  for (int i = 0; i < 40; i++) {
    cm__heat(i / 39.0, col);
    fprintf(o, "<rect x=\"%d\" y=\"4\" width=\"6\" height=\"12\" fill=\"%s\"/>",
            110 + 6 * i, col);
    cm__blue(i / 39.0, col);
    fprintf(o, "<rect x=\"%d\" y=\"4\" width=\"6\" height=\"12\" fill=\"%s\"/>",
            470 + 4 * i, col);
  }
  fprintf(o,
          "<text x=\"0\" y=\"14\">contact share</text>"
          "<text x=\"110\" y=\"30\">0</text><text x=\"350\" y=\"30\" "
          "text-anchor=\"end\">%.3g</text>"
          "<text x=\"372\" y=\"14\">kinetic share</text>"
          "<text x=\"470\" y=\"30\">0</text><text x=\"630\" y=\"30\" "
          "text-anchor=\"end\">%.3g</text></svg>",
          emax, kmax);
}

static void cm__scene_fig(FILE *o, const cm__html_item_t *it) {
  const cm_scene_t *s = it->scene;
  const cm__fields_t *f = it->fields;
  if (!s || !f || f->nmodes < 1 || s->ncontacts == 0) {
    fputs("<p class=\"note\">No scene geometry to draw (a system given as "
          "matrices, or no contacts).</p>",
          o);
    return;
  }
  cm__draw_t d = {
      .e = f->share, .kin = f->nb ? f->kinetic : NULL, .sp = it->soften};
  d.rad = malloc(sizeof(double) * ((size_t)s->nbodies + 1));
  if (!d.rad)
    return;
  cm__fields_radii(s, d.rad);
  for (int i = 0; i < 3; i++)
    d.lo[i] = INFINITY, d.hi[i] = -INFINITY;
  for (int b = 0; b < s->nbodies; b++)
    for (int i = 0; i < s->dim && !s->bodies[b].fixed; i++) {
      d.lo[i] = fmin(d.lo[i], s->bodies[b].position[i] - d.rad[b]);
      d.hi[i] = fmax(d.hi[i], s->bodies[b].position[i] + d.rad[b]);
    }
  for (int c = 0; c < s->ncontacts; c++) {
    for (int i = 0; i < s->dim; i++) {
      d.lo[i] = fmin(d.lo[i], s->contacts[c].point[i]);
      d.hi[i] = fmax(d.hi[i], s->contacts[c].point[i]);
    }
    if (!cm__contact_imaged(s, &s->contacts[c]))
      continue;
    double e[3], r = d.rad[s->contacts[c].b]; /* b's image, drawn too */
    cm__end(s, c, 1, e);
    for (int i = 0; i < s->dim; i++) {
      d.lo[i] = fmin(d.lo[i], e[i] - r);
      d.hi[i] = fmax(d.hi[i], e[i] + r);
    }
  }
  for (int c = 0; c < s->ncontacts; c++)
    d.emax = fmax(d.emax, d.e[c]);
  for (int b = 0; d.kin && b < s->nbodies; b++)
    d.kmax = fmax(d.kmax, d.kin[b]);
  static const cm__view_t v2[1] = {{0, 1, -1, "x&ndash;y"}};
  static const cm__view_t v3[3] = {
      {0, 2, 1, "front: x&ndash;z (looking along +y)"},
      {1, 2, 0, "side: y&ndash;z (looking along &minus;x)"},
      {0, 1, 2, "top: x&ndash;y (looking down &minus;z)"}};
  int nv = s->dim == 2 ? 1 : 3;
  const cm__view_t *v = s->dim == 2 ? v2 : v3;
  long load = (long)(s->ncontacts + s->nbodies) * nv;
  int detail = load <= CM__HTML_DETAIL_MAX;
  fputs("<div class=\"fig\">", o);
  cm__legend(o, d.emax, d.kmax, d.sp && d.sp->n > 0);
  fputs("<div class=\"views\">", o);
  for (int i = 0; i < nv; i++)
    cm__view(o, s, &d, &v[i], s->dim == 2 ? 1000 : 540, detail);
  fputs("</div><div class=\"cap\">", o);
  if (detail)
    fprintf(o,
            "Every contact is a line between the bodies' centres (or to "
            "the contact point on a wall or fixed body; across a periodic "
            "boundary, to the centre of the image it touches), coloured and "
            "thickened by its strain-energy share e<sub>c</sub> in the top "
            "mode (colour scale on sqrt(e<sub>c</sub>/max)); bodies are "
            "discs of their nearest-contact radius shaded by kinetic "
            "share%s. Teal rings: the contacts the plan below softens. "
            "Hover for names and values.",
            s->dim == 3 ? "; orthographic views, nearer bodies drawn last"
                        : "");
  else
    fprintf(o,
            "Aggregated: %d contacts and %d bodies are too many to draw "
            "one by one (more than %d elements), so the view is a grid of "
            "cells, each coloured by the largest top-mode share of the "
            "contacts whose midpoint falls in it (empty cells blank); the "
            "contacts with the largest shares (at most %d, down to 1e-3 of "
            "the largest) are drawn individually on top, with names on "
            "hover; teal rings: the contacts the plan below softens.",
            s->ncontacts, s->nbodies, CM__HTML_DETAIL_MAX,
            s->ncontacts < CM__HTML_TOP_DRAWN ? s->ncontacts
                                              : CM__HTML_TOP_DRAWN);
  fputs("</div></div>\n", o);
  free(d.rad);
}

/* ---- modes
 * ------------------------------------------------------------------- */

static void cm__modes(FILE *o, const cm__html_item_t *it) {
  const cm_report_t *r = it->report;
  fprintf(o,
          "<table><tr><th>#</th><th>&omega; (rad/s)</th><th>f (Hz)</th>"
          "<th>residual</th>%s<th>comp.</th><th class=\"l\">top contacts "
          "(strain-energy share)</th><th class=\"l\">top bodies (kinetic "
          "share)</th></tr>",
          r->dashpots ? "<th>&zeta;</th>" : "");
  for (int i = 0; i < r->nmodes; i++) {
    const cm_mode_t *m = &r->modes[i];
    fprintf(o, "<tr%s><td>%d</td><td>%.9g</td><td>%.6g</td><td>%.1e</td>",
            i == 0 ? " class=\"hi\"" : "", i + 1, m->omega,
            m->omega / (2 * M_PI), m->residual);
    if (r->dashpots)
      fprintf(o, "<td>%.3g</td>", m->zeta);
    fprintf(o, "<td>%d</td><td class=\"l\">", m->component);
    for (int j = 0; j < m->ncontacts && j < 3; j++) {
      cm__contact_label(o, it->scene, m->contacts[j].index,
                        m->contacts[j].name);
      fprintf(o, " %.3f%s", m->contacts[j].share,
              j + 1 < m->ncontacts && j < 2 ? "; " : "");
    }
    fputs("</td><td class=\"l\">", o);
    for (int j = 0; j < m->nbodies && j < 3; j++) {
      cm__esc(o, m->bodies[j].name);
      fprintf(o, " %.3f%s", m->bodies[j].share,
              j + 1 < m->nbodies && j < 2 ? "; " : "");
    }
    fputs("</td></tr>", o);
  }
  fputs("</table>\n", o);
}

/* ---- sensitivities and the softening plan
 * ---------------------------------------- */

typedef struct {
  double e; /* share */
  int c;    /* contact */
} cm__top_t;

static int cm__top_cmp(const void *pa, const void *pb) {
  const cm__top_t *a = pa, *b = pb;
  return a->e != b->e ? (a->e > b->e ? -1 : 1) : a->c - b->c;
}

static void cm__sensitivity(FILE *o, const char *p, const cm__html_item_t *it) {
  const cm_report_t *r = it->report;
  const cm__fields_t *f = it->fields;
  const cm_scene_t *s = it->scene;
  if (r->nmodes < 1)
    return;
  /* top contacts of the limiting mode */
  int n = 0;
  cm__top_t *top = NULL;
  if (f && f->nmodes > 0) {
    top = malloc(sizeof *top * ((size_t)f->nc + 1));
    for (int c = 0; top && c < f->nc; c++)
      if (f->share[c] > 1e-9) /* not the contacts the mode does not strain */
        top[n++] = (cm__top_t){f->share[c], c};
    if (top)
      qsort(top, (size_t)n, sizeof *top, cm__top_cmp);
  } else {
    top = malloc(sizeof *top * ((size_t)r->modes[0].ncontacts + 1));
    for (int j = 0; top && j < r->modes[0].ncontacts; j++)
      top[n++] = (cm__top_t){r->modes[0].contacts[j].share,
                             r->modes[0].contacts[j].index};
  }
  if (!top)
    return;
  double lam = r->modes[0].lambda;
  fputs("<h3>Contacts that set the step</h3><p class=\"sub\">The top mode's "
        "strain-energy shares e<sub>c</sub> = k<sub>c</sub> "
        "&xi;<sub>c</sub><sup>2</sup> / &lambda; and the first-order "
        "sensitivity d&lambda;/dk<sub>c</sub> = &xi;<sub>c</sub><sup>2</sup> = "
        "&lambda; e<sub>c</sub> / k<sub>c</sub>: halving k<sub>c</sub> alone "
        "lengthens the step by about the last column (an upper estimate: "
        "other modes may take over).</p>",
        o);
  fprintf(o,
          "<table id=\"%ssens\"><tr><th class=\"l\">contact</th><th>k "
          "(N/m)</th><th>share e<sub>c</sub></th><th>cumulative</th>"
          "<th>d&lambda;/dk<sub>c</sub> ((rad/s)&sup2; per N/m)</th>"
          "<th>step gain if k<sub>c</sub> halved</th></tr>",
          p);
  double cum = 0;
  for (int q = 0; q < n && q < CM__HTML_SENS_ROWS; q++) {
    int c = top[q].c;
    double k = s ? s->contacts[c].stiffness : NAN, e = top[q].e;
    cum += e;
    fputs("<tr><td class=\"l\">", o);
    cm__contact_label(o, s, c, NULL);
    fputs("</td><td>", o);
    cm__n(o, k);
    fprintf(o, "</td><td>%.4f</td><td>%.4f</td><td>", e, cum);
    cm__n(o, lam * e / k);
    fprintf(o, "</td><td>+%.2f%%</td></tr>", 100 * (1 / sqrt(1 - e / 2) - 1));
  }
  fputs("</table>", o);
  if (n > CM__HTML_SENS_ROWS)
    fprintf(o,
            "<p class=\"note\">%d more contacts share the rest "
            "(%.4f).</p>",
            n - CM__HTML_SENS_ROWS, fmax(0, 1 - cum));
  free(top);
  /* the plan */
  const cm__soften_t *sp = it->soften;
  if (!sp || !(sp->target_h_s > 0))
    return;
  fprintf(o, "<h3 id=\"%splan\">To reach a step of %.6g s</h3>", p,
          sp->target_h_s);
  if (sp->n == 0) {
    fputs("<p>The step already reaches the target: nothing to soften.</p>", o);
    return;
  }
  fprintf(o,
          "<p>Soften these <b>%d</b> contact%s (normal and tangential "
          "springs by the same factor). Planned from the shares of every "
          "listed mode faster than the target, then confirmed by "
          "re-solving the softened scene (%d round%s, %.3g s): the new "
          "critical step is <b>",
          sp->n, sp->n == 1 ? "" : "s", sp->rounds, sp->rounds == 1 ? "" : "s",
          sp->seconds);
  cm__val(o, p, "plan-h", sp->h_s, "s");
  fprintf(o,
          "</b> (&omega;<sub>max</sub> %.6g rad/s): <span class=\"%s\">%s"
          "</span>.</p>",
          sp->omega_s, sp->reached ? "good" : "bad",
          sp->reached ? "target reached"
                      : "target not reached within 8 rounds: soften more "
                        "contacts or change the masses");
  fprintf(o,
          "<table id=\"%splan-table\"><tr><th class=\"l\">contact</th>"
          "<th>k now (N/m)</th><th>new k (N/m)</th><th>factor</th></tr>",
          p);
  for (int q = 0; q < sp->n && q < CM__HTML_PLAN_ROWS; q++) {
    int c = sp->contact[q];
    fputs("<tr><td class=\"l\">", o);
    cm__contact_label(o, s, c, NULL);
    fprintf(o, "</td><td>%.6g</td><td>%.6g</td><td>%.3f</td></tr>",
            s->contacts[c].stiffness, s->contacts[c].stiffness * sp->factor[q],
            sp->factor[q]);
  }
  fputs("</table>", o);
  if (sp->n > CM__HTML_PLAN_ROWS)
    fprintf(o,
            "<p class=\"note\">and %d more, with factors from %.3f to "
            "%.3f.</p>",
            sp->n - CM__HTML_PLAN_ROWS, sp->factor[CM__HTML_PLAN_ROWS],
            sp->factor[sp->n - 1]);
}

/* ---- components
 * ---------------------------------------------------------------- */

static int cm__desc(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return a != b ? (a > b ? -1 : 1) : 0;
}

static void cm__components(FILE *o, const cm__html_item_t *it) {
  const cm_report_t *r = it->report;
  const cm__fields_t *f = it->fields;
  fprintf(o, "<p>%d independent component%s; ", r->ncomp,
          r->ncomp == 1 ? "" : "s");
  if (r->nties > 1) { /* the report's ties (components.tied) */
    fprintf(o,
            "%d tie at the top frequency (within the solver tolerance %g) "
            "and set the step: ",
            r->nties, r->tol);
    for (int i = 0; i < r->nties_listed && i < 30; i++) {
      fputs(i ? ", <b>" : "<b>", o);
      if (r->tie_names[i])
        cm__esc(o, r->tie_names[i]);
      fprintf(o, "</b>%s%d%s", r->tie_names[i] ? " (component " : "component ",
              r->ties[i], r->tie_names[i] ? ")" : "");
    }
    if (r->nties > 30)
      fprintf(o, " &hellip; (%d in all)", r->nties);
    fputc('.', o);
  } else {
    fprintf(o, "component <b>%d</b> sets the step.", r->comp_max);
  }
  fputs("</p>", o);
  /* chart of omega_max per component, descending */
  if (f && f->ncomp > 1) {
    int n = f->ncomp < 120 ? f->ncomp : 120;
    double *w = malloc(sizeof(double) * ((size_t)f->ncomp + 1));
    if (w) {
      memcpy(w, f->comp_omega, sizeof(double) * (size_t)f->ncomp);
      qsort(w, (size_t)f->ncomp, sizeof *w, cm__desc);
      const int W = 1000, H = 170, L = 50, B = 22, T = 8;
      double bw = (W - L - 10) / (double)n, ymax = w[0] * 1.05;
      fprintf(o,
              "<div class=\"fig\"><svg viewBox=\"0 0 %d %d\" "
              "width=\"100%%\" role=\"img\" aria-label=\"components\">",
              W, H);
      double tk = cm__tick(ymax, 4);
      for (double y = 0; y <= ymax; y += tk) {
        double py = H - B - y / ymax * (H - B - T);
        fprintf(o,
                "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#e3e8ee\"/><text x=\"%d\" y=\"%.1f\" "
                "text-anchor=\"end\">%.4g</text>",
                L, W - 10, py, py, L - 4, py + 4, y);
      }
      for (int i = 0; i < n; i++) {
        double h = w[i] / ymax * (H - B - T);
        fprintf(o,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                "height=\"%.1f\" fill=\"%s\"/>",
                L + i * bw + 0.5, H - B - h, fmax(bw - 1, 0.5), h,
                w[i] >= r->omega_max * (1 - 1e-9) ? "#c0392b" : "#7d9bb8");
      }
      fprintf(o,
              "<text x=\"%d\" y=\"%d\">components by &omega;max "
              "(rad/s), largest first%s; red: the ones that set the "
              "step</text></svg></div>",
              L, H - 6, f->ncomp > n ? " (first 120)" : "");
      free(w);
    }
  }
  fputs("<table><tr><th>component</th><th>&omega;max (rad/s)</th>"
        "<th>upper bound</th><th>bodies</th><th>contacts</th><th>dofs</th>"
        "<th class=\"l\">method</th><th>matvecs</th><th class=\"l\">bodies "
        "(first listed)</th></tr>",
        o);
  for (int i = 0; i < r->ncomp_listed; i++) {
    const cm_component_t *c = &r->components[i];
    fprintf(o,
            "<tr%s><td>%d</td><td>%.9g</td><td>%.6g</td><td>%d</td>"
            "<td>%d</td><td>%d</td><td class=\"l\">%s</td><td>%d</td>"
            "<td class=\"l\">",
            c->index == r->comp_max ? " class=\"hi\"" : "", c->index,
            c->omega_max, c->omega_upper, c->nbodies, c->ncontacts, c->ndofs,
            cm__method_name(c->method), c->matvecs);
    for (int j = 0; j < c->nlisted && j < 6; j++) {
      cm__esc(o, c->body_names[j]);
      fputs(j + 1 < c->nlisted && j < 5 ? ", " : "", o);
    }
    fputs(c->nbodies > 6 ? ", &hellip;</td></tr>" : "</td></tr>", o);
  }
  fputs("</table>\n", o);
}

/* ---- solver and timings
 * ---------------------------------------------------------- */

static void cm__solver(FILE *o, const cm__html_item_t *it) {
  const cm_report_t *r = it->report;
  fprintf(o,
          "<table><tr><th class=\"l\">method</th><th>modes</th>"
          "<th>basis</th><th>restarts</th><th>matvecs</th>"
          "<th>of which search</th>"
          "<th class=\"l\">converged</th><th>tol</th></tr><tr><td "
          "class=\"l\">%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td>"
          "<td>%d</td><td class=\"l\">%s</td><td>%.1e</td></tr></table>",
          r->method ? r->method : "none", r->nev, r->ncv, r->iterations,
          r->matvecs, r->search_matvecs,
          r->converged ? "yes" : "<span class=\"bad\">no</span>", r->tol);
  struct {
    const char *name;
    double t;
    const char *col;
  } ph[7] = {
      {"parse", r->t_parse, "#b8c4d1"},
      {"assemble", r->t_assemble, "#7d9bb8"},
      {"factor", r->t_factor, "#4f7ca6"},
      {"operator", r->t_operator, "#2c5d8a"},
      {"eigen", r->t_eigen, "#e4572e"},
      {"report", r->t_report, "#f6c342"},
      {"softening re-solves", it->soften ? it->soften->seconds : 0, "#9b59b6"}};
  double tot = 0;
  for (int i = 0; i < 7; i++)
    tot += ph[i].t > 0 ? ph[i].t : 0;
  fputs("<table><tr>", o);
  for (int i = 0; i < 7; i++)
    fprintf(o, "<th><span style=\"color:%s\">&#9632;</span> %s (s)</th>",
            ph[i].col, ph[i].name);
  fputs("</tr><tr>", o);
  for (int i = 0; i < 7; i++)
    fprintf(o, "<td>%.3g</td>", ph[i].t);
  fputs("</tr></table>", o);
  if (tot > 0) {
    fputs("<svg viewBox=\"0 0 1000 18\" width=\"100%\" role=\"img\" "
          "aria-label=\"timings\">",
          o);
    double x = 0;
    for (int i = 0; i < 7; i++) {
      if (!(ph[i].t > 0))
        continue;
      double w = ph[i].t / tot * 1000;
      fprintf(o,
              "<rect x=\"%.1f\" y=\"2\" width=\"%.1f\" height=\"14\" "
              "fill=\"%s\"><title>%s %.3g s</title></rect>",
              x, w, ph[i].col, ph[i].name, ph[i].t);
      x += w;
    }
    fputs("</svg>", o);
  }
  fprintf(o,
          "<p class=\"note\">Counts: %d bodies (%d moving, %d fixed, %d "
          "free), %d contacts in %d rows, %d dofs (%d active).</p>\n",
          r->nbodies, r->moving_bodies, r->fixed_bodies, r->free_bodies,
          r->ncontacts, r->nrows, r->ndofs, r->active_dofs);
}

/* ---- one scene's section
 * -------------------------------------------------------- */

static void cm__section(FILE *o, const cm__html_item_t *it, int i,
                        int campaign) {
  char p[32];
  snprintf(p, sizeof p, "s%d-", i);
  fprintf(o, "<section id=\"s%d\"%s><h%d>", i,
          campaign ? " class=\"scene\"" : "", campaign ? 2 : 1);
  cm__esc(o, it->title);
  fprintf(o,
          "</h%d><p class=\"sub\">%s%d-D scene, %d bodies, %d contacts, "
          "%d component%s%s</p>",
          campaign ? 2 : 1,
          campaign ? "<a href=\"#top\">&uarr; table</a> "
                     "&middot; "
                   : "",
          it->scene ? it->scene->dim : 0, it->report->nbodies,
          it->report->ncontacts, it->report->ncomp,
          it->report->ncomp == 1 ? "" : "s",
          it->report->status == CM_NOT_CONVERGED
              ? " &middot; <span class=\"bad\">not converged: partial "
                "result</span>"
              : "");
  cm__headline(o, p, it);
  fputs("<h2>Stable steps per integrator</h2>", o);
  cm__steps(o, it->report);
  fputs("<h2>Scene: where the top mode lives</h2>", o);
  cm__scene_fig(o, it);
  fputs("<h2>Which contacts to soften</h2>", o);
  cm__sensitivity(o, p, it);
  fputs("<h2>Spectrum</h2>", o);
  cm__spectrum(o, it);
  cm__modes(o, it);
  fputs("<h2>Components</h2>", o);
  cm__components(o, it);
  fputs("<h2>Solver and timings</h2>", o);
  cm__solver(o, it);
  fputs("</section>\n", o);
}

/* ---- campaign table
 * -------------------------------------------------------------- */

static void cm__td_num(FILE *o, double v, const char *fmt) {
  fprintf(o, "<td data-v=\"%.17g\">", isfinite(v) ? v : -1.0);
  if (isfinite(v))
    fprintf(o, fmt, v);
  else
    fputs("&mdash;", o);
  fputs("</td>", o);
}

static void cm__campaign(FILE *o, const cm__html_item_t *it, int n) {
  fputs("<table class=\"sort\" id=\"campaign\"><thead><tr>"
        "<th class=\"l\">scene</th><th>contacts</th>"
        "<th>&omega;max (rad/s)</th><th>CD step (s)</th><th>certified (s)"
        "</th><th>RK4 step (s)</th><th>coupled / per-contact</th>"
        "<th>limiting component</th><th class=\"l\">limiting contact</th>"
        "</tr></thead><tbody>",
        o);
  for (int i = 0; i < n; i++) {
    const cm_report_t *r = it[i].report;
    fprintf(o, "<tr><td class=\"l\"><a href=\"#s%d\">", i);
    cm__esc(o, it[i].title);
    fputs("</a></td>", o);
    cm__td_num(o, r->ncontacts, "%.0f");
    cm__td_num(o, r->omega_max, "%.6g");
    cm__td_num(o, r->central_difference.h_s, "%.6g");
    cm__td_num(o, r->central_difference.certified_s, "%.6g");
    cm__td_num(o, r->rk4.h_s, "%.6g");
    cm__td_num(o, r->pc_ratio, "%.4f");
    cm__td_num(o, r->comp_max, "%.0f");
    fputs("<td class=\"l\">", o);
    if (r->nmodes > 0 && r->modes[0].ncontacts > 0) {
      cm__contact_label(o, it[i].scene, r->modes[0].contacts[0].index,
                        r->modes[0].contacts[0].name);
      fprintf(o, " %.3f", r->modes[0].contacts[0].share);
    }
    fputs("</td></tr>", o);
  }
  fputs("</tbody></table><p class=\"note\">Click a column to sort; click a "
        "scene for its section.</p>\n",
        o);
}

int cm__report_write_html(FILE *out, const cm__html_item_t *items, int n,
                          const char *title) {
  cm__page_open(out, title);
  if (n == 1) {
    cm__section(out, &items[0], 0, 0);
  } else {
    fputs("<h1 id=\"top\">", out);
    cm__esc(out, title);
    int lo = 0; /* the scene with the smallest step */
    for (int i = 1; i < n; i++)
      if (items[i].report->central_difference.h_s <
          items[lo].report->central_difference.h_s)
        lo = i;
    fprintf(out,
            "</h1><p class=\"sub\">%d scenes analysed by cmodes; the "
            "smallest central-difference step is <b>%.6g s</b>, in "
            "<a href=\"#s%d\">",
            n, items[lo].report->central_difference.h_s, lo);
    cm__esc(out, items[lo].title);
    fputs("</a>.</p>", out);
    cm__campaign(out, items, n);
    for (int i = 0; i < n; i++)
      cm__section(out, &items[i], i, 1);
  }
  cm__page_close(out);
  return ferror(out) ? CM_IO : CM_OK;
}

/* The page of one analysed scene in memory (*html, *len): the softening
 * plan (only for scenes that solve quickly: it re-solves the scene up to 8
 * times), then the page; frees r and f. st: the analysis' status. */
int cm__report_html_mem(cm_context_t *ctx, const cm_scene_t *scene,
                        const cm_options_t *opts, const char *title,
                        cm_report_t *r, cm__fields_t *f, int st, char **html,
                        size_t *len) {
  cm__soften_t sp = {0};
  int st2 = st >= 0 && scene && scene->ncontacts <= 100000
                ? cm__soften_plan(ctx, scene, opts, r, f, 0, &sp)
                : st;
  if (st2 >= 0) {
    FILE *m = open_memstream(html, len);
    if (!m) {
      st2 = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory");
    } else {
      cm__html_item_t it = {title, scene, r, f, scene ? &sp : NULL};
      st2 = cm__report_write_html(m, &it, 1, title);
      if (fclose(m) && !st2)
        st2 = CM__ERR(ctx, CM_NOMEM, NULL, "out of memory writing the page");
    }
  }
  cm__soften_free(&sp);
  cm__fields_free(f);
  cm_report_destroy(&r);
  if (st2 < 0) {
    free(*html);
    *html = NULL, *len = 0;
    return st2;
  }
  return st;
}

int cm__report_html_scene(cm_context_t *ctx, const cm_scene_t *scene,
                          const cm_options_t *opts, const char *title,
                          char **html, size_t *len) {
  *html = NULL, *len = 0;
  cm_report_t *r = NULL;
  cm__fields_t f = {.want = opts && opts->modes > 0 ? opts->modes : 6};
  cm_options_t def;
  if (!opts) {
    cm_options_init(&def);
    opts = &def;
  }
  int st = cm__analyze_fields(ctx, scene, opts, &r, &f);
  if (st < 0) {
    cm__fields_free(&f);
    return st;
  }
  return cm__report_html_mem(ctx, scene, opts, title, r, &f, st, html, len);
}

int cm__report_track_html(cm_context_t *ctx, FILE *out, const char *text,
                          size_t len, const char *title) {
  return cm__report_write_track_html(ctx, out, text, len, title, cm__css,
                                     cm__js);
}
