/* test_fuzz_found.c: inputs that the long libFuzzer runs of the readers
 * found (docs/reliability.md), each reduced to its point and replayed here:
 * the reader must answer with a status and a message, not undefined
 * behaviour (UBSan aborts the sanitizer build's run of these tests). */
#include "cmodes.h"
#include "cmodes/import.h"
#include "cmtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Writes text to a fresh file under /tmp; returns its path (static). */
static const char *found_file(const char *name, const char *text) {
  static char path[4][96];
  static int slot;
  char *p = path[slot++ % 4];
  snprintf(p, sizeof path[0], "/tmp/cmodes-found-%ld-%s", (long)getpid(), name);
  FILE *f = fopen(p, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return p;
}

/* fuzz_deck: an atom type of 8e42 in `fix pour` (and in a LIGGGHTS
 * particle template) was converted to int (undefined); such a type is
 * not a type of the deck, so no density is read for it. */
CM_TEST(fuzz_found_deck_huge_type) {
  /* a committed deck with the fuzzer's lines after its own pour */
  FILE *f = fopen(CM_SOURCE_DIR "/data/lammps/decks/in.hooke-damped", "r");
  char *deck = calloc(1, 1 << 16);
  size_t n = f && deck ? fread(deck, 1, (1 << 16) - 512, f) : 0;
  if (f)
    fclose(f);
  CMT_TRUE(n > 0);
  if (!deck)
    return;
  snprintf(deck + n, 512, "\n%s",
           "fix bad all pour 10 8.12e42 1 region slab dens 1111 1111\n"
           "fix pt all particletemplate/sphere 1 atom_type 1e300 density "
           "constant 1111\n"
           "fix neg all pour 10 -3e300 1 region slab dens 1111 1111\n");
  const char *path = found_file("in.deck", deck);
  free(deck);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_lammps_deck_t *d = NULL;
  int st = cm_lammps_deck_read(&ctx, path, &d);
  if (st)
    CMT_FAIL("%s", ctx.message);
  if (d) {
    CMT_REL(d->density[1], 2500, 0); /* the deck's own pour, type 1 */
    for (int t = 0; t <= CM_LAW_MAX_TYPES; t++)
      CMT_TRUE(d->density[t] != 1111);
  }
  cm_lammps_deck_destroy(&d);
  unlink(path);
}

/* fuzz_mtx: an array size line "2 111...1" (past INT_MAX) was refused, but
 * its rows x cols product was formed first (signed overflow). */
CM_TEST(fuzz_found_mtx_huge_array) {
  const char *M = "%%MatrixMarket matrix coordinate real general\n"
                  "3 3 3\n1 1 1\n2 2 1\n3 3 1\n";
  const char *J = "%%MatrixMarket matrix array real general\n"
                  "2 1111111111111111111111111111111\n5\n1e5\n";
  const char *k = "%%MatrixMarket matrix array real general\n2 1\n1\n1\n";
  const char *pm = found_file("M.mtx", M), *pj = found_file("J.mtx", J),
             *pk = found_file("k.mtx", k);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  int st = cm_system_read_matrices(&ctx, pm, pj, pk, &sys);
  CMT_EQ_INT(st, CM_PARSE);
  CMT_CONTAINS(ctx.message, "size line");
  CMT_CONTAINS(ctx.message, "J.mtx:2");
  cm_system_destroy(&sys);
  unlink(pm), unlink(pj), unlink(pk);
}

/* fuzz_dump: a 200-byte dump that declares 216 121 615 atoms made the
 * reader allocate its arrays for all of them at once (5.2 GB) before
 * reading a line. In a child whose address space may grow by 512 MiB only,
 * the read must end as the truncated file it is, not out of memory. */
CM_TEST(fuzz_found_dump_declared_atoms) {
  const char *dump = "ITEM: TIMESTEP\n15\nITEM: NUMBER OF ATOMS\n216121615\n"
                     "ITEM: BOX BOUNDS ff ff ff\n0 1\n0 1\n0 1\n"
                     "ITEM: ATOMS id type x y z radius\n"
                     "1 1 0.5 0.5 0.5 0.1\n";
  const char *path = found_file("big.dump", dump);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    long pages = 0, page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld", &pages) != 1)
      _exit(3);
    fclose(f);
    struct rlimit rl;
    getrlimit(RLIMIT_AS, &rl);
    rlim_t want = (rlim_t)pages * (rlim_t)page + ((rlim_t)512 << 20);
    if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want)
      rl.rlim_cur = want;
    setrlimit(RLIMIT_AS, &rl);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_dump_options_t o;
    cm_dump_options_init(&o);
    cm_dump_t *d = NULL;
    int st = cm_dump_read(&ctx, path, &o, &d);
    cm_dump_destroy(&d);
    if (st != CM_PARSE || !strstr(ctx.message, "after 1 of the 216121615")) {
      fprintf(stderr, "status %d: %s\n", st, ctx.message);
      _exit(1);
    }
    _exit(0);
  }
  int ws = 0;
  CMT_TRUE(pid > 0 && waitpid(pid, &ws, 0) == pid);
  CMT_TRUE(WIFEXITED(ws));
  CMT_EQ_INT(WEXITSTATUS(ws), 0);
  unlink(path);
}

