/* json_pull.c: the pull reader of json_pull.h. It follows jansson 2.14's
 * lexer and parser token by token (the same tokens, the same first error,
 * the same message, line and column), so replacing json_loadb by it changes
 * no message; tests/test_json_pull.c compares the two on mutated documents.
 * Not a general JSON library: no tree, no writer beyond the compact copy
 * of one value that the scene's "meta" needs. */
#include "json_pull.h"

#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CM__JP_DEFAULT_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH */

void cm__jp_init(cm__jp_t *jp, const char *buf, size_t len, int max_depth) {
  memset(jp, 0, sizeof *jp);
  jp->buf = buf;
  jp->len = len;
  jp->max_depth = max_depth > 0 && max_depth < CM__JP_DEFAULT_DEPTH
                      ? max_depth
                      : CM__JP_DEFAULT_DEPTH;
}

void cm__jp_free(cm__jp_t *jp) {
  free(jp->sb);
  free(jp->emit);
  jp->sb = jp->emit = NULL;
}

/* ---- errors --------------------------------------------------------- */

/* jansson's column: characters (UTF-8 lead bytes) since the last newline,
 * up to the stream position pos. */
static void cm__jp_linecol(const cm__jp_t *jp, size_t pos, int *line,
                           int *col) {
  int l = 1, c = 0;
  for (size_t i = 0; i < pos && i < jp->len; i++) {
    unsigned char b = (unsigned char)jp->buf[i];
    if (b == '\n')
      l++, c = 0;
    else if (b < 0x80 || b >= 0xC0)
      c++;
  }
  *line = l;
  *col = c;
}

/* The first error wins (as jansson's error_set): msg at stream position
 * pos, with the saved text buf[tok..pos) as context. */
static void cm__jp_fail_at(cm__jp_t *jp, const char *msg, size_t pos,
                           int utf8) {
  if (jp->err)
    return;
  jp->err = 1;
  jp->nomem = !strncmp(msg, "out of memory", 13);
  jp->token = CM__JT_INVALID;
  cm__jp_linecol(jp, pos, &jp->eline, &jp->ecol);
  size_t n = pos > jp->tok ? pos - jp->tok : 0;
  const char *saved = jp->buf + jp->tok;
  if (n && saved[0]) {
    if (n <= 20) {
      char ctx[21];
      memcpy(ctx, saved, n);
      ctx[n] = 0; /* %s stops at a NUL byte, as in jansson */
      snprintf(jp->emsg, sizeof jp->emsg - 1, "%s near '%s'", msg, ctx);
    } else {
      snprintf(jp->emsg, sizeof jp->emsg - 1, "%s", msg);
    }
  } else if (utf8) {
    snprintf(jp->emsg, sizeof jp->emsg - 1, "%s", msg);
  } else {
    snprintf(jp->emsg, sizeof jp->emsg - 1, "%s near end of file", msg);
  }
}

void cm__jp_fail(cm__jp_t *jp, const char *msg) {
  cm__jp_fail_at(jp, msg, jp->pos, 0);
}

/* ---- UTF-8 (RFC 3629, as jansson's utf8_check_*) ---------------------- */

/* Length of the valid UTF-8 sequence at i, or 0. */
static size_t cm__utf8_len(const cm__jp_t *jp, size_t i) {
  const unsigned char *s = (const unsigned char *)jp->buf + i;
  size_t left = jp->len - i;
  unsigned c = s[0];
  size_t n;
  uint32_t v;
  if (c < 0x80)
    return 1;
  if (c < 0xC2)
    return 0;
  if (c < 0xE0)
    n = 2, v = c & 0x1F;
  else if (c < 0xF0)
    n = 3, v = c & 0x0F;
  else if (c < 0xF5)
    n = 4, v = c & 0x07;
  else
    return 0;
  if (left < n)
    return 0;
  for (size_t k = 1; k < n; k++) {
    if ((s[k] & 0xC0) != 0x80)
      return 0;
    v = (v << 6) | (s[k] & 0x3F);
  }
  if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) || (n == 3 && v < 0x800) ||
      (n == 4 && v < 0x10000))
    return 0;
  return n;
}

static void cm__jp_utf8_fail(cm__jp_t *jp, size_t at) {
  char msg[40];
  snprintf(msg, sizeof msg, "unable to decode byte 0x%x",
           (unsigned char)jp->buf[at]);
  cm__jp_fail_at(jp, msg, at, 1);
}

/* jansson reads one character past a number or a word; a byte there that
 * does not decode is its error. Returns 0 then. */
