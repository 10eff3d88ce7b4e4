/* main.c: the `cmodes` program: dispatches to a subcommand, which sees
 * argv[0] = "cmodes COMMAND" so getopt's own messages name it. */
#include "cli.h"
#include "cmodes.h"
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  const char *name;                 /* subcommand */
  int (*fn)(int argc, char **argv); /* entry point */
  const char *help;                 /* one line */
} cm__cmd_t;

static void cm__usage(FILE *out, const cm__cmd_t *cmds, int n) {
  fprintf(out, "usage: cmodes COMMAND [options] ...\n\ncommands:\n");
  for (int i = 0; i < n; i++)
    fprintf(out, "  %-9s %s\n", cmds[i].name, cmds[i].help);
  fprintf(out, "\n'cmodes COMMAND --help' describes one command; "
               "'cmodes --version' prints the version.\n");
}

/* Flushes and closes standard output: a write error there (a full disk,
 * /dev/full, a closed pipe) fails the command with exit code 3 (CM_IO)
 * instead of exiting 0 over a truncated result. */
static int cm__close_stdout(const char *cmd, int code) {
  errno = 0;
  int bad = fflush(stdout) != 0 || ferror(stdout);
  int err = errno;
  if (fclose(stdout) != 0 && !bad) {
    bad = 1;
    err = errno;
  }
  if (!bad)
    return code;
  fprintf(stderr, "%s: cannot write standard output: %s\n", cmd,
          err ? strerror(err) : "a write failed (disk full?)");
  return code ? code : cm_status_exit(CM_IO);
}

/* `cmodes serve` runs with OMP_WAIT_POLICY=passive unless it is set:
 * OpenMP threads that spin at their barriers take the cores from each other
 * and from the HTTP threads on a busy machine (a 20 000-sphere solve took
 * 7.8 s instead of 0.8 s, and /healthz waited behind it). libgomp reads
 * the variable when it is loaded, hence one re-execution with it set;
 * where that fails the server runs as it is. */
static void cm__serve_passive(char **argv) {
  if (getenv("OMP_WAIT_POLICY") || setenv("OMP_WAIT_POLICY", "passive", 1))
    return;
  execv("/proc/self/exe", argv);
  unsetenv("OMP_WAIT_POLICY"); /* not re-executed: as before */
}

int main(int argc, char **argv) {
  const cm__cmd_t cmds[] = {
      {"analyze", cm__cmd_analyze, "coupled contact modes and stable steps"},
      {"generate", cm__cmd_generate,
       "write a generated scene (pile, crystal, "
       "stack, fleet, bar)"},
      {"import", cm__cmd_import, "convert a LAMMPS/LIGGGHTS dump to a scene"},
      {"report", cm__cmd_report,
       "an HTML report (campaign page for many "
       "scenes), mode fields for OVITO/ParaView"},
      {"track", cm__cmd_track, "the stable step over every snapshot of dumps"},
      {"convert", cm__cmd_convert,
       "a scene between JSON and the binary format"},
      {"export", cm__cmd_export, "write M, J, k of a scene as Matrix Market"},
      {"compare", cm__cmd_compare, "sparse against dense on one scene"},
      {"verify", cm__cmd_verify, "simulate and check the predictions"},
      {"serve", cm__cmd_serve, "HTTP/JSON server (or --stdio)"},
      {"options", cm__cmd_options, "the analysis options table (--json)"},
  };
  int n = (int)(sizeof cmds / sizeof cmds[0]);
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    cm__usage(argc < 2 ? stderr : stdout, cmds, n);
    return cm__close_stdout("cmodes", argc < 2 ? cm_status_exit(CM_USAGE) : 0);
  }
  if (!strcmp(argv[1], "--version")) {
    printf("cmodes %s\nkernels: %s (CMODES_KERNELS: avx512, avx2 or "
           "baseline, never above the CPU's)\n",
           CM_VERSION_STRING, cm_kernel_set());
    return cm__close_stdout("cmodes", 0);
  }
  if (cm__isa_env_check("cmodes"))
    return cm__close_stdout("cmodes", cm_status_exit(CM_USAGE));
  if (!strcmp(argv[1], "serve"))
    cm__serve_passive(argv);
  for (int i = 0; i < n; i++)
    if (!strcmp(argv[1], cmds[i].name)) {
      char prog[32];
      snprintf(prog, sizeof prog, "cmodes %s", cmds[i].name);
      argv[1] = prog; /* getopt prints "cmodes COMMAND: ..." */
      return cm__close_stdout(prog, cmds[i].fn(argc - 1, argv + 1));
    }
  fprintf(stderr, "cmodes: unknown command '%s'\n\n", argv[1]);
  cm__usage(stderr, cmds, n);
  return cm_status_exit(CM_USAGE);
}
