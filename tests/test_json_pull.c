/* test_json_pull.c: the streaming JSON scene reader against the truth it
 * replaces, jansson's parse plus the tree reader (cm__scene_parse_json_tree):
 * the same status, message and path on thousands of mutated documents, the
 * same scene bits when both accept; numbers bit-equal to strtod; keys in any
 * order; the limits stop reading. */
#include "cmtest.h"
#include "internal.h"
#include "io/json_pull.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *seeds[] = {
    "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2,\n"
    " \"meta\": {\"title\": \"bar \\u00e9\\n\", \"n\": [1, 2.5e-3, -0.0, "
    "true, null, {\"x\": \"\\ud83d\\ude00\"}], \"e\": {}},\n"
    " \"bodies\": [{\"name\": \"bar\", \"mass\": 2.0, \"inertia\": 0.005, "
    "\"position\": [0, 0], \"meta\": [1]},\n"
    "  {\"name\": \"ground\", \"fixed\": true}],\n"
    " \"contacts\": [{\"a\": \"bar\", \"b\": \"ground\", \"point\": [-0.1, 0],"
    " \"normal\": [0, 1], \"stiffness\": 1e5, \"name\": \"left\"},\n"
    "  {\"a\": 0, \"b\": null, \"point\": [0.1, 0], \"normal\": [0, 2], "
    "\"stiffness\": 100000}]}\n",
    "{\"format\": \"cmodes-scene\", \"version\": 2, \"dim\": 3, \"timestep\": "
    "1e-4, \"name\": \"b3\",\n \"bodies\": [{\"name\": \"bar\", \"mass\": 2,"
    " \"inertia\": [[0.001, 0, 0], [0, 0.005, 0], [0, 0, 0.005]], "
    "\"position\": [0, 0, 0.02], \"orientation\": [0.96592582628906831, 0, 0,"
    " 0.25881904510252074]}, {\"fixed\": true, \"mass\": 1}],\n"
    " \"contacts\": [{\"a\": 0, \"b\": 1, \"point\": [-0.0866, -0.05, 0], "
    "\"normal\": [0, 0, 1], \"stiffness\": 1e5, \"stiffness_t\": 5e4, "
    "\"damping_n\": 3.5, \"damping_t\": 0.25, \"arm_a\": [1, 2, 3], \"arm_b\":"
    " [0, 0, -1]}, {\"a\": \"bar\", \"point\": [0.0866, 0.05, 0], \"normal\":"
    " [0, 0, 1], \"stiffness\": 1e5}]}",
    "{\"contacts\": [{\"stiffness\": 7, \"normal\": [1, 1], \"point\": [1, 2],"
    " \"a\": \"w\"}], \"bodies\": [{\"position\": [3, 4], \"inertia\": 2, "
    "\"mass\": 1, \"name\": \"w\"}], \"dim\": 2, \"version\": 1, \"format\": "
    "\"cmodes-scene\"}",
    "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 3, \"bodies\": "
    "[{\"mass\": 1, \"inertia\": [1, 2, 3], \"position\": [0, 0, 0]}], "
    "\"contacts\": [{\"a\": 0, \"point\": [1, 0, 0], \"normal\": [0, 0, 1], "
    "\"stiffness\": 1}]}",
};

/* Bytes a mutation inserts: JSON's own and a few that break it. */
static const char alphabet[] = "{}[]:,\"\\ 0123456789.eE+-tfnrul/ \n\t\x01"
                               "\xc3\xa9\xff\xed\xa0\x80x";

/* the draws restart in every test that takes them (rng_reset), so a test
 * sees the same inputs alone (ctest) or after others (cmodes_tests with no
 * name) */
#define RNG_SEED 88172645463325252ULL
static uint64_t rng = RNG_SEED;
static void rng_reset(void) { rng = RNG_SEED; }
static unsigned next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (unsigned)(rng >> 11);
}