static int cm__jp_lookahead(cm__jp_t *jp) {
  if (jp->pos < jp->len && (unsigned char)jp->buf[jp->pos] >= 0x80 &&
      !cm__utf8_len(jp, jp->pos)) {
    cm__jp_utf8_fail(jp, jp->pos);
    return 0;
  }
  return 1;
}

/* cm__jp_scan calls the readers of strings and numbers out of line, so
 * the punctuation tokens (most of a scene's) return without saving the
 * registers those need: about a fifth of the scan's time on the piles. */
#if defined(__GNUC__)
#define CM__JP_NOINLINE __attribute__((noinline))
#else
#define CM__JP_NOINLINE
#endif

/* ---- scratch ------------------------------------------------------------ */

static int cm__grow(char **buf, size_t *cap, size_t need) {
  if (need <= *cap)
    return 0;
  size_t c = *cap ? *cap : 256;
  while (c < need)
    c *= 2;
  char *p = realloc(*buf, c);
  if (!p)
    return -1;
  *buf = p;
  *cap = c;
  return 0;
}

size_t cm__jp_scratch(cm__jp_t *jp, const char *s, size_t n) {
  if (cm__grow(&jp->sb, &jp->scap, jp->sused + n + 1))
    return (size_t)-1;
  size_t off = jp->sused;
  memcpy(jp->sb + off, s, n);
  jp->sb[off + n] = 0;
  jp->sused += n + 1;
  return off;
}

static int cm__emit(cm__jp_t *jp, const char *s, size_t n) {
  if (cm__grow(&jp->emit, &jp->ecap, jp->elen + n + 1))
    return -1;
  memcpy(jp->emit + jp->elen, s, n);
  jp->elen += n;
  jp->emit[jp->elen] = 0;
  return 0;
}

/* ---- strings ------------------------------------------------------------ */

