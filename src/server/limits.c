/* limits.c: the server's guards against requests that would cost more than
 * their size suggests: a pass over a JSON body's raw bytes that counts its
 * values and nesting before any parser builds a tree, the refusal of dense
 * eigen-solves the solve budget cannot stop, and giving freed memory back.
 * Not for the scene reader or the transports (they call these). */
#include "server.h"
#include "spectrum/spectrum_internal.h"

#include <malloc.h>
#include <string.h>

/* ---- JSON pre-scan ----------------------------------------------- */

int cm__json_prescan(const char *s, size_t len, int max_depth,
                     size_t max_elements, cm__json_scan_t *out) {
  int d = 0, in_str = 0, key = 0, obj_root = 0, in_scalar = 0;
  size_t key_at = 0;
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (in_str) {
      if (c == '\\') {
        i++;
        out->string_bytes++;
      } else if (c != '"') {
        out->string_bytes++;
      } else {
        in_str = 0;
        if (key && i - key_at == 5 && !memcmp(s + key_at, "scene", 5))
          out->wrapped = 1;
        key = 0;
      }
      continue;
    }
    int scalar_char = (c >= '0' && c <= '9') || c == '-' || c == '+' ||
                      c == '.' || (c >= 'a' && c <= 'z') ||
                      (c >= 'A' && c <= 'Z');
    if (scalar_char) { /* a number or literal: one value per run */
      if (!in_scalar) {
        if (c >= 'a' && c <= 'z')
          out->literals++;
        else
          out->numbers++;
        if (++out->elements > max_elements)
          return 1;
      }
      in_scalar = 1;
      key = 0;
      continue;
    }
    in_scalar = 0;
    if (c == '"') {
      in_str = 1;
      key_at = i + 1;
      out->strings++;
      if (++out->elements > max_elements)
        return 1; /* keys count too: each costs the parser a string */
    } else if (c == '{' || c == '[') {
      if (c == '{')
        out->objects++;
      else
        out->arrays++;
      if (++out->elements > max_elements)
        return 1;
      if (++d > out->depth && (out->depth = d) > max_depth)
        return 1;
      if (d == 1)
        obj_root = c == '{';
      key = d == 1 && obj_root; /* the next string is a root key */
    } else if (c == '}' || c == ']') {
      d--;
      key = 0;
    } else if (c == ',') {
      key = d == 1 && obj_root;
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != ':') {
      key = 0;
    }
  }
  return 0;
}

size_t cm__json_tree_bytes(const cm__json_scan_t *sc) {
  return 240 * sc->objects + 144 * sc->arrays + 48 * sc->numbers +
         96 * sc->strings + 16 * sc->literals + sc->string_bytes;
}

/* The calling thread's reservation (a request is handled by one thread). */
static _Thread_local size_t cm__parse_mine;

int cm__parse_reserve(cm__server_t *srv, size_t est) {
  pthread_mutex_lock(&srv->lock);
  int ok = srv->parse_bytes + est <= srv->cfg.max_parse_bytes;
  if (ok) {
    srv->parse_bytes += est;
    cm__parse_mine += est;
  }
  pthread_mutex_unlock(&srv->lock);
  return ok ? 0 : -1;
}

void cm__parse_release(cm__server_t *srv) {
  if (!cm__parse_mine)
    return;
  pthread_mutex_lock(&srv->lock);
  srv->parse_bytes -= cm__parse_mine;
  pthread_mutex_unlock(&srv->lock);
  cm__parse_mine = 0;
}

/* ---- memory ------------------------------------------------------ */

void cm__memory_give_back(void) {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

/* ---- dense solves ------------------------------------------------ */

/* The speed the budget check assumes for a dense solve of order N, in N^3
 * per second: a quarter of what one core of the reference machine does
 * (4.5e9 with dsyrk + dsyevr, docs/server.md), so that a slower machine
 * stays inside the budget. */
#define CM__DENSE_RATE 1e9

int cm__dense_check(cm_context_t *ctx, const cm_system_t *sys,
                    const cm_options_t *opts, int max_dense) {
  double work = 0, mem_cap = 3.0 * (double)max_dense * max_dense;
  int worst = -1;
  double worst_n = 0;
  for (int c = 0; c < sys->ncomp; c++) {
    int m = sys->comp_row[c + 1] - sys->comp_row[c];
    int n = sys->comp_col[c + 1] - sys->comp_col[c];
    if (!cm__eig_is_dense(opts, m, n))
      continue;
    double N = m < n ? m : n;
    /* B (m x n), the Gram matrix and the eigenvectors (N x N each) */
    if ((double)m * n + 2 * N * N > mem_cap)
      return CM__ERR(ctx, CM_LIMIT, "options.method",
                     "component %d: a dense eigen-solve of order %.0f "
                     "(%d rows x %d dofs, %.0f MiB) is past the server's "
                     "limit of order %d (--max-dense); use method=auto or "
                     "lanczos with a smaller dense_max",
                     c, N, m, n, 8 * ((double)m * n + 2 * N * N) / 1048576.0,
                     max_dense);
    work += N * N * N;
    if (N > worst_n)
      worst = c, worst_n = N;
  }
  double est = work / CM__DENSE_RATE;
  if (opts->max_seconds > 0 && est > opts->max_seconds)
    return CM__ERR(ctx, CM_LIMIT, "options.method",
                   "dense eigen-solves of about %.3g N^3 would take about "
                   "%.0f s at the %.0e N^3/s the server assumes, past the "
                   "solve budget of %g s (max_seconds, capped by "
                   "--max-solve-seconds), and a dense solve cannot stop "
                   "early; use method=auto or lanczos with a smaller "
                   "dense_max (the largest dense component: %d, order %.0f)",
                   work, est, CM__DENSE_RATE, opts->max_seconds, worst,
                   worst_n);
  return CM_OK;
}