/* fuzz_deck: a LIGGGHTS 2.x wall fix with no primitive ("fix w all
 * wall/gran/hertz/history", 4 words) read argv[4] past the words: the
 * previous command's freed line under ASan (heap-use-after-free). */
CM_TEST(fuzz_found_deck_short_wall_fix) {
  const char *deck = "units si\ndimension 3\n"
                     "fix ins all pour 10 1 1 region slab dens 2500 2500\n"
                     "fix w all wall/gran/hertz/history\n";
  const char *path = found_file("in.wall", deck);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_lammps_deck_t *d = NULL;
  CMT_EQ_INT(cm_lammps_deck_read(&ctx, path, &d), CM_PARSE);
  CMT_CONTAINS(ctx.message, "fix wall/gran");
  CMT_CONTAINS(ctx.message, ":4:");
  cm_lammps_deck_destroy(&d);
  unlink(path);
}

/* fuzz_mtx: a banner "%%MatrixMarKet" passed the scan (case-insensitive),
 * then CHOLMOD's reader, which takes the banner word exactly, read the file
 * another way, failed ("premature EOF") and leaked its dense matrix (LSan
 * in the sanitizer build). The banner word is now exact. */
CM_TEST(fuzz_found_mtx_banner_case) {
  const char *text = "%%MatrixMarKet matrix array real symmetric\n"
                     "%%%Matraket\n3 3\n 3\n211\n 1\n  3\n 3\n210";
  const char *p = found_file("L.mtx", text);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_system_t *sys = NULL;
  CMT_EQ_INT(cm_system_read_matrices(&ctx, p, p, p, &sys), CM_PARSE);
  CMT_CONTAINS(ctx.message, "L.mtx:1: not a Matrix Market file");
  cm_system_destroy(&sys);
  unlink(p);
}

/* fuzz_deck: an equal-style variable that names itself twice expanded
 * 2^33 times under the depth limit of 32 (a hang: libFuzzer's timeout);
 * one evaluation now stops after 10000 expansions with an error naming
 * the line. */
CM_TEST(fuzz_found_deck_self_reference) {
  const char *deck = "units si\ndimension 3\n"
                     "variable a equal v_a+v_a\n"
                     "fix ins all pour 10 1 1 region slab dens $(v_a) 2500\n";
  const char *path = found_file("in.selfref", deck);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_lammps_deck_t *d = NULL;
  CMT_EQ_INT(cm_lammps_deck_read(&ctx, path, &d), CM_PARSE);
  CMT_CONTAINS(ctx.message, "variable references");
  CMT_CONTAINS(ctx.message, ":4:");
  cm_lammps_deck_destroy(&d);
  unlink(path);
}

