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

#endif