static int same_scene(const cm_scene_t *a, const cm_scene_t *b) {
  if (a->dim != b->dim || a->nbodies != b->nbodies ||
      a->ncontacts != b->ncontacts || a->timestep_s != b->timestep_s)
    return 0;
  if ((a->name == NULL) != (b->name == NULL) ||
      (a->name && strcmp(a->name, b->name)))
    return 0;
  if ((a->meta_json == NULL) != (b->meta_json == NULL) ||
      (a->meta_json && strcmp(a->meta_json, b->meta_json)))
    return 0;
  for (int i = 0; i < a->nbodies; i++) {
    const char *na = cm_scene_body_name(a, i), *nb = cm_scene_body_name(b, i);
    if (memcmp(&a->bodies[i], &b->bodies[i], sizeof a->bodies[i]) ||
        (na == NULL) != (nb == NULL) || (na && strcmp(na, nb)))
      return 0;
  }
  for (int i = 0; i < a->ncontacts; i++) {
    const char *na = cm_scene_contact_name(a, i),
               *nb = cm_scene_contact_name(b, i);
    if (memcmp(&a->contacts[i], &b->contacts[i], sizeof a->contacts[i]) ||
        (na == NULL) != (nb == NULL) || (na && strcmp(na, nb)))
      return 0;
  }
  return 1;
}

/* 1 if both readers agree on text. */
static int agree(const char *text, size_t len) {
  cm_context_t c1, c2;
  cm_context_init(&c1);
  cm_context_init(&c2);
  cm_scene_t *s1 = NULL, *s2 = NULL;
  int st1 = cm__scene_parse_json_tree(&c1, text, len, "m.json", &s1);
  int st2 = cm_scene_parse_json(&c2, text, len, "m.json", &s2);
  int ok = st1 == st2 &&
           (st1 ? !strcmp(c1.message, c2.message) && !strcmp(c1.path, c2.path)
                : same_scene(s1, s2));
  if (!ok) {
    fprintf(stderr,
            "---- %zu bytes:\n%.*s\n---- tree %d: %s [%s]\n"
            "---- stream %d: %s [%s]\n",
            len, (int)len, text, st1, c1.message, c1.path, st2, c2.message,
            c2.path);
  }
  cm_scene_destroy(&s1);
  cm_scene_destroy(&s2);
  return ok;
}

static size_t mutate(char *buf, size_t len, size_t cap) {
  unsigned op = next_rand() % 5, at = len ? next_rand() % (unsigned)len : 0;
  char c = alphabet[next_rand() % (sizeof alphabet - 1)];
  if (op == 0 && len) { /* delete */
    memmove(buf + at, buf + at + 1, len - at - 1);
    return len - 1;
  }
  if (op == 1 && len + 1 < cap) { /* insert */
    memmove(buf + at + 1, buf + at, len - at);
    buf[at] = c;
    return len + 1;
  }
  if (op == 2 && len) { /* replace */
    buf[at] = c;
    return len;
  }
  if (op == 3) /* truncate */
    return at;
  unsigned n = 1 + next_rand() % 12; /* copy a slice elsewhere */
  unsigned from = len ? next_rand() % (unsigned)len : 0;
  if (from + n > len || len + n >= cap)
    return len;
  memmove(buf + at + n, buf + at, len - at);
  memmove(buf + at, buf + (from >= at ? from + n : from), n);
  return len + n;
}

CM_TEST(json_pull_vs_jansson_mutants) {
  rng_reset();
  char buf[4096];
  int bad = 0, accepted = 0, total = 0;
  for (size_t s = 0; s < sizeof seeds / sizeof *seeds; s++) {
    size_t len0 = strlen(seeds[s]);
    CMT_TRUE(agree(seeds[s], len0));
    for (int m = 0; m < 2500 && bad < 5; m++) {
      memcpy(buf, seeds[s], len0);
      size_t len = len0;
      int k = 1 + (int)(next_rand() % 3);
      for (int j = 0; j < k; j++)
        len = mutate(buf, len, sizeof buf);
      total++;
      if (!agree(buf, len))
        bad++;
      cm_context_t c;
      cm_context_init(&c);
      cm_scene_t *t = NULL;
      if (!cm_scene_parse_json(&c, buf, len, "m", &t))
        accepted++;
      cm_scene_destroy(&t);
    }
  }
  CMT_EQ_INT(bad, 0);
  CMT_TRUE(accepted > 100); /* the mutants are not all rejected */
  CMT_TRUE(total >= 10000);
}

