/* cmodes/import.h: importers (LAMMPS/LIGGGHTS dumps, Matrix Market).
 * Included by cmodes.h; do not include directly. Owned by src/io/. */
#ifndef CMODES_IMPORT_H
#define CMODES_IMPORT_H

/* Reads M (n x n SPD), J (nc x n) and k (nc x 1 or 1 x nc) from Matrix
 * Market files with CHOLMOD's reader and builds a general system.
 * Errors name the file and line. */
CM_EXTERN int cm_system_read_matrices(cm_context_t *ctx, const char *m_path,
                                      const char *j_path, const char *k_path,
                                      cm_system_t **out);

#endif