/* fuzz_deck, session 8, after 7.6e6 executions: a variable whose expression
 * opened thousands of parentheses and signs overflowed the stack of the
 * recursive-descent evaluator (ASan: stack-overflow in cm__ex_unary). A
 * nesting limit of 200 makes it a parse error naming the line; 150 levels
 * still evaluate (to the number inside). */
CM_TEST(fuzz_found_deck_deep_nesting) {
  char deck[40000];
  int n =
      snprintf(deck, sizeof deck, "units si\ndimension 3\nvariable d equal ");
  for (int k = 0; k < 150; k++)
    deck[n++] = '(';
  n += snprintf(deck + n, sizeof deck - (size_t)n, "-2.5");
  for (int k = 0; k < 150; k++)
    deck[n++] = ')';
  n += snprintf(deck + n, sizeof deck - (size_t)n, "\nvariable deep equal -");
  for (int k = 0; k < 10000; k++)
    deck[n++] = k % 2 ? '(' : '-';
  deck[n++] = '1';
  for (int k = 0; k < 5000; k++)
    deck[n++] = ')';
  snprintf(deck + n, sizeof deck - (size_t)n,
           "\nfix ins all pour 10 1 1 region slab dens $(v_d) $(v_deep)\n");
  const char *path = found_file("in.deep", deck);
  cm_context_t ctx;
  cm_context_init(&ctx);
  cm_lammps_deck_t *d = NULL;
  CMT_EQ_INT(cm_lammps_deck_read(&ctx, path, &d), CM_PARSE);
  CMT_CONTAINS(ctx.message, "more than 200 levels");
  CMT_CONTAINS(ctx.message, ":5:");
  cm_lammps_deck_destroy(&d);
  unlink(path);
}

/* fuzz_import (a deck and a dump): on a periodic axis an atom at z = 1e19
 * in a box 0.5 long needed 2e19 images, converted to int (undefined); the
 * contact search now refuses an atom that far outside the periodic box,
 * naming it. The same atom within a few box lengths is wrapped, as LAMMPS
 * wraps it, and finds its contact. */
CM_TEST(fuzz_found_dump_periodic_far_atom) {
  const char *fmt = "ITEM: TIMESTEP\n1\nITEM: NUMBER OF ATOMS\n2\n"
                    "ITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 0.5\n"
                    "ITEM: ATOMS id type x y z radius mass\n"
                    "1 1 0.5 0.5 0.05 0.1 1\n2 1 0.5 0.5 %s 0.1 1\n";
  cm_dump_options_t o;
  cm_dump_options_init(&o);
  o.k = 1e5, o.periodic = CM_DUMP_PERIODIC_IMAGE;
  const char *z[2] = {"1.0044700000000001e+19", "2.4"}; /* 2.4: 0.4 wrapped */
  for (int k = 0; k < 2; k++) {
    char text[512];
    snprintf(text, sizeof text, fmt, z[k]);
    const char *path = found_file("far.dump", text);
    cm_context_t ctx;
    cm_context_init(&ctx);
    cm_scene_t *s = NULL;
    int st = cm_import_dump(&ctx, path, &o, &s);
    if (k == 0) {
      CMT_EQ_INT(st, CM_INVALID_SCENE);
      CMT_CONTAINS(ctx.message, ":11: atom 2 at z = 1.00447e+19 lies");
      CMT_CONTAINS(ctx.message, "box lengths outside the periodic box");
    } else { /* 0.05 and 0.4 + 0.5 k: 0.15 apart through the boundary */
      CMT_EQ_INT(st, CM_OK);
      CMT_EQ_INT(s ? s->ncontacts : -1, 1);
    }
    cm_scene_destroy(&s);
    unlink(path);
  }
}
