/* test_matrices_route.c: POST /v1/analyze with a system given as matrices
 * (src/server/matrices.c), through the real binary's --stdio transport:
 * frequencies against a dense solve of S = K^1/2 J M^-1 J^T K^1/2 done
 * here with LAPACK, row names, and the errors and limits. The HTTP
 * transport is exercised by python/tests/test_server_matrices.py. */
#include "cmodes.h"
#include "cmtest.h"

#include <jansson.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MR_N 5
#define MR_NC 4

/* A fixed SPD M (A A^T + n I from a small LCG), J and k. */
static void mr_system(double *M, double *J, double *k) {
  unsigned s = 12345;
  double A[MR_N * MR_N];
  for (int i = 0; i < MR_N * MR_N; i++) {
    s = s * 1103515245u + 12345u;
    A[i] = (double)(s >> 8 & 0xffff) / 65536.0 - 0.5;
  }
  for (int i = 0; i < MR_N; i++)
    for (int j = 0; j < MR_N; j++) {
      double v = i == j ? MR_N : 0;
      for (int l = 0; l < MR_N; l++)
        v += A[i * MR_N + l] * A[j * MR_N + l];
      M[i * MR_N + j] = v;
    }
  for (int i = 0; i < MR_NC * MR_N; i++) {
    s = s * 1103515245u + 12345u;
    J[i] = (i % 3 == 1) ? 0 : (double)(s >> 8 & 0xffff) / 65536.0 - 0.5;
  }
  for (int r = 0; r < MR_NC; r++)
    k[r] = 1e4 * (1 + r);
}

/* Descending eigenvalues of S and the top eigenvector, densely. */
static void mr_dense(const double *M0, const double *J, const double *k,
                     double *lam, double *z) {
  double w[MR_NC], *S = cmt_dense_S(MR_N, MR_NC, M0, J, k);
  for (int i = 0; i < MR_NC; i++) /* cmt_dense_S failed: a failure already */
    lam[i] = z[i] = NAN;
  if (S) {
    CMT_EQ_INT(LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', MR_NC, S, MR_NC, w),
               0);
    for (int i = 0; i < MR_NC; i++) {
      lam[i] = w[MR_NC - 1 - i];
      z[i] = S[i * MR_NC + MR_NC - 1];
    }
  }
  free(S);
}

/* COO JSON of a dense row-major matrix (lower: its lower triangle). */
static json_t *mr_coo(const double *A, int nr, int nc, int lower) {
  json_t *r = json_array(), *c = json_array(), *v = json_array();
  for (int i = 0; i < nr; i++)
    for (int j = 0; j < (lower ? i + 1 : nc); j++)
      if (A[i * nc + j] != 0) {
        json_array_append_new(r, json_integer(i));
        json_array_append_new(c, json_integer(j));
        json_array_append_new(v, json_real(A[i * nc + j]));
      }
  return json_pack("{s:[i,i],s:o,s:o,s:o}", "shape", nr, nc, "rows", r, "cols",
                   c, "values", v);
}

/* Runs the requests (JSON lines) through `cmodes serve --stdio ARGS` and
 * returns the responses, one JSON object per request, in an array. */
static json_t *mr_serve(const char *args, json_t *reqs) {
  char path[] = "/tmp/cmt_mxroute_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return NULL;
  FILE *f = fdopen(fd, "w");
  for (size_t i = 0; i < json_array_size(reqs); i++) {
    char *line = json_dumps(json_array_get(reqs, i),
                            JSON_COMPACT | JSON_REAL_PRECISION(17));
    fprintf(f, "%s\n", line);
    free(line);
  }
  fclose(f);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s serve --stdio %s < %s 2>/dev/null", CM_BINARY,
           args, path);
  int code = -1;
  char *out = cmt_run(cmd, &code);
  unlink(path);
  CMT_EQ_INT(code, 0);
  json_t *all = json_array();
  for (char *line = out ? strtok(out, "\n") : NULL; line;
       line = strtok(NULL, "\n"))
    json_array_append_new(all, json_loads(line, 0, NULL));
  free(out);
  return all;
}

