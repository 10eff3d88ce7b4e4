/* operator_cholmod.h: CHOLMOD views shared by the operator's files
 * (operator.c factors M, definite.c checks sigma M - J^T K J). */
#ifndef CM_OPERATOR_CHOLMOD_H
#define CM_OPERATOR_CHOLMOD_H

#include <cholmod.h>

#include "internal.h"

/* A view (no copy) of sys's M, lower triangle CSC, for CHOLMOD. */
cholmod_sparse cm__op_M_view(const cm_system_t *s);

#endif