/* Hand-made cases of each syntax error the lexer knows. */
CM_TEST(json_pull_syntax_errors) {
  static const char *cases[] = {"",
                                " ",
                                "x",
                                "nul",
                                "nulll",
                                "[1,]",
                                "[1 2]",
                                "{\"a\" 1}",
                                "{\"a\":}",
                                "{1:2}",
                                "{\"a\":1,}",
                                "{\"a\":1 \"b\":2}",
                                "[\"a\nb\"]",
                                "[\"a\x01\"]",
                                "[\"\\x\"]",
                                "[\"\\u12g4\"]",
                                "[\"\\ud800\"]",
                                "[\"\\udc00\"]",
                                "[\"\\ud800\\u0041\"]",
                                "[\"\\u0000\"]",
                                "{\"\\u0000\": 1}",
                                "[01]",
                                "[-]",
                                "[1.]",
                                "[1e]",
                                "[1e+]",
                                "[-a]",
                                "[9223372036854775808]",
                                "[-9223372036854775809]",
                                "[-9223372036854775808]",
                                "[1e400]",
                                "[\"abc",
                                "[\"\\",
                                "[\"\\u12",
                                "[\xff]",
                                "[\"\xff\"]",
                                "[\"\xc3\"]",
                                "[tru\xff]",
                                "[1\xff]",
                                "[\xc3\xa9]",
                                "{} x",
                                "[] []",
                                "\xef\xbb\xbf{}",
                                "[\"0123456789012345678901234\x01\"]",
                                "{\"a\":1, \"a\":2}",
                                "{\"format\": 1, \"format\": 2}",
                                "[[[[]]]",
                                "{\"a\": [}",
                                "[\"\\/\"]",
                                "{\"meta\": {\"x\": 1, \"x\": 1}}",
                                "{\"bodies\": [{\"a\":1,\"a\":1}]}"};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    CMT_TRUE(agree(cases[i], strlen(cases[i])));
  /* jansson's depth limit: 2048 values */
  size_t n = 2100;
  char *deep = malloc(2 * n + 2);
  for (size_t d = 2040; d < 2052; d++) {
    size_t len = 0;
    for (size_t j = 0; j < d; j++)
      deep[len++] = '[';
    for (size_t j = 0; j < d; j++)
      deep[len++] = ']';
    CMT_TRUE(agree(deep, len));
  }
  free(deep);
}

/* Every top-level key order gives the tree reader's result. */
CM_TEST(json_pull_key_orders) {
  rng_reset();
  const char *parts[] = {
      "\"format\": \"cmodes-scene\"",
      "\"version\": 2",
      "\"dim\": 2",
      "\"bodies\": [{\"name\": \"p\", \"mass\": 1, \"inertia\": 1, "
      "\"position\": [0, 0]}]",
      "\"contacts\": [{\"a\": \"p\", \"point\": [1, 0], \"normal\": [0, 1], "
      "\"stiffness\": 2, \"damping_n\": 1}]",
      "\"timestep\": 0.5",
      "\"junk\": 1"};
  int perm[7], ok = 1;
  for (int trial = 0; trial < 400; trial++) {
    int n = trial < 200 ? 6 : 7; /* with an unknown key from 200 on */
    for (int i = 0; i < n; i++)
      perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
      int j = (int)(next_rand() % (unsigned)(i + 1)), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    char doc[1024] = "{";
    for (int i = 0; i < n; i++) {
      strcat(doc, i ? ", " : "");
      strcat(doc, parts[perm[i]]);
    }
    strcat(doc, "}");
    ok &= agree(doc, strlen(doc));
    if (trial == 3 || trial == 250) { /* also with a bad contact */
      char *p = strstr(doc, "\"stiffness\": 2");
      p[13] = '0';
      ok &= agree(doc, strlen(doc));
    }
  }
  CMT_TRUE(ok);
}

/* The top-level strings survive the scratch growing under them: a name
 * read before bodies that are read late (dim comes after them) and carry
 * long names. */