static json_t *mr_req(int id, const char *path, json_t *body) {
  return json_pack("{s:i,s:s,s:s,s:o}", "id", id, "method", "POST", "path",
                   path, "body", body);
}

CM_TEST(server_matrices_dense_truth) {
  double M[MR_N * MR_N], J[MR_NC * MR_N], k[MR_NC], lam[MR_NC], z[MR_NC];
  mr_system(M, J, k);
  mr_dense(M, J, k, lam, z);
  int top = 0;
  for (int i = 1; i < MR_NC; i++)
    if (z[i] * z[i] > z[top] * z[top])
      top = i;
  json_t *kk = json_array();
  for (int r = 0; r < MR_NC; r++)
    json_array_append_new(kk, json_real(k[r]));
  json_t *names =
      json_pack("[s,s,s,s]", "hip_FL_x", "hip_FR_x", "knee_FL", "knee_FR");
  json_t *reqs = json_array();
  /* 1: lower triangle of M, names, options in the body and the query */
  json_array_append_new(
      reqs,
      mr_req(1, "/v1/analyze",
             json_pack("{s:{s:o,s:o,s:O,s:O},s:{s:i}}", "matrices", "M",
                       mr_coo(M, MR_N, MR_N, 1), "J", mr_coo(J, MR_NC, MR_N, 0),
                       "k", kk, "row_names", names, "options", "modes", 4)));
  /* 2: both triangles, the body as text with "options" first */
  json_t *b2 = json_pack("{s:{},s:{s:o,s:o,s:O}}", "options", "matrices", "M",
                         mr_coo(M, MR_N, MR_N, 0), "J",
                         mr_coo(J, MR_NC, MR_N, 0), "k", kk);
  char *t2 = json_dumps(b2, JSON_COMPACT | JSON_REAL_PRECISION(17));
  json_array_append_new(reqs,
                        mr_req(2, "/v1/analyze?modes=1", json_string(t2)));
  free(t2);
  json_decref(b2);
  json_t *out = mr_serve("", reqs);
  CMT_EQ_INT((int)json_array_size(out), 2);
  for (size_t i = 0; i < json_array_size(out); i++) {
    json_t *res = json_array_get(out, i);
    json_t *body = json_object_get(res, "body");
    CMT_EQ_INT((int)json_integer_value(json_object_get(res, "status")), 200);
    json_t *modes = json_object_get(body, "modes");
    CMT_EQ_INT((int)json_array_size(modes), i == 0 ? 4 : 1);
    for (size_t m = 0; m < json_array_size(modes); m++)
      CMT_REL(
          json_number_value(json_object_get(json_array_get(modes, m), "omega")),
          sqrt(lam[m]), 1e-10);
    json_t *c0 = json_array_get(
        json_object_get(json_array_get(modes, 0), "contacts"), 0);
    CMT_EQ_INT((int)json_integer_value(json_object_get(c0, "index")), top);
    CMT_REL(json_number_value(json_object_get(c0, "share")), z[top] * z[top],
            1e-9);
    const char *nm = json_string_value(json_object_get(c0, "name"));
    if (i == 0)
      CMT_TRUE(nm && !strcmp(nm, json_string_value(
                                     json_array_get(names, (size_t)top))));
    else
      CMT_TRUE(nm == NULL);
  }
  json_decref(out);
  json_decref(reqs);
  json_decref(kk);
  json_decref(names);
}

