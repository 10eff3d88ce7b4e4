/* cmodes/server.h: reserved for the server module (src/server/). */
#ifndef CMODES_SERVER_H
#define CMODES_SERVER_H
#endif