CM_TEST(json_pull_late_arrays) {
  size_t cap = 200000, len = 0;
  char *doc = malloc(cap);
  len += (size_t)snprintf(doc + len, cap - len,
                          "{\"name\": \"the title\", \"format\": "
                          "\"cmodes-scene\", \"version\": 1, \"bodies\": [");
  for (int i = 0; i < 300; i++)
    len += (size_t)snprintf(doc + len, cap - len,
                            "%s{\"name\": \"body number %d with a long "
                            "name to grow the scratch\", \"mass\": 1, "
                            "\"inertia\": 1, \"position\": [%d, 0]}",
                            i ? ", " : "", i, i);
  len += (size_t)snprintf(
      doc + len, cap - len,
      "], \"contacts\": [{\"a\": \"body number 7 with a long name to "
      "grow the scratch\", \"point\": [7, 0], \"normal\": [0, 1], "
      "\"stiffness\": 1}], \"dim\": 2}");
  CMT_TRUE(agree(doc, len));
  cm_context_t c;
  cm_context_init(&c);
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm_scene_parse_json(&c, doc, len, "late", &s), CM_OK);
  CMT_TRUE(s && s->name && !strcmp(s->name, "the title"));
  CMT_TRUE(s && s->nbodies == 300 && s->contacts[0].a == 7);
  cm_scene_destroy(&s);
  /* the same scene wrapped, with long option keys after it */
  char *w = malloc(len + 4096);
  int n = snprintf(w, len + 4096, "{\"scene\": %.*s, \"options\": {", (int)len,
                   doc);
  for (int i = 0; i < 40; i++)
    n += snprintf(w + n, len + 4096 - (size_t)n,
                  "%s\"option key number %d, long enough\": %d", i ? ", " : "",
                  i, i);
  n += snprintf(w + n, len + 4096 - (size_t)n, "}}");
  json_t *opts = NULL;
  CMT_EQ_INT(cm__scene_parse_wrapped(&c, w, (size_t)n, NULL, &s, &opts), CM_OK);
  CMT_TRUE(s && s->name && !strcmp(s->name, "the title"));
  CMT_EQ_INT((int)json_object_size(opts), 40);
  json_decref(opts);
  cm_scene_destroy(&s);
  free(w);
  free(doc);
}

/* Reals read bit-equal to strtod (correctly rounded), in many formats. */
CM_TEST(json_pull_numbers_exact) {
  rng_reset();
  static const char *fmts[] = {"%.17g", "%.15g", "%.16e", "%.3e",
                               "%.1f",  "%.20g", "%.6e"};
  char doc[1024], num[400];
  int bad = 0;
  for (int i = 0; i < 20000 && bad < 3; i++) {
    uint64_t bits = ((uint64_t)next_rand() << 32) ^ next_rand();
    double x;
    if (i % 3 == 0) { /* any finite double */
      memcpy(&x, &bits, sizeof x);
      if (!isfinite(x))
        continue;
    } else { /* scene-like magnitudes */
      x = ((double)(bits >> 11) / 9007199254740992.0 - 0.5) *
          pow(10.0, (int)(next_rand() % 40) - 20);
    }
    snprintf(num, sizeof num, fmts[i % 7], x);
    if (!strpbrk(num, ".e")) /* a JSON integer is an integer: make it real */
      strcat(num, ".0");
    snprintf(doc, sizeof doc,
             "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2, "
             "\"bodies\": [{\"mass\": 1, \"inertia\": 1, \"position\": "
             "[%s, 0]}]}",
             num);
    cm_context_t c;
    cm_context_init(&c);
    cm_scene_t *s = NULL;
    int st = cm_scene_parse_json(&c, doc, strlen(doc), "n", &s);
    double want = strtod(num, NULL);
    if (st || memcmp(&s->bodies[0].position[0], &want, sizeof want)) {
      fprintf(stderr, "%s: got %.17g want %.17g (%s)\n", num,
              s ? s->bodies[0].position[0] : NAN, want, c.message);
      bad++;
    }
    cm_scene_destroy(&s);
  }
  CMT_EQ_INT(bad, 0);
}

/* The extended fast path (16 to 19 digits, |exponent| <= 27) against
 * strtod on 300000 numbers: random doubles near 1 written with 16 to 19
 * significant digits and decimal exponents -27..27, the pile's kind. */
