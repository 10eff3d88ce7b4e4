/* util.c: timers, threads, deterministic reductions, seeded random numbers,
 * checked allocation. */
#include "internal.h"
#include "jcheck.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

double cm__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

size_t cm__input_limit(void) {
  const char *env = getenv("CMODES_MAX_INPUT");
  if (env && *env) {
    char *end;
    double v = strtod(env, &end);
    if (end != env && !*end && v >= 1 && v < 1.8e19)
      return (size_t)v;
  }
  /* physical memory / 4, asked once: sysconf(_SC_PHYS_PAGES) is a sysinfo
   * call, and the line readers ask for the limit at every line (it was a
   * tenth of a dump reader's time on short lines) */
  static _Atomic size_t quarter;
  size_t q = quarter;
  if (!q) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    q = pages <= 0 || size <= 0 ? (size_t)1 << 30
                                : (size_t)((double)pages * (double)size / 4);
    quarter = q;
  }
  return q;
}

FILE *cm__fopen_input(const char *path, const char *mode) {
  FILE *f = fopen(path, mode);
  struct stat sb;
  if (f && !fstat(fileno(f), &sb) && S_ISDIR(sb.st_mode)) {
    fclose(f);
    errno = EISDIR;
    return NULL;
  }
  return f;
}

long cm__getline_limited(char **buf, size_t *cap, FILE *f, size_t *total) {
  size_t limit = cm__input_limit(), n = 0;
  long r = 0;
  int c = EOF;
  flockfile(f);
  while ((c = getc_unlocked(f)) != EOF) {
    if (n + 2 > *cap) {
      size_t nc = *cap ? 2 * *cap : 256;
      char *nb = realloc(*buf, nc);
      if (!nb) {
        r = -4;
        break;
      }
      *buf = nb, *cap = nc;
    }
    (*buf)[n++] = (char)c;
    if (++*total > limit) {
      r = -2;
      break;
    }
    if (c == '\n')
      break;
    if (n > CM__MAX_LINE) {
      r = -3;
      break;
    }
  }
  funlockfile(f);
  if (r)
    return r;
  if (n == 0)
    return -1;
  (*buf)[n] = 0;
  return (long)n;
}

int cm__input_error(cm_context_t *ctx, const char *src, long lineno, long r) {
  char where[64] = "";
  if (lineno > 0)
    snprintf(where, sizeof where, ":%ld", lineno);
  if (r == -3)
    return CM__ERR(ctx, CM_LIMIT, NULL,
                   "%s%s: a line longer than %zu bytes: not a text file of "
                   "this format (binary data, /dev/zero?)",
                   src, where, CM__MAX_LINE);
  if (r == -2)
    return CM__ERR(ctx, CM_LIMIT, NULL,
                   "%s%s: more than %zu bytes of input, the input limit "
                   "(physical memory / 4 unless CMODES_MAX_INPUT=BYTES is "
                   "set): an endless stream (/dev/zero, a FIFO)? Set "
                   "CMODES_MAX_INPUT to read a larger input",
                   src, where, cm__input_limit());
  return CM__ERR(ctx, CM_NOMEM, NULL, "%s%s: out of memory reading the input",
                 src, where);
}

int cm__threads_max(void) {
#ifdef _OPENMP
  int procs = omp_get_num_procs();
#else
  int procs = 1;
#endif
  return 4 * (procs > 0 ? procs : 1);
}

int cm__threads(const cm_context_t *ctx) {
  if (ctx && ctx->threads > 0) /* the library caps what the CLI refuses */
    return ctx->threads < cm__threads_max() ? ctx->threads : cm__threads_max();
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/* OpenBLAS exports this; other BLAS builds do not, hence the weak symbol. */
extern void openblas_set_num_threads(int) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));

int cm__blas_get_threads(void) {
  return openblas_get_num_threads ? openblas_get_num_threads() : 0;
}

void cm__blas_threads(int n) {
  if (openblas_set_num_threads)
    openblas_set_num_threads(n > 0 ? n : 1);
}

void cm__blas_single_thread(void) { cm__blas_threads(1); }

#define CM__CHUNK 8192 /* fixed reduction chunk: independent of threads */

