/* cmd_options.c: `cmodes options [--json | --markdown]`: the table of
 * analysis options (analyze/options_table.h) that analyze, compare, verify
 * and the server share, for people and for other front ends (a Python
 * package reads the JSON). Not for parsing them (args.c, options.c). */
#include "analyze/options_table.h"
#include "args.h"
#include "cli.h"
#include "cmodes.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void cm__options_usage(FILE *f) {
  fprintf(f, "usage: cmodes options [--json | --markdown]\n\n"
             "The analysis options shared by analyze, compare, verify and the\n"
             "server: their command-line spelling, server name, default and\n"
             "range (docs/cli.md).\n\n"
             "      --json      the table as JSON (format \"cmodes-options\")\n"
             "      --markdown  the table of docs/cli.md\n"
             "  -h, --help      this help\n");
}

int cm__cmd_options(int argc, char **argv) {
  static const struct option longopts[] = {{"json", no_argument, 0, 'j'},
                                           {"markdown", no_argument, 0, 'm'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  int c, form = 0, ok = 1;
  optind = 1;
  while (ok && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
    case 'j':
      form = 'j';
      break;
    case 'm':
      form = 'm';
      break;
    case 'h':
      cm__options_usage(stdout);
      return 0;
    default:
      ok = 0;
    }
  }
  if (!ok || optind != argc) {
    if (ok)
      fprintf(stderr, "cmodes options: takes no arguments\n");
    fprintf(stderr, "try 'cmodes options --help'\n");
    return cm_status_exit(CM_USAGE);
  }
  if (!form) {
    cm__opt_usage(stdout, NULL);
    return 0;
  }
  char *text = form == 'j' ? cm_options_table_json() : cm__options_markdown();
  if (!text) {
    fprintf(stderr, "cmodes options: out of memory\n");
    return cm_status_exit(CM_NOMEM);
  }
  fputs(text, stdout);
  if (form == 'j')
    fputc('\n', stdout);
  free(text);
  return 0;
}