CM_TEST(json_pull_numbers_19_digits) {
  rng_reset();
  char num[64];
  int bad = 0;
  for (int i = 0; i < 300000 && bad < 3; i++) {
    double x = ((double)(next_rand() & 0x1FFFFF) * 4294967296.0 +
                (double)(next_rand() & 0xFFFFFFFF)) /
               9007199254740992.0;
    int digits = 16 + i % 4, e = (int)(next_rand() % 55) - 27;
    int n = snprintf(num, sizeof num, "%.*fe%d", digits, x, e);
    double got, want = strtod(num, NULL);
    cm_context_t c;
    cm_context_init(&c);
    cm__jp_t jp;
    cm__jp_init(&jp, num, (size_t)n, 0);
    int t = cm__jp_scan(&jp);
    got = jp.num;
    cm__jp_free(&jp);
    if (t != CM__JT_REAL || memcmp(&got, &want, sizeof got)) {
      fprintf(stderr, "%s: got %.17g want %.17g\n", num, got, want);
      bad++;
    }
  }
  CMT_EQ_INT(bad, 0);
}

/* Digits are read 8 at a time where they fit (json_pull.c,
 * cm__jp_digits): every split of a number's digits into 8-byte chunks,
 * with runs of 0 to 24 leading zeros (inside a chunk, filling chunks,
 * across them), 1 to 22 significant digits and an integer part of 0 to 20
 * digits, each read exactly as strtod reads it, and the same digits as
 * integers as strtoll does. Numbers end at the buffer's end too (no 8
 * bytes left), and before a non-digit that looks like one ('/', ':'). */
CM_TEST(json_pull_numbers_chunks) {
  char num[96];
  int bad = 0, tried = 0;
  for (int ip = 0; ip <= 20 && bad < 3; ip++)
    for (int zeros = 0; zeros <= 24; zeros++)
      for (int sig = 1; sig <= 22; sig++, tried++) {
        int n = 0;
        for (int i = 0; i < ip; i++) /* integer part, no leading zero */
          num[n++] = (char)('1' + (i + sig) % 9);
        if (!ip)
          num[n++] = '0';
        num[n++] = '.';
        for (int i = 0; i < zeros; i++)
          num[n++] = '0';
        for (int i = 0; i < sig; i++)
          num[n++] = (char)('0' + (i * 7 + zeros + 3) % 10);
        int end = tried % 3; /* the end of the buffer, '/', ':' */
        num[n] = end == 1 ? '/' : ':';
        num[n + 1] = 0;
        double want = strtod(num, NULL), got = NAN;
        cm__jp_t jp;
        cm__jp_init(&jp, num, (size_t)n + (end ? 1 : 0), 0);
        int t = cm__jp_scan(&jp);
        got = jp.num;
        size_t stop = jp.pos;
        cm__jp_free(&jp);
        /* with a '/' or ':' after it the token is not a number (jansson's
         * lookahead): only its end is checked */
        if (end ? stop != (size_t)n
                : t != CM__JT_REAL || memcmp(&got, &want, sizeof got)) {
          fprintf(stderr, "%.*s: got %.17g want %.17g (token %d, stop %zu)\n",
                  n, num, got, want, t, stop);
          bad++;
        }
      }
  CMT_EQ_INT(bad, 0);
  /* integers of 1 to 19 digits (below 2^63: the first is 1) */
  for (int nd = 1; nd <= 19 && !bad; nd++) {
    char in[32];
    for (int i = 0; i < nd; i++)
      in[i] = (char)(i ? '9' - i % 10 : '1');
    in[nd] = 0;
    cm__jp_t jp;
    cm__jp_init(&jp, in, (size_t)nd, 0);
    int t = cm__jp_scan(&jp);
    if (t != CM__JT_INT || jp.ival != strtoll(in, NULL, 10))
      bad++, fprintf(stderr, "%s: integer read as %lld\n", in, jp.ival);
    cm__jp_free(&jp);
  }
  CMT_EQ_INT(bad, 0);
}