double cm__dot(int n, const double *x, const double *y, int threads) {
  int nchunk = (n + CM__CHUNK - 1) / CM__CHUNK;
  if (nchunk <= 1)
    return cm__dot_lanes(x, y, n > 0 ? n : 0);
  double stack[64],
      *part = nchunk <= 64 ? stack : malloc(sizeof(double) * (size_t)nchunk);
  if (!part)
    return NAN;
#pragma omp parallel for schedule(static) num_threads(threads) if (nchunk > 4)
  for (int c = 0; c < nchunk; c++) {
    int i0 = c * CM__CHUNK, i1 = i0 + CM__CHUNK < n ? i0 + CM__CHUNK : n;
    part[c] = cm__dot_lanes(x + i0, y + i0, i1 - i0);
  }
  double s = 0;
  for (int c = 0; c < nchunk; c++)
    s += part[c];
  if (part != stack)
    free(part);
  return s;
}

double cm__nrm2(int n, const double *x, int threads) {
  return sqrt(cm__dot(n, x, x, threads));
}

static uint64_t cm__splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double cm__hash_uniform(uint64_t seed, uint64_t i) {
  uint64_t h = cm__splitmix(cm__splitmix(seed) ^ (i * 0xd1b54a32d192ed03ULL));
  return ((double)(h >> 11) + 0.5) / 9007199254740992.0 * 2.0 - 1.0;
}

/* Huge pages for large fresh buffers. Every 4 KiB page a buffer touches
 * first costs a page fault, and in a virtual machine a fault can cost far
 * more than the clearing of its page: 1.65-1.96 s a GiB written on issue
 * 19's family-26 EPYC (session 16), against 0.04 s in 2 MiB pages, one
 * fault each, where the kernel gives them (transparent huge pages in
 * "madvise" mode, Debian's default). On the family-25 EPYCs (sessions 14,
 * 20, 21) it was the other way round: 2 MiB pages cost 2.2 s a GiB against
 * 0.4-0.6 s, the host backing each with 4 KiB pages of its own, but only
 * once the guest has handed the memory back to it (free page reporting):
 * the 2 MiB blocks not handed back yet (4 to 10 after 7 s idle there, all
 * of a process's memory just freed) cost 0.1-0.16 s a GiB, and the guest's
 * kernel hands those out first. Which blocks those are (session 22, 500 MiB
 * written and freed over and over in one process): blocks freed as huge
 * pages less than about 2 s before (0.09-0.12 s a GiB again; 1.1-1.7 after
 * 3 s); memory freed in 4 KiB pages costs 2.2 s a GiB when written next in
 * huge pages, and 4 KiB pages cost 0.43-0.57 s a GiB whatever came before.
 * So a process that stays on huge pages keeps them cheap, one on 4 KiB
 * pages never makes them so. Huge pages also make the products' random
 * reads cheaper (fewer TLB misses), so they are worth having wherever
 * their faults are not dear.
 *
 * So the price is measured, once a process, at its first buffer of 4 MiB
 * or more: 2 MiB of fresh memory written in 4 KiB pages, twice (s4k: the
 * cheaper), then fresh 2 MiB huge pages one after another, all kept mapped
 * so that each is a new block, up to CM__HUGE_SAMPLES of them or until one
 * costs half as much as the 4 KiB pages (s2m: the dearest). About 2-10 ms;
 * the memory written goes back to the process's next buffers. Huge pages
 * are on when s2m < s4k / 2. From then on each buffer of 4 MiB or more
 * while on, and of CM__HUGE_RESAMPLE or more while off (where a wrong
 * guess costs at most an eighth of the buffer's faults; after a dear one,
 * of twice that buffer's size or more), is advised huge
 * pages (madvise on its whole pages: glibc serves buffers this large with
 * a mapping of their own) and its first whole 2 MiB block written at once
 * (its own value again) and timed: cheaper than s4k / 2, huge pages are on
 * (this buffer and the next ones), else off and the buffer advised back.
 * On a machine of one NUMA node (where the first writer of a page does not
 * decide where it lives) every whole block of the buffer is written and
 * timed in turn until one is dear, the rest then advised back: the cheap
 * blocks are few (tens to hundreds), and a buffer that took them up half
 * way paid the dear price for the rest (1e6 pile, `cmodes analyze --modes
 * 1` after idle: 1.09 s with the first block alone, 0.975 s walking, as
 * with 4 KiB pages only; 6 modes 2.27 -> 2.10 s). So the choice follows what
 * fresh memory costs now: a new process after idle (blocks handed back), one
 * right after another, a server's later analyses. Contents, and so every result
 * bit, are the same either way. CMODES_HUGE_PAGES=0 or 1 in the environment
 * skips the measures (for measuring the choice). */
