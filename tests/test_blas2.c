/* test_blas2.c: cmodes' own dgemv_/dcopy_ (core/blas2.c) against a plain
 * reference loop on the long thin shapes they take over and the shapes they
 * pass on, and bitwise equal at 1 and 2 threads. */
#include "cmodes.h"
#include "cmtest.h"
#include "internal.h"

void dgemv_(const char *, const int *, const int *, const double *,
            const double *, const int *, const double *, const int *,
            const double *, double *, const int *);
void dcopy_(const int *, const double *, const int *, double *, const int *);

CM_TEST(blas2_dgemv_against_reference) {
  int shapes[][3] = {
      {40000, 7, 40000}, {70001, 20, 70005}, {100, 5, 100}, {33000, 1, 33000}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int m = shapes[s][0], n = shapes[s][1], lda = shapes[s][2];
    double *a = malloc(sizeof(double) * (size_t)lda * n);
    double *x = malloc(sizeof(double) * (size_t)m),
           *y0 = malloc(sizeof(double) * (size_t)m);
    double *y1 = malloc(sizeof(double) * (size_t)m),
           *y2 = malloc(sizeof(double) * (size_t)m);
    for (size_t i = 0; i < (size_t)lda * n; i++)
      a[i] = cm__hash_uniform(1, i);
    for (int i = 0; i < m; i++)
      x[i] = cm__hash_uniform(2, (uint64_t)i),
      y0[i] = cm__hash_uniform(3, (uint64_t)i);
    for (int tr = 0; tr < 2; tr++) {
      double alpha = -1.5, beta = tr ? 0.0 : 0.25;
      int one = 1, ylen = tr ? n : m, xlen = tr ? m : n;
      (void)xlen;
      for (int th = 1; th <= 2; th++) {
        double *y = th == 1 ? y1 : y2;
        memcpy(y, y0, sizeof(double) * (size_t)m);
        cm__blas2_set_threads(th);
        dgemv_(tr ? "T" : "N", &m, &n, &alpha, a, &lda, x, &one, &beta, y,
               &one);
      }
      cm__blas2_set_threads(1);
      double scale, err = cmt_gemv_err(tr, m, n, alpha, a, lda, x, beta, y0, y1,
                                       &scale); /* plain loops */
      for (int i = 0; i < ylen; i++)
        CMT_TRUE(y1[i] == y2[i]); /* bitwise at 1 and 2 threads */
      CMT_LE(err, 1e-12 * (scale + 1) * sqrt((double)m));
    }
    int nn = m, one = 1;
    dcopy_(&nn, x, &one, y1, &one);
    CMT_TRUE(memcmp(x, y1, sizeof(double) * (size_t)m) == 0);
    free(a), free(x), free(y0), free(y1), free(y2);
  }
}

/* A Lanczos solve large enough for the threaded basis kernels (N > 32768)
 * gives the same report bits at 1 and 2 threads. */