CM_TEST(json_pull_limits) {
  const char *doc =
      "{\"format\": \"cmodes-scene\", \"version\": 1, \"dim\": 2, \"bodies\": "
      "[{\"mass\": 1, \"inertia\": 1, \"position\": [0, 0]}, {\"fixed\": "
      "true}], \"contacts\": [{\"a\": 0, \"point\": [0, 0], \"normal\": [0, "
      "1], \"stiffness\": 1}, {\"a\": 0, \"point\": [1, 0], \"normal\": [0, "
      "1], \"stiffness\": 1}, {\"a\": 0, \"point\": [2, 0], \"normal\": [0, "
      "1], \"stiffness\": 1}], \"meta\": [[[[1]]]]}";
  cm__scene_limits_t lim = {
      0, 0, 2, "the test's limit", NULL, NULL, " (--max-contacts)"};
  cm_context_t c;
  cm_context_init(&c);
  cm_scene_t *s = NULL;
  CMT_EQ_INT(cm__scene_parse_json_limited(&c, doc, strlen(doc), "l", &lim, &s),
             CM_LIMIT);
  CMT_TRUE(s == NULL);
  CMT_CONTAINS(c.message, "contacts: more than the test's limit of 2 contacts "
                          "(--max-contacts)");
  CMT_CONTAINS(c.path, "contacts");
  lim.max_contacts = 3;
  lim.max_bodies = 1;
  CMT_EQ_INT(cm__scene_parse_json_limited(&c, doc, strlen(doc), "l", &lim, &s),
             CM_LIMIT);
  CMT_CONTAINS(c.message, "bodies: more than the test's limit of 1 bodies");
  lim.max_bodies = 2;
  lim.max_depth = 4; /* meta nests 5 levels under the root object */
  CMT_EQ_INT(cm__scene_parse_json_limited(&c, doc, strlen(doc), "l", &lim, &s),
             CM_LIMIT);
  CMT_CONTAINS(c.message, "JSON nested deeper than the test's limit of 4");
  lim.max_depth = 5;
  CMT_EQ_INT(cm__scene_parse_json_limited(&c, doc, strlen(doc), "l", &lim, &s),
             CM_OK);
  CMT_EQ_INT(s->ncontacts, 3);
  CMT_CONTAINS(s->meta_json, "[[[[1]]]]");
  cm_scene_destroy(&s);
}

/* {"scene": ..., "options": ...}: the scene streamed, the options a tree. */
CM_TEST(json_pull_wrapped) {
  const char *scene = seeds[1];
  char doc[2048];
  snprintf(doc, sizeof doc, "{\"options\": {\"tol\": 1e-9}, \"scene\": %s}",
           scene);
  cm_context_t c;
  cm_context_init(&c);
  cm_scene_t *s = NULL, *ref = NULL;
  json_t *opts = NULL;
  CMT_EQ_INT(cm__scene_parse_wrapped(&c, doc, strlen(doc), NULL, &s, &opts),
             CM_OK);
  CMT_EQ_INT(cm_scene_parse_json(&c, scene, strlen(scene), "scene", &ref),
             CM_OK);
  CMT_TRUE(s && ref && same_scene(s, ref));
  CMT_TRUE(json_is_object(opts) &&
           json_real_value(json_object_get(opts, "tol")) == 1e-9);
  json_decref(opts);
  cm_scene_destroy(&s);
  cm_scene_destroy(&ref);
  snprintf(doc, sizeof doc, "{\"scene\": %s, \"extra\": 1}", scene);
  CMT_EQ_INT(cm__scene_parse_wrapped(&c, doc, strlen(doc), NULL, &s, &opts),
             CM_USAGE);
  CMT_CONTAINS(c.path, "extra");
  CMT_EQ_INT(cm__scene_parse_wrapped(&c, "{\"scene\": 5}", 12, NULL, &s, &opts),
             CM_INVALID_SCENE);
  CMT_EQ_INT(
      cm__scene_parse_wrapped(&c, "{\"scene\": {},}", 14, NULL, &s, &opts),
      CM_PARSE);
  CMT_CONTAINS(c.message, "request body:1:14: malformed JSON: string or '}' "
                          "expected near '}'");
  CMT_CONTAINS(c.path, "(body)");
  CMT_EQ_INT(
      cm__scene_parse_wrapped(&c, "{\"scene\": {}}", 13, NULL, &s, &opts),
      CM_INVALID_SCENE);
  CMT_CONTAINS(c.message, "scene: format");
}