static int cm__hex(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static long cm__u4(const char *p) {
  long v = 0;
  for (int i = 0; i < 4; i++)
    v = v * 16 + cm__hex((unsigned char)p[i]);
  return v;
}

static size_t cm__utf8_put(char *t, long v) {
  if (v < 0x80) {
    t[0] = (char)v;
    return 1;
  }
  if (v < 0x800) {
    t[0] = (char)(0xC0 | (v >> 6));
    t[1] = (char)(0x80 | (v & 0x3F));
    return 2;
  }
  if (v < 0x10000) {
    t[0] = (char)(0xE0 | (v >> 12));
    t[1] = (char)(0x80 | ((v >> 6) & 0x3F));
    t[2] = (char)(0x80 | (v & 0x3F));
    return 3;
  }
  t[0] = (char)(0xF0 | (v >> 18));
  t[1] = (char)(0x80 | ((v >> 12) & 0x3F));
  t[2] = (char)(0x80 | ((v >> 6) & 0x3F));
  t[3] = (char)(0x80 | (v & 0x3F));
  return 4;
}

/* Decodes the escapes of the raw string [p, end) into t (room for
 * end - p bytes); returns the length or -1 after an error (jansson's
 * checks of surrogates, made after the whole string was read). */
static long cm__jp_unescape(cm__jp_t *jp, const char *p, const char *end,
                            char *t) {
  char *t0 = t, msg[64];
  while (p < end) {
    if (*p != '\\') {
      *t++ = *p++;
      continue;
    }
    p++;
    if (*p != 'u') {
      static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
      *t++ = to[strchr(from, *p) - from];
      p++;
      continue;
    }
    long v = cm__u4(p + 1);
    p += 5;
    if (v >= 0xD800 && v <= 0xDBFF) {
      if (p + 1 < end && p[0] == '\\' && p[1] == 'u') {
        long v2 = cm__u4(p + 2);
        p += 6;
        if (v2 < 0xDC00 || v2 > 0xDFFF) {
          snprintf(msg, sizeof msg, "invalid Unicode '\\u%04lX\\u%04lX'", v,
                   v2);
          cm__jp_fail(jp, msg);
          return -1;
        }
        v = ((v - 0xD800) << 10) + (v2 - 0xDC00) + 0x10000;
      } else {
        snprintf(msg, sizeof msg, "invalid Unicode '\\u%04lX'", v);
        cm__jp_fail(jp, msg);
        return -1;
      }
    } else if (v >= 0xDC00 && v <= 0xDFFF) {
      snprintf(msg, sizeof msg, "invalid Unicode '\\u%04lX'", v);
      cm__jp_fail(jp, msg);
      return -1;
    }
    t += cm__utf8_put(t, v);
  }
  return (long)(t - t0);
}

/* The string token at jp->tok (its opening quote). */
CM__JP_NOINLINE static int cm__jp_string(cm__jp_t *jp) {
  const char *buf = jp->buf;
  size_t p = jp->tok + 1, len = jp->len;
  int esc = 0;
  for (;;) {
    while (p < len) { /* the common bytes */
      unsigned char c = (unsigned char)buf[p];
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80)
        break;
      p++;
    }
    if (p >= len) {
      cm__jp_fail_at(jp, "premature end of input", len, 0);
      return jp->token = CM__JT_INVALID;
    }
    unsigned char c = (unsigned char)buf[p];
    if (c == '"')
      break;
    if (c >= 0x80) {
      size_t n = cm__utf8_len(jp, p);
      if (!n) {
        cm__jp_utf8_fail(jp, p);
        return jp->token = CM__JT_INVALID;
      }
      p += n;
    } else if (c < 0x20) {
      char msg[40];
      if (c == '\n')
        snprintf(msg, sizeof msg, "unexpected newline");
      else
        snprintf(msg, sizeof msg, "control character 0x%x", c);
      cm__jp_fail_at(jp, msg, p, 0);
      return jp->token = CM__JT_INVALID;
    } else { /* a backslash */
      esc = 1;
      p++;
      int n = 1; /* characters the escape needs after the backslash */
      if (p < len && buf[p] == 'u')
        n = 5;
      for (int k = 0; k < n; k++, p++) {
        if (p >= len) {
          cm__jp_fail_at(jp, "invalid escape", len, 0);
          return jp->token = CM__JT_INVALID;
        }
        unsigned char e = (unsigned char)buf[p];
        if (e >= 0x80 && !cm__utf8_len(jp, p)) {
          cm__jp_utf8_fail(jp, p);
          return jp->token = CM__JT_INVALID;
        }
        int ok = n == 5 ? (k == 0 || cm__hex(e) >= 0)
                        : (e && strchr("\"\\/bfnrt", e) != NULL);
        if (!ok) {
          cm__jp_fail_at(jp, "invalid escape", p + 1, 0);
          return jp->token = CM__JT_INVALID;
        }
      }
    }
  }
  jp->pos = p + 1;
  const char *raw = buf + jp->tok + 1;
  size_t rawn = p - jp->tok - 1;
  if (cm__grow(&jp->sb, &jp->scap, jp->sused + rawn + 1)) {
    cm__jp_fail(jp, "out of memory");
    return jp->token = CM__JT_INVALID;
  }
  char *t = jp->sb + jp->sused;
  long n;
  if (!esc) {
    memcpy(t, raw, rawn);
    n = (long)rawn;
  } else if ((n = cm__jp_unescape(jp, raw, raw + rawn, t)) < 0) {
    return jp->token = CM__JT_INVALID;
  }
  t[n] = 0;
  jp->soff = jp->sused;
  jp->slen = (size_t)n;
  jp->sused += (size_t)n + 1;
  return jp->token = CM__JT_STR;
}

/* ---- numbers ------------------------------------------------------------ */

static int cm__digit(const cm__jp_t *jp, size_t p) {
  return p < jp->len && jp->buf[p] >= '0' && jp->buf[p] <= '9';
}

/* m * 10^e correctly rounded, or 0 when that is not proven here: Clinger's
 * fast path (m < 2^53 and |e| <= 22: m and 10^|e| are exact doubles, one
 * rounding), and on x86 its extension to 64-bit m and |e| <= 27 in the x87
 * extended format (m and 10^|e| exact there, one rounding to 64 bits, then
 * one to 53: the two give the correctly rounded double unless the first
 * lands on a midpoint between doubles, its 11 low bits 0x400, which goes
 * to strtod). */
