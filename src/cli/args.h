/* args.h: option-value parsing shared by the subcommands: a value that is
 * not what the option wants is reported with the command and option. */
#ifndef CM_CLI_ARGS_H
#define CM_CLI_ARGS_H

/* Returns 1 and sets *v, or prints "cmodes CMD: OPT: 'S' is not ..." and
 * returns 0. */
int cm__arg_int(const char *cmd, const char *opt, const char *s, int *v);
int cm__arg_num(const char *cmd, const char *opt, const char *s, double *v);

#endif