#define CM__HUGE_MIN ((size_t)4 << 20)
#define CM__HUGE_2M ((size_t)2 << 20)
#define CM__HUGE_SAMPLES 16
#define CM__HUGE_RESAMPLE ((size_t)16 << 20)
#define CM__HUGE_NEXT_MAX ((size_t)1 << 30)

static struct {
  pthread_once_t once;
  _Atomic int on;
  double s4k, s2m;      /* seconds a GiB measured (NAN: not measured) */
  _Atomic int live, sw; /* buffers timed; switches */
  int walk;             /* time every block of a buffer (one NUMA node) */
  _Atomic size_t next;  /* while off, the smallest buffer timed */
} cm__huge = {PTHREAD_ONCE_INIT, 0, NAN, NAN, 0, 0, 0, CM__HUGE_RESAMPLE};

#ifdef MADV_HUGEPAGE
/* A fresh mapping of n 2 MiB-aligned 2 MiB blocks advised huge or not (its
 * first block; *m and *len: the mapping, for munmap), or NULL. */
static char *cm__huge_map(size_t n, int huge, char **m, size_t *len) {
  *len = (n + 1) * CM__HUGE_2M; /* room for the alignment */
  *m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
            0);
  if (*m == MAP_FAILED)
    return NULL;
  char *p = (char *)(((uintptr_t)*m + CM__HUGE_2M - 1) & ~(CM__HUGE_2M - 1));
  (void)madvise(p, n * CM__HUGE_2M, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return p;
}

/* Seconds a GiB to write one byte a 4 KiB page of the fresh 2 MiB block p. */
static double cm__huge_touch(char *p) {
  double t0 = cm__now();
  for (size_t i = 0; i < CM__HUGE_2M; i += 4096)
    ((volatile char *)p)[i] = 1;
  return (cm__now() - t0) * 512; /* 2 MiB -> 1 GiB */
}

/* 1 if the machine has one NUMA node (where a page's first writer does
 * not decide where it lives), 0 if several or unknown. */
static int cm__numa_one(void) {
  FILE *f = fopen("/sys/devices/system/node/online", "r");
  if (!f)
    return 0;
  char line[64] = "";
  int one = fgets(line, sizeof line, f) && !strcmp(line, "0\n");
  fclose(f);
  return one;
}
#endif

int cm__huge_pages_env(void) {
  const char *e = getenv("CMODES_HUGE_PAGES");
  if (!e || !*e)
    return -1;
  return !strcmp(e, "0") ? 0 : !strcmp(e, "1") ? 1 : -2;
}

static void cm__huge_choose(void) {
  int env = cm__huge_pages_env();
  if (env >= 0) {
    cm__huge.on = env;
    return;
  }
#ifdef MADV_HUGEPAGE
  char *m4, *m2;
  size_t l4, l2;
  char *p4 = cm__huge_map(2, 0, &m4, &l4);
  char *p2 = cm__huge_map(CM__HUGE_SAMPLES, 1, &m2, &l2);
  if (p4 && p2) {
    double a = cm__huge_touch(p4), b = cm__huge_touch(p4 + CM__HUGE_2M);
    double t4 = a < b ? a : b, t2 = 0;
    for (int i = 0; i < CM__HUGE_SAMPLES && t2 < 0.5 * t4; i++) {
      double t = cm__huge_touch(p2 + (size_t)i * CM__HUGE_2M);
      t2 = t > t2 ? t : t2;
    }
    cm__huge.s4k = t4, cm__huge.s2m = t2;
    cm__huge.on = t2 < 0.5 * t4;
    cm__huge.walk = cm__numa_one();
  }
  if (p4)
    munmap(m4, l4);
  if (p2)
    munmap(m2, l2);
#endif
}