CM_TEST(blas2_lanczos_bitwise_threads) {
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_scene_t *s = cm_scene_create(2);
  cm_body_t g;
  cm_body_init(&g);
  g.fixed = 1;
  cm_scene_add_body(&ctx, s, &g, "floor");
  int nx = 200, ny = 100; /* a 2D grid of disks: about 60000 contacts */
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      cm_body_t b;
      cm_body_init(&b);
      b.mass = 1 + 0.3 * cm__hash_uniform(5, (uint64_t)(j * nx + i));
      b.inertia[0] = 0.5 * b.mass;
      b.position[0] = i, b.position[1] = j + 0.5;
      int bi = cm_scene_add_body(&ctx, s, &b, NULL);
      cm_contact_t c;
      cm_contact_init(&c);
      c.stiffness = 1e5 * (1 + 0.5 * cm__hash_uniform(6, (uint64_t)bi));
      if (i) { /* left neighbour */
        c.a = bi, c.b = bi - 1, c.point[0] = i - 0.5, c.point[1] = j + 0.5;
        c.normal[0] = 1, c.normal[1] = 0;
        cm_scene_add_contact(&ctx, s, &c, NULL);
      }
      c.a = bi, c.b = j ? bi - nx : 0; /* below, or the floor */
      c.point[0] = i, c.point[1] = j, c.normal[0] = 0, c.normal[1] = 1;
      cm_scene_add_contact(&ctx, s, &c, NULL);
    }
  char *out[2] = {NULL, NULL};
  for (int t = 1; t <= 2; t++) {
    ctx.threads = t;
    cm_options_t o;
    cm_options_init(&o);
    o.tol = 1e-6;
    o.modes = 2;
    o.method = CM_METHOD_ARPACK; /* the basis work of ARPACK runs here */
    cm_report_t *r = NULL;
    CMT_TRUE(cm_analyze(&ctx, s, &o, &r) >= 0);
    if (r)
      out[t - 1] = cm_report_to_json(r, CM_JSON_NO_TIMINGS);
    CMT_TRUE(r && r->ncontacts > 32768 && r->nmodes == 2);
    cm_report_destroy(&r);
  }
  CMT_TRUE(out[0] && out[1] && strcmp(out[0], out[1]) == 0);
  CMT_CONTAINS(out[0], "\"method\":\"arpack\"");
  free(out[0]), free(out[1]);
  cm_scene_destroy(&s);
}

/* cm__gemv32 (the look's float deflation vectors, widened exactly, summed
 * in double) gives bit for bit cm__gemv's result on the same values held
 * as doubles, both ways round, at 1 and 2 threads; and both match a plain
 * loop. Shapes: rows not a multiple of the chunk, columns not of 4. */
CM_TEST(blas2_gemv32_widened_bits) {
  int shapes[][2] = {{50001, 7}, {20000, 8}, {9, 3}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int m = shapes[s][0], n = shapes[s][1];
    size_t mn = (size_t)m * (size_t)n;
    float *af = malloc(sizeof(float) * mn);
    double *ad = malloc(sizeof(double) * mn);
    double *x = malloc(sizeof(double) * (size_t)m);
    double *y0 = malloc(sizeof(double) * (size_t)m);
    double *yf = malloc(sizeof(double) * (size_t)m);
    double *yd = malloc(sizeof(double) * (size_t)m);
    for (size_t i = 0; i < mn; i++)
      ad[i] = af[i] = (float)cm__hash_uniform(4, i);
    for (int i = 0; i < m; i++)
      x[i] = cm__hash_uniform(5, (uint64_t)i),
      y0[i] = cm__hash_uniform(6, (uint64_t)i);
    for (int tr = 0; tr < 2; tr++) {
      int ylen = tr ? n : m;
      double alpha = tr ? 1.0 : -1.0, beta = tr ? 0.0 : 1.0;
      for (int th = 1; th <= 2; th++) {
        memcpy(yf, y0, sizeof(double) * (size_t)m);
        memcpy(yd, y0, sizeof(double) * (size_t)m);
        /* trans: y = A^T x (x of m); else y = A x (x of n) */
        cm__gemv32(tr, m, n, alpha, af, m, x, beta, yf, th);
        cm__gemv(tr, m, n, alpha, ad, m, x, beta, yd, th);
        CMT_TRUE(memcmp(yf, yd, sizeof(double) * (size_t)ylen) == 0);
      }
      double err = 0, scale = 0;
      for (int i = 0; i < ylen; i++) {
        double r = 0;
        if (tr)
          for (int l = 0; l < m; l++)
            r += (double)af[(size_t)i * m + l] * x[l];
        else
          for (int j = 0; j < n; j++)
            r += (double)af[(size_t)j * m + i] * x[j];
        r = alpha * r + beta * y0[i];
        err = fmax(err, fabs(yf[i] - r));
        scale = fmax(scale, fabs(r));
      }
      CMT_LE(err, 1e-12 * (scale + 1) * sqrt((double)m));
    }
    free(af), free(ad), free(x), free(y0), free(yf), free(yd);
  }
}