static int cm__real_fast(uint64_t m, long e, int neg, double *out) {
  static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  double v;
  if (m < ((uint64_t)1 << 53) && e >= -22 && e <= 22) {
    v = (double)m;
    v = e < 0 ? v / p10[-e] : v * p10[e];
#if (defined(__x86_64__) || defined(__i386__)) && LDBL_MANT_DIG == 64
  } else if (e >= -27 && e <= 27) {
    static const long double p10l[] = {
        1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
        1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
        1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
    /* exact: 10^27 = 2^27 5^27 and 5^27 < 2^63 */
    long double x = (long double)m;
    x = e < 0 ? x / p10l[-e] : x * p10l[e];
    uint64_t sig;
    memcpy(&sig, &x, sizeof sig); /* the x87 significand, 64 bits */
    if (m && (sig & 0x7FF) == 0x400)
      return 0;
    v = (double)x;
#endif
  } else {
    return 0;
  }
  *out = neg ? -v : v;
  return 1;
}

/* A real from its JSON text s (n bytes), correctly rounded: the fast paths
 * above for up to 19 significant digits, strtod otherwise. Returns -1 on
 * overflow (jansson's "real number overflow"). */
static int cm__jp_real(const char *s, size_t n, double *out) {
  size_t i = 0;
  int neg = s[0] == '-', nd = 0, frac = 0;
  uint64_t m = 0;
  if (neg)
    i++;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
    if (m || s[i] != '0')
      m = m * 10 + (uint64_t)(s[i] - '0'), nd++;
  if (i < n && s[i] == '.')
    for (i++; i < n && s[i] >= '0' && s[i] <= '9' && nd < 20; i++, frac++)
      if (m || s[i] != '0')
        m = m * 10 + (uint64_t)(s[i] - '0'), nd++;
  int ok = nd <= 19 && (i == n || s[i] == 'e' || s[i] == 'E');
  long e = 0;
  if (ok && i < n) { /* an exponent */
    int eneg = s[++i] == '-';
    if (s[i] == '-' || s[i] == '+')
      i++;
    for (; i < n && e < 100000; i++)
      e = e * 10 + (s[i] - '0');
    ok = i == n;
    e = eneg ? -e : e;
  }
  if (ok && cm__real_fast(m, e - frac, neg, out))
    return 0;
  char small[128], *t = n < sizeof small ? small : malloc(n + 1);
  if (!t)
    return -2;
  memcpy(t, s, n);
  t[n] = 0;
  errno = 0;
  double v = strtod(t, NULL);
  int over = (v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE;
  if (t != small)
    free(t);
  *out = v;
  return over ? -1 : 0;
}

/* The significant digits of a number as they are scanned: the first 19
 * in m, their count in nd (past 19: strtod reads the number). */
typedef struct {
  uint64_t m;
  int nd;
} cm__digits_t;

/* 1 if the 8 bytes of x (little-endian, as loaded) are all '0'..'9'. */
static int cm__eight_digits(uint64_t x) {
  return !(((x & 0xF0F0F0F0F0F0F0F0u) |
            (((x + 0x0606060606060606u) & 0xF0F0F0F0F0F0F0F0u) >> 4)) ^
           0x3333333333333333u);
}

/* The value of 8 decimal digits in x (bytes '0'..'9', the first in the
 * lowest byte): pairs, then quads, then the 8, by three multiplications
 * of packed fields (each field stays below its width). */
static uint32_t cm__eight_value(uint64_t x) {
  x -= 0x3030303030303030u;                        /* digits 0..9 */
  x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFu;   /* 4 pairs, 0..99 */
  x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFu; /* 2 quads */
  return (uint32_t)((x * 10000 + (x >> 32)) & 0xFFFFFFFFu);
}

static size_t cm__jp_digits(const cm__jp_t *jp, size_t p, cm__digits_t *d,
                            long *count) {
  const char *buf = jp->buf;
  size_t p0 = p;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* 8 digits at a time while m takes them whole (nd + 8 <= 19); the
   * leading zeros of a number (m still 0) are not counted in nd */
  uint64_t x;
  while (d->nd <= 11 && p + 8 <= jp->len &&
         (memcpy(&x, buf + p, 8), cm__eight_digits(x))) {
    uint32_t v = cm__eight_value(x);
    if (d->m)
      d->nd += 8;
    else if (v) /* the zero bytes before the first nonzero digit */
      d->nd += 8 - __builtin_ctzll((x - 0x3030303030303030u)) / 8;
    d->m = d->m * 100000000u + v;
    p += 8;
  }
#endif
  for (; p < jp->len && buf[p] >= '0' && buf[p] <= '9'; p++) {
    unsigned v = (unsigned)(buf[p] - '0');
    if (d->m || v) {
      if (d->nd < 19)
        d->m = d->m * 10 + v;
      d->nd++;
    }
  }
  *count = (long)(p - p0);
  return p;
}

/* The number token at jp->tok, as jansson's lex_scan_number. Not inlined
 * into cm__jp_scan (CM__JP_NOINLINE), like cm__jp_string. */
CM__JP_NOINLINE static int cm__jp_number(cm__jp_t *jp) {
  size_t p = jp->tok;
  const char *buf = jp->buf;
  cm__digits_t dg = {0, 0};
  long frac = 0, nint = 0, e = 0;
  jp->token = CM__JT_INVALID;
  if (buf[p] == '-')
    p++;
  if (p < jp->len && buf[p] == '0') {
    p++;
    if (cm__digit(jp, p)) {
      jp->pos = p;
      return jp->token;
    }
  } else if (cm__digit(jp, p)) {
    p = cm__jp_digits(jp, p, &dg, &nint);
  } else {
    jp->pos = p;
    cm__jp_lookahead(jp);
    return jp->token;
  }
  int real = p < jp->len && (buf[p] == '.' || buf[p] == 'e' || buf[p] == 'E');
  if (!real) {
    jp->pos = p;
    if (!cm__jp_lookahead(jp))
      return jp->token;
    int neg = buf[jp->tok] == '-';
    uint64_t v = 0, lim = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
    for (size_t i = jp->tok + (size_t)neg; i < p; i++) {
      unsigned d = (unsigned)(buf[i] - '0');
      if (v > (lim - d) / 10) {
        cm__jp_fail(jp, neg ? "too big negative integer" : "too big integer");
        return jp->token;
      }
      v = v * 10 + d;
    }
    jp->ival = neg ? (long long)(0 - v) : (long long)v;
    jp->num = (double)jp->ival;
    return jp->token = CM__JT_INT;
  }
  if (buf[p] == '.') {
    p++;
    if (!cm__digit(jp, p)) {
      jp->pos = p;
      cm__jp_lookahead(jp);
      return jp->token;
    }
    p = cm__jp_digits(jp, p, &dg, &frac);
  }
  if (p < jp->len && (buf[p] == 'e' || buf[p] == 'E')) {
    p++;
    int eneg = p < jp->len && buf[p] == '-';
    if (p < jp->len && (buf[p] == '+' || buf[p] == '-'))
      p++;
    if (!cm__digit(jp, p)) {
      jp->pos = p;
      cm__jp_lookahead(jp);
      return jp->token;
    }
    for (; cm__digit(jp, p); p++)
      if (e < 100000)
        e = e * 10 + (buf[p] - '0');
    e = eneg ? -e : e;
  }
  jp->pos = p;
  if (!cm__jp_lookahead(jp))
    return jp->token;
  if (dg.nd <= 19 &&
      cm__real_fast(dg.m, e - frac, buf[jp->tok] == '-', &jp->num))
    return jp->token = CM__JT_REAL;
  int st = cm__jp_real(buf + jp->tok, p - jp->tok, &jp->num);
  if (st) {
    cm__jp_fail(jp, st == -1 ? "real number overflow" : "out of memory");
    return jp->token;
  }
  return jp->token = CM__JT_REAL;
}

/* ---- tokens ------------------------------------------------------------- */

static int cm__alpha(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int cm__jp_scan(cm__jp_t *jp) {
  if (jp->err)
    return jp->token = CM__JT_INVALID;
  const char *buf = jp->buf;
  size_t p = jp->pos, len = jp->len;
  while (p < len &&
         (buf[p] == ' ' || buf[p] == '\n' || buf[p] == '\r' || buf[p] == '\t'))
    p++;
  jp->tok = jp->pos = p;
  if (p >= len)
    return jp->token = CM__JT_EOF;
  unsigned char c = (unsigned char)buf[p];
  switch (c) {
  case '{':
  case '}':
  case '[':
  case ']':
  case ':':
  case ',':
    jp->pos = p + 1;
    return jp->token = c;
  case '"':
    return cm__jp_string(jp);
  default:
    break;
  }
  if (c == '-' || (c >= '0' && c <= '9'))
    return cm__jp_number(jp);
  if (cm__alpha(c)) {
    while (p < len && cm__alpha((unsigned char)buf[p]))
      p++;
    jp->pos = p;
    if (!cm__jp_lookahead(jp))
      return jp->token = CM__JT_INVALID;
    size_t n = p - jp->tok;
    const char *w = buf + jp->tok;
    if (n == 4 && !memcmp(w, "true", 4))
      return jp->token = CM__JT_TRUE;
    if (n == 5 && !memcmp(w, "false", 5))
      return jp->token = CM__JT_FALSE;
    if (n == 4 && !memcmp(w, "null", 4))
      return jp->token = CM__JT_NULL;
    return jp->token = CM__JT_INVALID;
  }
  if (c >= 0x80) {
    size_t n = cm__utf8_len(jp, p);
    if (!n) {
      cm__jp_utf8_fail(jp, p);
      return jp->token = CM__JT_INVALID;
    }
    jp->pos = p + n;
    return jp->token = CM__JT_INVALID;
  }
  jp->pos = p + 1;
  return jp->token = CM__JT_INVALID;
}

/* ---- values ---------------------------------------------------------------
 */

int cm__jp_value_start(cm__jp_t *jp) {
  if (jp->err)
    return -1;
  if (++jp->depth > jp->max_depth) {
    jp->depth_limited = jp->max_depth < CM__JP_DEFAULT_DEPTH;
    cm__jp_fail(jp, "maximum parsing depth reached");
    return -1;
  }
  switch (jp->token) {
  case CM__JT_STR:
    if (memchr(jp->sb + jp->soff, 0, jp->slen)) {
      cm__jp_fail(jp, "\\u0000 is not allowed without JSON_ALLOW_NUL");
      return -1;
    }
    return 0;
  case CM__JT_INT:
  case CM__JT_REAL:
  case CM__JT_TRUE:
  case CM__JT_FALSE:
  case CM__JT_NULL:
  case '{':
  case '[':
    return 0;
  case CM__JT_INVALID:
    cm__jp_fail(jp, "invalid token");
    return -1;
  default:
    cm__jp_fail(jp, "unexpected token");
    return -1;
  }
}

static uint64_t cm__hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h;
}

/* A linear search while small, then a hash table of entry indices kept in
 * the same array after the (offset, length) pairs. */
int cm__jkeys_seen(cm__jp_t *jp, cm__jkeys_t *k, size_t off, size_t len) {
  const char *s = jp->sb + off;
  for (int i = 0; i < k->n; i++)
    if (k->off[2 * i + 1] == len && !memcmp(jp->sb + k->off[2 * i], s, len))
      return 1;
  if (k->n == k->cap) {
    int cap = k->cap ? 2 * k->cap : 16;
    size_t *o = realloc(k->off, 2 * (size_t)cap * sizeof *o);
    if (!o)
      return -1;
    k->off = o;
    k->cap = cap;
  }
  k->off[2 * k->n] = off;
  k->off[2 * k->n + 1] = len;
  k->n++;
  return 0;
}

/* Keys of one object: above 32 keys a hash set replaces the scan. */
typedef struct {
  cm__jkeys_t list;
  size_t *slot; /* 1 + entry index, 0 empty */
  size_t cap;
} cm__jset_t;

static int cm__jset_seen(cm__jp_t *jp, cm__jset_t *ks, size_t off, size_t len) {
  if (ks->list.n < 32 && !ks->slot)
    return cm__jkeys_seen(jp, &ks->list, off, len);
  if (!ks->slot || 2 * (size_t)(ks->list.n + 1) > ks->cap) {
    size_t cap = ks->cap ? 2 * ks->cap : 128;
    size_t *sl = calloc(cap, sizeof *sl);
    if (!sl)
      return -1;
    free(ks->slot);
    ks->slot = sl;
    ks->cap = cap;
    for (int i = 0; i < ks->list.n; i++) {
      size_t h =
          cm__hash(jp->sb + ks->list.off[2 * i], ks->list.off[2 * i + 1]) &
          (cap - 1);
      while (sl[h])
        h = (h + 1) & (cap - 1);
      sl[h] = (size_t)i + 1;
    }
  }
  const char *s = jp->sb + off;
  size_t h = cm__hash(s, len) & (ks->cap - 1);
  while (ks->slot[h]) {
    size_t e = ks->slot[h] - 1;
    if (ks->list.off[2 * e + 1] == len &&
        !memcmp(jp->sb + ks->list.off[2 * e], s, len))
      return 1;
    h = (h + 1) & (ks->cap - 1);
  }
  cm__jkeys_t *k = &ks->list;
  if (k->n == k->cap) {
    int cap = 2 * k->cap;
    size_t *o = realloc(k->off, 2 * (size_t)cap * sizeof *o);
    if (!o)
      return -1;
    k->off = o;
    k->cap = cap;
  }
  k->off[2 * k->n] = off;
  k->off[2 * k->n + 1] = len;
  ks->slot[h] = (size_t)k->n + 1;
  k->n++;
  return 0;
}

static int cm__jp_any(cm__jp_t *jp, int emit);

/* Appends the decoded string s (n bytes) as jansson's dump writes it. */
static int cm__emit_str(cm__jp_t *jp, const char *s, size_t n) {
  int st = cm__emit(jp, "\"", 1);
  for (size_t i = 0; i < n && !st; i++) {
    unsigned char c = (unsigned char)s[i];
    char e[8];
    const char *rep = NULL;
    switch (c) {
    case '\\':
      rep = "\\\\";
      break;
    case '"':
      rep = "\\\"";
      break;
    case '\b':
      rep = "\\b";
      break;
    case '\f':
      rep = "\\f";
      break;
    case '\n':
      rep = "\\n";
      break;
    case '\r':
      rep = "\\r";
      break;
    case '\t':
      rep = "\\t";
      break;
    default:
      if (c < 0x20) {
        snprintf(e, sizeof e, "\\u%04X", c);
        rep = e;
      }
    }
    st = rep ? cm__emit(jp, rep, strlen(rep)) : cm__emit(jp, s + i, 1);
  }
  return st ? st : cm__emit(jp, "\"", 1);
}

/* The current scalar token, as jansson's compact dump writes it. */
static int cm__emit_scalar(cm__jp_t *jp) {
  char b[64];
  switch (jp->token) {
  case CM__JT_STR:
    return cm__emit_str(jp, jp->sb + jp->soff, jp->slen);
  case CM__JT_INT:
    snprintf(b, sizeof b, "%lld", jp->ival);
    return cm__emit(jp, b, strlen(b));
  case CM__JT_REAL: { /* jansson's own real format */
    json_t *r = json_real(jp->num);
    size_t n = r ? json_dumpb(r, b, sizeof b, JSON_ENCODE_ANY) : 0;
    json_decref(r);
    return n && n < sizeof b ? cm__emit(jp, b, n) : -1;
  }
  case CM__JT_TRUE:
    return cm__emit(jp, "true", 4);
  case CM__JT_FALSE:
    return cm__emit(jp, "false", 5);
  default:
    return cm__emit(jp, "null", 4);
  }
}

static int cm__jp_object(cm__jp_t *jp, int emit) {
  size_t mark = jp->sused; /* keys of a closed object are not needed */
  cm__jset_t ks = {{NULL, 0, 0}, NULL, 0};
  int st = -1, first = 1;
  if (emit && cm__emit(jp, "{", 1))
    goto out;
  cm__jp_scan(jp);
  if (jp->token != '}') {
    for (;;) {
      if (jp->token != CM__JT_STR) {
        cm__jp_fail(jp, "string or '}' expected");
        goto out;
      }
      if (memchr(jp->sb + jp->soff, 0, jp->slen)) {
        cm__jp_fail(jp, "NUL byte in object key not supported");
        goto out;
      }
      int seen = cm__jset_seen(jp, &ks, jp->soff, jp->slen);
      if (seen) {
        cm__jp_fail(jp, seen > 0 ? "duplicate object key" : "out of memory");
        goto out;
      }
      if (emit && ((!first && cm__emit(jp, ",", 1)) ||
                   cm__emit_str(jp, jp->sb + jp->soff, jp->slen) ||
                   cm__emit(jp, ":", 1)))
        goto out;
      first = 0;
      if (cm__jp_scan(jp) != ':') {
        cm__jp_fail(jp, "':' expected");
        goto out;
      }
      cm__jp_scan(jp);
      if (cm__jp_any(jp, emit))
        goto out;
      if (cm__jp_scan(jp) != ',')
        break;
      cm__jp_scan(jp);
    }
    if (jp->token != '}') {
      cm__jp_fail(jp, "'}' expected");
      goto out;
    }
  }
  st = emit ? cm__emit(jp, "}", 1) : 0;
out:
  free(ks.list.off);
  free(ks.slot);
  jp->sused = mark;
  return jp->err ? -1 : st;
}

static int cm__jp_array(cm__jp_t *jp, int emit) {
  if (emit && cm__emit(jp, "[", 1))
    return -1;
  cm__jp_scan(jp);
  if (jp->token != ']') {
    int first = 1;
    while (jp->token != CM__JT_EOF) {
      if (emit && !first && cm__emit(jp, ",", 1))
        return -1;
      first = 0;
      if (cm__jp_any(jp, emit))
        return -1;
      if (cm__jp_scan(jp) != ',')
        break;
      cm__jp_scan(jp);
    }
    if (jp->token != ']') {
      cm__jp_fail(jp, "']' expected");
      return -1;
    }
  }
  return emit ? cm__emit(jp, "]", 1) : 0;
}

/* Any value, not captured (skipped or emitted). */
static int cm__jp_any(cm__jp_t *jp, int emit) {
  if (cm__jp_value_start(jp))
    return -1;
  int st = 0;
  if (jp->token == '{')
    st = cm__jp_object(jp, emit);
  else if (jp->token == '[')
    st = cm__jp_array(jp, emit);
  else if (emit) {
    size_t mark = jp->sused;
    st = cm__emit_scalar(jp);
    jp->sused = jp->token == CM__JT_STR ? jp->soff : mark;
  } else if (jp->token == CM__JT_STR) {
    jp->sused = jp->soff; /* a skipped string needs no room */
  }
  if (st && !jp->err)
    cm__jp_fail(jp, "out of memory");
  jp->depth--;
  return jp->err ? -1 : 0;
}

int cm__jp_emit_value(cm__jp_t *jp) {
  jp->elen = 0;
  return cm__jp_any(jp, 1);
}

static int cm__num_kind(int token) {
  return token == CM__JT_INT ? CM__JV_INT : CM__JV_REAL;
}

/* Kind of the current token as a captured value. */
static int cm__kind(int token) {
  switch (token) {
  case CM__JT_NULL:
    return CM__JV_NULL;
  case CM__JT_TRUE:
    return CM__JV_TRUE;
  case CM__JT_FALSE:
    return CM__JV_FALSE;
  case CM__JT_INT:
    return CM__JV_INT;
  case CM__JT_REAL:
    return CM__JV_REAL;
  case CM__JT_STR:
    return CM__JV_STR;
  case '[':
    return CM__JV_ARR;
  default:
    return CM__JV_OBJ;
  }
}

/* The ']' that closes an array, at the token after its last element (or
 * the ']' of an empty one), else "']' expected"; leaves the array's depth. */
int cm__jp_array_end(cm__jp_t *jp) {
  if (jp->token != ']') {
    cm__jp_fail(jp, "']' expected");
    return -1;
  }
  jp->depth--;
  return 0;
}

/* An array element: numbers and arrays of numbers are captured. */
static int cm__jp_elem(cm__jp_t *jp, cm__jelem_t *e) {
  memset(e, 0, sizeof *e);
  if (jp->token != '[') {
    e->kind = cm__kind(jp->token);
    e->num = jp->num;
    return cm__jp_any(jp, 0);
  }
  if (cm__jp_value_start(jp))
    return -1;
  e->kind = CM__JV_ARR;
  cm__jp_scan(jp);
  if (jp->token != ']') {
    while (jp->token != CM__JT_EOF) {
      if (e->n < 4) {
        e->sub_kind[e->n] = cm__kind(jp->token);
        if (jp->token == CM__JT_INT || jp->token == CM__JT_REAL)
          e->sub_kind[e->n] = cm__num_kind(jp->token);
        e->sub[e->n] = jp->num;
      }
      e->n++;
      if (cm__jp_any(jp, 0))
        return -1;
      if (cm__jp_scan(jp) != ',')
        break;
      cm__jp_scan(jp);
    }
  }
  if (cm__jp_array_end(jp))
    return -1;
  return 0;
}

int cm__jp_value(cm__jp_t *jp, cm__jv_t *v) {
  if (!v)
    return cm__jp_any(jp, 0);
  v->kind = cm__kind(jp->token);
  v->n = 0;
  if (jp->token != '[') {
    v->ival = jp->ival;
    v->num = jp->num;
    v->soff = jp->soff;
    v->str = NULL;
    if (jp->token == CM__JT_STR) { /* keep the string: skip would drop it */
      if (cm__jp_value_start(jp))
        return -1;
      jp->depth--;
      return 0;
    }
    return cm__jp_any(jp, 0);
  }
  if (cm__jp_value_start(jp))
    return -1;
  cm__jp_scan(jp);
  if (jp->token != ']') {
    while (jp->token != CM__JT_EOF) {
      cm__jelem_t scratch, *e = v->n < 4 ? &v->e[v->n] : &scratch;
      v->n++;
      if (cm__jp_elem(jp, e))
        return -1;
      if (cm__jp_scan(jp) != ',')
        break;
      cm__jp_scan(jp);
    }
  }
  if (cm__jp_array_end(jp))
    return -1;
  return 0;
}

int cm__json_check(const char *text, size_t len) {
  cm__jp_t jp;
  cm__jp_init(&jp, text, len, 0);
  int t = cm__jp_scan(&jp);
  if (t == '{' || t == '[')
    cm__jp_value(&jp, NULL);
  else
    cm__jp_fail(&jp, "'[' or '{' expected");
  if (!jp.err && cm__jp_scan(&jp) != CM__JT_EOF)
    cm__jp_fail(&jp, "end of file expected");
  int st = jp.err ? (jp.nomem ? -1 : 1) : 0;
  cm__jp_free(&jp);
  return st;
}