int cm__huge_pages_choice(double *s4k, double *s2m) {
  pthread_once(&cm__huge.once, cm__huge_choose);
  if (s4k)
    *s4k = cm__huge.s4k;
  if (s2m)
    *s2m = cm__huge.s2m;
  return cm__huge.on;
}

void cm__huge_pages_force(int on) {
  cm__huge_pages_choice(NULL, NULL);
  cm__huge.on = on;
}

int cm__huge_pages_walk(void) {
  cm__huge_pages_choice(NULL, NULL);
  return cm__huge.walk;
}

int cm__huge_pages_live(int *sw) {
  if (sw)
    *sw = cm__huge.sw;
  return cm__huge.live;
}

void cm__huge_pages(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (!p || bytes < CM__HUGE_MIN)
    return;
  int on = cm__huge_pages_choice(NULL, NULL), timed = !isnan(cm__huge.s4k);
  if (!on && (!timed || bytes < cm__huge.next))
    return;
  uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)p + pg - 1) / pg * pg;
  uintptr_t hi = ((uintptr_t)p + bytes) / pg * pg;
  uintptr_t b0 = (lo + CM__HUGE_2M - 1) & ~(uintptr_t)(CM__HUGE_2M - 1);
  if (hi <= lo)
    return;
  (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice only */
  if (!timed || b0 + CM__HUGE_2M > hi)
    return;
  /* the first block, or (walk) each block in turn while they come cheap */
  int now = 1;
  for (uintptr_t b = b0; now && b + CM__HUGE_2M <= hi; b += CM__HUGE_2M) {
    volatile char *q = (volatile char *)b;
    double t0 = cm__now();
    *q = *q;                           /* its own value again */
    double t = (cm__now() - t0) * 512; /* 2 MiB -> 1 GiB */
    now = t < 0.5 * cm__huge.s4k;
    if (!cm__huge.walk)
      break;
  }
  cm__huge.live++;
  if (now != on) {
    cm__huge.on = now;
    cm__huge.sw++;
  }
  /* off and dear again (bytes >= next): the next try waits for a buffer
   * twice this size, at most CM__HUGE_NEXT_MAX */
  cm__huge.next = now || on                       ? CM__HUGE_RESAMPLE
                  : bytes < CM__HUGE_NEXT_MAX / 2 ? 2 * bytes
                                                  : CM__HUGE_NEXT_MAX;
  if (!now)
    (void)madvise((void *)lo, hi - lo, MADV_NOHUGEPAGE);
#else
  (void)p, (void)bytes;
#endif
}

void *cm__malloc(cm_context_t *ctx, size_t n, size_t size) {
  void *p = NULL;
  if (!n || !size)
    p = malloc(1);
  else if (n <= SIZE_MAX / size && (p = malloc(n * size)))
    cm__huge_pages(p, n * size);
  if (!p)
    CM__ERR(ctx, CM_NOMEM, NULL, "out of memory allocating %zu x %zu bytes", n,
            size);
  return p;
}

void *cm__calloc(cm_context_t *ctx, size_t n, size_t size) {
  void *p = (n && size) ? calloc(n, size) : calloc(1, 1);
  if (p && n && size)
    cm__huge_pages(p, n * size); /* calloc checked n * size */
  if (!p)
    CM__ERR(ctx, CM_NOMEM, NULL, "out of memory allocating %zu x %zu bytes", n,
            size);
  return p;
}

_Thread_local int cm__jbad; /* jcheck.h */

typedef struct {
  char *s;
  size_t n, cap;
  int lost; /* an append failed: jansson 2.14 ignores that for keys */
} cm__jbuf_t;

