/* args.h: command-line parsing shared by the subcommands: the one number
 * parser (a value that is not what the option wants is reported with the
 * command and option), and the analysis options of the options table
 * (analyze/options_table.h) as getopt_long entries and help lines. */
#ifndef CM_CLI_ARGS_H
#define CM_CLI_ARGS_H

#include "cmodes.h"

#include <getopt.h>
#include <stdio.h>

/* Returns 1 and sets *v, or prints "cmodes CMD: OPT: 'S' is not ..." and
 * returns 0. cm__arg_int takes integers in 0..1e9, cm__arg_long in 0..1e15,
 * cm__arg_num finite numbers. */
int cm__arg_int(const char *cmd, const char *opt, const char *s, int *v);
int cm__arg_long(const char *cmd, const char *opt, const char *s, long *v);
int cm__arg_num(const char *cmd, const char *opt, const char *s, double *v);
/* --threads N: an integer in 0..4 x the processors (cm__threads_max);
 * cm__arg_threads_ok checks an already parsed count. Print and return 0
 * when out of range. */
int cm__arg_threads(const char *cmd, const char *s, int *v);
int cm__arg_threads_ok(const char *cmd, double n);

/* For a command that runs its analyses and exits: glibc's heap serves
 * every buffer and keeps what is freed (mallopt), so freed pages serve
 * later buffers without faults; 1 if set, 0 if not (CMODES_HEAP_MMAP=1,
 * a sanitizer's allocator, not glibc). args.c says what it saves. */
int cm__cli_heap(void);

/* getopt_long code of table row i: CM__OPT_CODE + i. */
#define CM__OPT_CODE 0x1000

/* Copies own (terminated by a zero entry) into out and appends the table
 * options named in only (field names, NULL-terminated; NULL = all), then
 * the terminator. cap: entries of out. Returns 0, or -1 if out is short. */
int cm__opt_longopts(struct option *out, int cap, const struct option *own,
                     const char *const *only);
/* A getopt_long code c with its argument: 1 when c is a table option (or
 * its short letter) in only and arg was stored in opts; 0 when it was one
 * with a bad value (message printed); -1 when c is not a table option. */
int cm__opt_parse(const char *cmd, int c, const char *arg,
                  const char *const *only, cm_options_t *opts);
/* Help lines of the table options in only, with their defaults. */
void cm__opt_usage(FILE *f, const char *const *only);

#endif