/* Each bad body: its status, error name and a piece of the message. */
CM_TEST(server_matrices_errors) {
  double M[MR_N * MR_N], J[MR_NC * MR_N], k[MR_NC];
  mr_system(M, J, k);
  double negM[MR_N * MR_N], asym[MR_N * MR_N];
  for (int i = 0; i < MR_N * MR_N; i++)
    negM[i] = -M[i], asym[i] = M[i];
  asym[1 * MR_N + 0] += 1; /* M(1,0) != M(0,1) */
  struct {
    json_t *body;
    int http;
    const char *error, *text;
  } cases[] = {
      {json_pack("{s:{s:o,s:o,s:f}}", "matrices", "M",
                 mr_coo(M, MR_N, MR_N - 1, 0), "J", mr_coo(J, MR_NC, MR_N, 0),
                 "k", 1e4),
       400, "invalid_scene", "a mass matrix is square"},
      {json_pack("{s:{s:o,s:o,s:f}}", "matrices", "M",
                 mr_coo(negM, MR_N, MR_N, 1), "J", mr_coo(J, MR_NC, MR_N, 0),
                 "k", 1e4),
       422, "not_spd", "not positive definite"},
      {json_pack("{s:{s:o,s:o,s:f}}", "matrices", "M",
                 mr_coo(asym, MR_N, MR_N, 0), "J", mr_coo(J, MR_NC, MR_N, 0),
                 "k", 1e4),
       400, "invalid_scene", "matrices.M is not symmetric: M(1,0)"},
      {json_pack("{s:{s:o,s:o,s:[f]}}", "matrices", "M",
                 mr_coo(M, MR_N, MR_N, 1), "J", mr_coo(J, MR_NC, MR_N, 0), "k",
                 1e4),
       400, "invalid_scene", "matrices.k: expected 4 stiffnesses"},
      {json_pack("{s:{s:o,s:o,s:f},s:i}", "matrices", "M",
                 mr_coo(M, MR_N, MR_N, 1), "J", mr_coo(J, MR_NC, MR_N, 0), "k",
                 1e4, "scene", 1),
       400, "usage", "scene: unknown key next to \"matrices\""},
      {json_pack("{s:{s:o,s:{s:[i,i],s:[i],s:[i],s:[f]},s:f}}", "matrices", "M",
                 mr_coo(M, MR_N, MR_N, 1), "J", "shape", MR_NC, MR_N, "rows", 0,
                 "cols", 9, "values", 1.0, "k", 1e4),
       400, "invalid_scene", "matrices.J.cols[0]: out of range"},
      {json_pack("{s:{s:o,s:o,s:f},s:{s:f}}", "matrices", "M",
                 mr_coo(M, MR_N, MR_N, 1), "J", mr_coo(J, MR_NC, MR_N, 0), "k",
                 -1.0, "options", "tol", 2.0),
       400, "usage", "tol"},
      {json_pack("{s:{s:o,s:o,s:f}}", "matrices", "M", mr_coo(M, MR_N, MR_N, 1),
                 "J", mr_coo(J, MR_NC, MR_N, 0), "k", -1.0),
       400, "invalid_scene", "k[0] = -1"},
  };
  int nc = (int)(sizeof cases / sizeof cases[0]);
  json_t *reqs = json_array();
  for (int i = 0; i < nc; i++)
    json_array_append_new(reqs, mr_req(i, "/v1/analyze", cases[i].body));
  /* and a limit: 4 rows against --max-contacts 3 */
  json_t *out = mr_serve("", reqs);
  CMT_EQ_INT((int)json_array_size(out), nc);
  for (int i = 0; i < nc && i < (int)json_array_size(out); i++) {
    json_t *res = json_array_get(out, (size_t)i);
    json_t *body = json_object_get(res, "body");
    CMT_EQ_INT((int)json_integer_value(json_object_get(res, "status")),
               cases[i].http);
    const char *e = json_string_value(json_object_get(body, "error"));
    const char *m = json_string_value(json_object_get(body, "message"));
    CMT_TRUE(e && !strcmp(e, cases[i].error));
    CMT_CONTAINS(m ? m : "", cases[i].text);
  }
  json_decref(out);
  json_t *one = json_array();
  json_array_append_new(one,
                        mr_req(0, "/v1/analyze",
                               json_pack("{s:{s:o,s:o,s:f}}", "matrices", "M",
                                         mr_coo(M, MR_N, MR_N, 1), "J",
                                         mr_coo(J, MR_NC, MR_N, 0), "k", 1e4)));
  out = mr_serve("--max-contacts 3", one);
  json_t *res = json_array_get(out, 0);
  CMT_EQ_INT((int)json_integer_value(json_object_get(res, "status")), 413);
  CMT_CONTAINS(json_string_value(
                   json_object_get(json_object_get(res, "body"), "message")),
               "limit of 3 (--max-contacts)");
  json_decref(out);
  json_decref(one);
  json_decref(reqs);
}
