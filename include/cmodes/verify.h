/* cmodes/verify.h: reserved for the verification module (src/verify/). */
#ifndef CMODES_VERIFY_H
#define CMODES_VERIFY_H
#endif