static int cm__jbuf_add(const char *b, size_t n, void *data) {
  cm__jbuf_t *o = data;
  if (o->lost)
    return -1;
  if (o->n + n + 1 > o->cap) {
    size_t cap = o->cap ? o->cap : 256;
    while (cap < o->n + n + 1)
      cap *= 2;
    char *s = realloc(o->s, cap);
    if (!s) {
      o->lost = 1;
      return -1;
    }
    o->s = s;
    o->cap = cap;
  }
  memcpy(o->s + o->n, b, n);
  o->n += n;
  o->s[o->n] = 0;
  return 0;
}

char *cm__json_dumps(const json_t *j, size_t flags) {
  cm__jbuf_t o = {NULL, 0, 0, 0};
  if (!j || json_dump_callback(j, cm__jbuf_add, &o, flags) || o.lost ||
      cm__jbuf_add("", 0, &o)) {
    free(o.s);
    return NULL;
  }
  return o.s;
}

char *cm__strdup(const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

const char *cm__method_name(int m) {
  switch (m) {
  case CM_METHOD_ARPACK:
    return "arpack";
  case CM_METHOD_DENSE:
    return "dense";
  case CM_METHOD_LANCZOS:
    return "lanczos";
  default:
    return "auto";
  }
}

int cm__method_parse(const char *s) {
  static const int all[] = {CM_METHOD_AUTO, CM_METHOD_ARPACK, CM_METHOD_DENSE,
                            CM_METHOD_LANCZOS};
  for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
    if (!strcmp(s, cm__method_name(all[i])))
      return all[i];
  return -1;
}

/* ---- kernel sets (internal.h, CM__KERNEL) ---------------------------- */

static _Atomic int cm__isa_now = -1; /* -1: not asked yet */

int cm__isa_cpu(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&        \
    !defined(CM_NO_CLONES)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return CM__ISA_AVX512;
  if (__builtin_cpu_supports("avx2"))
    return CM__ISA_AVX2;
#endif
  return CM__ISA_BASELINE;
}

const char *cm__isa_name(int isa) {
  return isa == CM__ISA_AVX512 ? "avx512"
         : isa == CM__ISA_AVX2 ? "avx2"
                               : "baseline";
}

int cm__isa_parse(const char *name) {
  if (!name || !*name)
    return cm__isa_cpu();
  for (int i = CM__ISA_BASELINE; i <= CM__ISA_AVX512; i++)
    if (!strcmp(name, cm__isa_name(i)))
      return i;
  return -1;
}

int cm__isa_force(int isa) {
  int cpu = cm__isa_cpu();
  if (isa < 0) { /* CMODES_KERNELS, or the CPU's best (unknown names too:
                    the programs refuse them before any kernel runs) */
    isa = cm__isa_parse(getenv("CMODES_KERNELS"));
    isa = isa < 0 ? cpu : isa;
  }
  isa = isa < cpu ? isa : cpu;
  cm__isa_now = isa;
  return isa;
}

const char *cm_kernel_set(void) { return cm__isa_name(cm__isa()); }

int cm__isa(void) {
  int v = cm__isa_now;
  return v >= 0 ? v : cm__isa_force(-1); /* racing first calls agree */
}

int cm__isa_env_check(const char *prog) {
  if (cm__huge_pages_env() == -2) {
    if (prog)
      fprintf(stderr,
              "%s: CMODES_HUGE_PAGES='%s': use 0 (no huge pages) or 1 (huge "
              "pages for buffers of 4 MiB or more), or unset it to let the "
              "process measure which is cheaper\n",
              prog, getenv("CMODES_HUGE_PAGES"));
    return -1;
  }
  const char *e = getenv("CMODES_KERNELS");
  int want = cm__isa_parse(e), cpu = cm__isa_cpu();
  if (want < 0) {
    if (prog)
      fprintf(stderr,
              "%s: CMODES_KERNELS='%s' names no kernel set: use avx512, avx2 "
              "or baseline, or unset it for the best this CPU runs (%s)\n",
              prog, e, cm__isa_name(cpu));
    return -1;
  }
  if (want > cpu && prog)
    fprintf(stderr,
            "%s: note: CMODES_KERNELS=%s, but this CPU runs the kernel sets "
            "up to %s: using %s\n",
            prog, e, cm__isa_name(cpu), cm__isa_name(cpu));
  return 0;
}
