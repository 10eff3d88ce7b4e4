/* cli.h: the subcommands of the `cmodes` program. Each lives in its own
 * file (cmd_NAME.c) and returns a process exit code (cm_status_exit). */
#ifndef CM_CLI_H
#define CM_CLI_H

int cm__cmd_analyze(int argc, char **argv);
int cm__cmd_track(int argc, char **argv);
int cm__cmd_report(int argc, char **argv);
int cm__cmd_generate(int argc, char **argv);
int cm__cmd_export(int argc, char **argv);
int cm__cmd_import(int argc, char **argv);
int cm__cmd_import_mjcf(int argc, char **argv); /* cmd_import_mjcf.c */
int cm__cmd_convert(int argc, char **argv);
int cm__cmd_compare(int argc, char **argv);
int cm__cmd_verify(int argc, char **argv);
int cm__cmd_serve(int argc, char **argv);
int cm__cmd_options(int argc, char **argv);

/* `analyze --vectors FILE` (cmd_analyze_vectors.c): the mode shapes as
 * JSON; CM_OK, CM_IO or CM_NOMEM. */
struct cm_report;
struct cm_vectors;
struct cm_system;
struct cm_scene;
int cm__write_vectors_json(const char *path, const struct cm_report *rep,
                           const struct cm_vectors *v,
                           const struct cm_system *sys,
                           const struct cm_scene *scene);

#endif
