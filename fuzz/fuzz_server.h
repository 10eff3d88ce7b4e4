/* fuzz_server.h: the small server both server harnesses fuzz (the router
 * in process and the --stdio loop): limits low enough that every input
 * answers in milliseconds. */
#ifndef CMODES_FUZZ_SERVER_H
#define CMODES_FUZZ_SERVER_H

#include "server.h"

#include <stdlib.h>

/* Starts *srv with the harnesses' limits; stdio: the --stdio transport.
 * Aborts when the server cannot start (nothing to fuzz). */
static inline void cm__fuzz_server_init(cm__server_t *srv, int stdio) {
  cm__server_config_t cfg;
  cm__server_config_init(&cfg);
  cfg.max_body_bytes = 1 << 16;
  cfg.max_contacts = 2000;
  cfg.max_bodies = 2000;
  cfg.max_sessions = 8;
  cfg.max_solve_s = 1;
  cfg.max_dense = 200;
  cfg.max_parse_bytes = (size_t)16 << 20;
  cfg.stdio = stdio;
  cfg.quiet = 1;
  if (cm__server_init(srv, &cfg))
    abort();
}

#endif
